/**
 * CORS as browsers need it. App Services routes honour the app's `allowedRequestOrigins` (App
 * Services' allowed_request_origins; any origin when empty); routes without an app id in the path
 * find the app from the bearer token. EmailJS answers any origin. The control API has no CORS.
 *
 * The same headers @fastify/cors wrote with a per-request delegator (and the test in
 * test/http/cors.test.ts pins them), from one synchronous hook: the plugin rebuilt its options
 * object twice on every request, ~6 µs of a ~34 µs profile request (docs/benchmarks.md).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { appOfToken } from "../app-services/auth-context.ts";
import type { AppRuntime } from "../state/app-runtime.ts";
import { appServicesPrefix, areaOfUrl } from "./areas.ts";

const appIdInPath = new RegExp(`^${appServicesPrefix.replace(/\./g, "\\.")}/app/([^/?]+)`);

function appForCors(request: FastifyRequest): AppRuntime | undefined {
  const { emulator } = request.server;
  const match = appIdInPath.exec(request.url);
  if (match?.[1]) return emulator.apps.get(decodeURIComponent(match[1]));
  const bearer = /^Bearer\s+(\S+)/i.exec(request.headers.authorization ?? "")?.[1];
  return bearer ? appOfToken(emulator, bearer) : undefined;
}

interface CorsPolicy {
  /** The Access-Control-Allow-Origin value (CORS is off for a request without a policy). */
  allowOrigin: string;
  methods: string;
  maxAge: string;
}

const emailJsPolicy: CorsPolicy = { allowOrigin: "*", methods: "POST", maxAge: "86400" };
const appServicesMethods = "GET, POST, PUT, DELETE, OPTIONS";

function policyFor(request: FastifyRequest): CorsPolicy | null {
  const area = areaOfUrl(request.url);
  if (area === "emailjs") return emailJsPolicy;
  const origin = request.headers.origin;
  // No Origin header: not a browser's cross-origin request, nothing to add (the hot path of SDKs in Node).
  if (area !== "app-services" || origin === undefined) return null;
  const allowed = appForCors(request)?.config.allowedRequestOrigins ?? [];
  if (allowed.length > 0 && !allowed.includes(origin)) return null;
  return { allowOrigin: origin, methods: appServicesMethods, maxAge: "600" };
}

/** Answers a preflight in the hook (before authentication, which a preflight never carries). */
function answerPreflight(request: FastifyRequest, reply: FastifyReply, policy: CorsPolicy): void {
  if (request.headers.origin === undefined || request.headers["access-control-request-method"] === undefined) {
    reply.code(400).type("text/plain").send("Invalid Preflight Request");
    return;
  }
  reply.header("access-control-allow-methods", policy.methods);
  reply.header("vary", "Origin, Access-Control-Request-Headers");
  const asked = request.headers["access-control-request-headers"];
  if (asked !== undefined) reply.header("access-control-allow-headers", asked);
  reply.header("access-control-max-age", policy.maxAge);
  reply.code(204).header("content-length", "0").send();
}

export async function registerCors(app: FastifyInstance): Promise<void> {
  app.addHook("onRequest", (request, reply, done) => {
    // Every answer depends on the Origin header (caches must key on it).
    reply.header("vary", "Origin");
    const policy = policyFor(request);
    if (policy) reply.header("access-control-allow-origin", policy.allowOrigin);
    if (policy && request.method === "OPTIONS") {
      answerPreflight(request, reply, policy);
      return;
    }
    done();
  });
  // Lets the router accept preflights; one the hook did not answer has CORS off: a loud 404.
  app.options("*", (_request, reply) => reply.callNotFound());
}
