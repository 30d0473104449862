/**
 * Serves the inspector UI (built by `scripts/build.mjs` into `dist/inspector/`) at `/_mock/`, on the
 * emulator's own origin so it can use the control API. Nothing is built at start-up: when the assets
 * are missing, `/_mock/` answers a 503 that says how to build them.
 *
 * The UI is a handful of flat files, so they are served from an allow-list of the directory's own
 * file names (no path ever reaches the file system from the URL) instead of loading a static-file
 * plugin at start-up, which cost the emulator a noticeable part of its start time.
 */
import { existsSync, readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance, FastifyReply } from "fastify";

const here = dirname(fileURLToPath(import.meta.url));
// From src/inspector (running the sources): ../../dist/inspector; from the bundle dist/cli.js: ./inspector.
const candidates = [join(here, "..", "..", "dist", "inspector"), join(here, "inspector")];

/** Where the built inspector is, or null when it has not been built. */
export function inspectorDir(): string | null {
  return candidates.find((dir) => existsSync(join(dir, "index.html"))) ?? null;
}

export const notBuiltMessage =
  "The inspector UI is not built. Run `npm run build -w mock-server` (or `node mock-server/scripts/build.mjs`), then reload this page.\n";

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
  ".svg": "image/svg+xml",
};

// Same-origin only; scripts only from the emulator. Mail HTML renders in a sandboxed srcdoc iframe,
// which inherits this policy and adds its own (ui/mail-frame.ts): no script ever runs there, and
// remote images load only for a message whose images a person chose to load. `img-src *` is here
// only so that choice can work (a srcdoc frame can narrow its parent's policy, never widen it);
// the inspector itself shows no image from elsewhere.
const contentSecurityPolicy =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src * data:; connect-src 'self'; frame-ancestors 'none'; form-action 'none'";

async function serve(reply: FastifyReply, dir: string | null, name: string): Promise<FastifyReply> {
  if (!dir) {
    return reply.code(503).type("text/plain; charset=utf-8").header("cache-control", "no-store").send(notBuiltMessage);
  }
  const type = contentTypes[extname(name)];
  // Only a file the build wrote, by its exact name: the URL never becomes a path.
  if (!type || !readdirSync(dir).includes(name)) {
    reply.callNotFound();
    return reply;
  }
  const content = await readFile(join(dir, name));
  reply.header("cache-control", "no-cache").header("x-content-type-options", "nosniff");
  if (name.endsWith(".html")) reply.header("content-security-policy", contentSecurityPolicy);
  return reply.type(type).send(content);
}

export interface InspectorOptions {
  /** Where the built UI is (looked up per request, so a build after start is picked up). */
  findDir?: () => string | null;
}

export async function inspectorPlugin(app: FastifyInstance, options: InspectorOptions = {}): Promise<void> {
  const findDir = options.findDir ?? inspectorDir;
  app.get("/_mock", async (_request, reply) => reply.redirect("/_mock/", 301));
  app.get("/_mock/", async (_request, reply) => serve(reply, findDir(), "index.html"));
  app.get("/_mock/*", async (request, reply) => {
    const name = (request.params as { "*": string })["*"];
    // An unknown control route is the control API's documented 404, not a missing asset.
    if (name === "v1" || name.startsWith("v1/")) {
      reply.callNotFound();
      return reply;
    }
    return serve(reply, findDir(), name);
  });
}
