/**
 * CORS as browsers need it. App Services routes honour the app's `allowedRequestOrigins` (App
 * Services' allowed_request_origins; any origin when empty); routes without an app id in the path
 * find the app from the bearer token. EmailJS answers any origin. The control API has no CORS.
 */
import cors from "@fastify/cors";
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from "fastify";
import { appOfToken } from "../app-services/auth-context.ts";
import type { AppRuntime } from "../runtime/app-runtime.ts";
import { appServicesPrefix, areaOfUrl } from "./areas.ts";

const appIdInPath = new RegExp(`^${appServicesPrefix.replace(/\./g, "\\.")}/app/([^/?]+)`);
const loginPath = new RegExp(
  `^${appServicesPrefix.replace(/\./g, "\\.")}/app/[^/?]+/auth/providers/[^/?]+/login(\\?|$)`,
);

async function appForCors(request: FastifyRequest): Promise<AppRuntime | undefined> {
  const { emulator } = request.server;
  const match = appIdInPath.exec(request.url);
  if (match?.[1]) return emulator.apps.get(decodeURIComponent(match[1]));
  const bearer = /^Bearer\s+(\S+)/i.exec(request.headers.authorization ?? "")?.[1];
  return bearer ? appOfToken(emulator, bearer) : undefined;
}

/**
 * Most requests need nothing from CORS: SDKs in Node and server-to-server callers send no `Origin`.
 * In delegator mode the plugin still builds its options object twice for each of them (its own
 * profile's largest function) only to add `Vary: Origin`. Its request hook is therefore wrapped:
 * a request without `Origin` that is not a preflight and not for EmailJS (whose `*` is sent to
 * everyone) gets that header here and skips the plugin; every other request goes through it.
 */
function skipWithoutOrigin(hook: onRequestHookHandler): onRequestHookHandler {
  return function corsUnlessNoOrigin(this: FastifyInstance, request, reply, done) {
    if (request.headers.origin === undefined && request.method !== "OPTIONS" && areaOfUrl(request.url) !== "emailjs") {
      reply.header("vary", "Origin");
      return done();
    }
    return hook.call(this, request, reply, done);
  };
}

export async function registerCors(app: FastifyInstance): Promise<void> {
  // The plugin adds its hook to this instance (it is wrapped with fastify-plugin) while it registers.
  const addHook = app.addHook;
  let wrapped = 0;
  app.addHook = function (this: FastifyInstance, name: string, hook: unknown) {
    if (name === "onRequest") wrapped++;
    const added = name === "onRequest" ? skipWithoutOrigin(hook as onRequestHookHandler) : hook;
    return (addHook as (name: string, hook: unknown) => FastifyInstance).call(this, name, added);
  } as FastifyInstance["addHook"];
  try {
    await registerPlugin(app);
  } finally {
    app.addHook = addHook;
  }
  // A later version of the plugin that adds its hook otherwise would leave every request paying again.
  if (wrapped !== 1) throw new Error(`@fastify/cors added ${wrapped} onRequest hooks (expected 1): see http/cors.ts`);
}

async function registerPlugin(app: FastifyInstance): Promise<void> {
  await app.register(cors, {
    hook: "onRequest",
    delegator: (request, callback) => {
      const area = areaOfUrl(request.url);
      if (area === "emailjs") return callback(null, { origin: "*", methods: ["POST"], maxAge: 86_400 });
      // No Origin header: not a browser's cross-origin request, nothing to add (the hot path of SDKs in Node).
      if (area !== "app-services" || request.headers.origin === undefined) return callback(null, { origin: false });
      const origin = request.headers.origin;
      // An app the store cannot be asked about now (an outage) is treated as unknown: the request
      // itself then answers the outage.
      appForCors(request)
        .catch(() => undefined)
        .then((found) => {
          const allowed = found?.config.allowedRequestOrigins ?? [];
          const ok = allowed.length === 0 || allowed.includes(origin);
          callback(null, {
            origin: ok,
            methods: ["GET", "POST", "PUT", "DELETE", "OPTIONS"],
            maxAge: 600,
            // realm-web links an OAuth 2.0 identity with `fetch(…/login?link=true, {credentials: "include"})`
            // and reads the provider's URL from X-BAAS-Location. No cookie ever authenticates here.
            ...(loginPath.test(request.url) ? { credentials: true, exposedHeaders: ["X-BAAS-Location"] } : {}),
          });
        });
    },
  });
}
