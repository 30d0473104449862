/**
 * CORS as browsers need it. App Services routes allow the origins their app allows (any origin
 * when the list is empty); which those are is the caller's to say (`AllowedOrigins`, wired in
 * app.ts). EmailJS answers any origin. The control API has no CORS.
 */
import cors from "@fastify/cors";
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from "fastify";
import { areaOfUrl } from "./areas.ts";

/**
 * The origins a browser may call this App Services request from (empty: any). Asked only for a
 * request with an `Origin` header; it must not reject (an app it cannot find allows what it says).
 */
export type AllowedOrigins = (request: FastifyRequest) => Promise<readonly string[]>;

/**
 * Whether this App Services request may be sent with credentials, and if so which reply headers
 * the page may read (undefined: no credentials). The caller's to say, like the origins.
 */
export type Credentialed = (request: FastifyRequest) => readonly string[] | undefined;

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

export async function registerCors(
  app: FastifyInstance,
  allowedOrigins: AllowedOrigins,
  credentialed?: Credentialed,
): Promise<void> {
  // The plugin adds its hook to this instance (it is wrapped with fastify-plugin) while it registers.
  const addHook = app.addHook;
  let wrapped = 0;
  app.addHook = function (this: FastifyInstance, name: string, hook: unknown) {
    if (name === "onRequest") wrapped++;
    const added = name === "onRequest" ? skipWithoutOrigin(hook as onRequestHookHandler) : hook;
    return (addHook as (name: string, hook: unknown) => FastifyInstance).call(this, name, added);
  } as FastifyInstance["addHook"];
  try {
    await registerPlugin(app, allowedOrigins, credentialed);
  } finally {
    app.addHook = addHook;
  }
  // A later version of the plugin that adds its hook otherwise would leave every request paying again.
  if (wrapped !== 1) throw new Error(`@fastify/cors added ${wrapped} onRequest hooks (expected 1): see http/cors.ts`);
}

async function registerPlugin(
  app: FastifyInstance,
  allowedOrigins: AllowedOrigins,
  credentialed: Credentialed | undefined,
): Promise<void> {
  await app.register(cors, {
    hook: "onRequest",
    delegator: (request, callback) => {
      const area = areaOfUrl(request.url);
      if (area === "emailjs") return callback(null, { origin: "*", methods: ["POST"], maxAge: 86_400 });
      // No Origin header: not a browser's cross-origin request, nothing to add (the hot path of SDKs in Node).
      if (area !== "app-services" || request.headers.origin === undefined) return callback(null, { origin: false });
      const origin = request.headers.origin;
      allowedOrigins(request).then(
        (allowed) => {
          const ok = allowed.length === 0 || allowed.includes(origin);
          const exposed = credentialed?.(request);
          callback(null, {
            origin: ok,
            methods: ["GET", "POST", "PUT", "DELETE", "OPTIONS"],
            maxAge: 600,
            ...(exposed ? { credentials: true, exposedHeaders: [...exposed] } : {}),
          });
        },
        (error: Error) => callback(error),
      );
    },
  });
}
