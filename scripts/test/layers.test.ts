/**
 * The import rules of biome.json (docs/decisions/0001: imports go one way) still catch what they
 * are for. `npm test`'s lint step checks the repository against them; this file checks them
 * against files that break them, so a rule that stops matching (a moved folder, a changed glob, a
 * Biome upgrade that reads patterns differently) fails here instead of passing everything.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Files of a throwaway project under the repository's Biome configuration. */
const files: Record<string, string> = {
  // The plumbing takes what it needs as parameters: importing a product area is refused, types too.
  "mock-server/src/http/knows-auth.ts": `import type { AuthMode } from "../app-services/auth-context.ts";\nexport type Mode = AuthMode;\n`,
  "mock-server/src/openapi/knows-mail.ts": `import { send } from "../emailjs/send-email.ts";\nexport const s = send;\n`,
  "mock-server/src/http/loads-control.ts": `export const c = () => import("../control/plugin.ts");\n`,
  // So do the layers under the areas (config, errors, state, store, data, runtime, functions).
  "mock-server/src/store/knows-inspector.ts": `import { ui } from "../inspector/plugin.ts";\nexport const u = ui;\n`,
  "mock-server/src/runtime/knows-auth.ts": `import { login } from "../app-services/auth/login.ts";\nexport const l = login;\n`,
  // An area may use the plumbing and the layers under it.
  "mock-server/src/app-services/uses-plumbing.ts": `import { cors } from "../http/cors.ts";\nimport { store } from "../store/store.ts";\nexport const both = [cors, store];\n`,
  "mock-server/src/http/cors.ts": "export const cors = 1;\n",
  "mock-server/src/store/store.ts": "export const store = 1;\n",
  // No cycle anywhere, a type-only import included.
  "web/src/lib/ping.ts": `import type { Pong } from "./pong.ts";\nexport type Ping = { next?: Pong };\n`,
  "web/src/lib/pong.ts": `import type { Ping } from "./ping.ts";\nexport type Pong = { next?: Ping };\n`,
};

let dir: string;
let diagnostics: { category: string; path: string }[];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "layers-"));
  writeFileSync(
    join(dir, "biome.json"),
    JSON.stringify({ root: true, extends: [join(root, "biome.json")], vcs: { enabled: false } }),
  );
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  const run = spawnSync(join(root, "node_modules", ".bin", "biome"), ["lint", "--reporter=json", "."], {
    cwd: dir,
    encoding: "utf8",
  });
  const report = JSON.parse(run.stdout) as {
    diagnostics: { category: string; location: { path: string | { file: string } } }[];
  };
  diagnostics = report.diagnostics.map(({ category, location }) => ({
    category,
    path: typeof location.path === "string" ? location.path : location.path.file,
  }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const flagged = (rule: string) =>
  diagnostics
    .filter((d) => d.category.endsWith(`/${rule}`))
    .map((d) => d.path)
    .sort();

describe("biome.json's import rules", () => {
  it("refuse a product area in the plumbing and the layers under the areas, type-only and dynamic imports too", () => {
    expect(flagged("noRestrictedImports")).toEqual([
      "mock-server/src/http/knows-auth.ts",
      "mock-server/src/http/loads-control.ts",
      "mock-server/src/openapi/knows-mail.ts",
      "mock-server/src/runtime/knows-auth.ts",
      "mock-server/src/store/knows-inspector.ts",
    ]);
  });

  it("refuse an import cycle, made of type-only imports included", () => {
    expect(flagged("noImportCycles")).toEqual(["web/src/lib/ping.ts", "web/src/lib/pong.ts"]);
  });
});
