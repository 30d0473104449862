/**
 * CORS as browsers need it. App Services routes honour the app's `allowedRequestOrigins` (App
 * Services' allowed_request_origins; any origin when empty); routes without an app id in the path
 * find the app from the bearer token. EmailJS answers any origin. The control API has no CORS.
 */
import cors from "@fastify/cors";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { appOfToken } from "../app-services/auth-context.ts";
import type { AppRuntime } from "../runtime/app-runtime.ts";
import { appServicesPrefix, areaOfUrl } from "./areas.ts";

const appIdInPath = new RegExp(`^${appServicesPrefix.replace(/\./g, "\\.")}/app/([^/?]+)`);

async function appForCors(request: FastifyRequest): Promise<AppRuntime | undefined> {
  const { emulator } = request.server;
  const match = appIdInPath.exec(request.url);
  if (match?.[1]) return emulator.apps.get(decodeURIComponent(match[1]));
  const bearer = /^Bearer\s+(\S+)/i.exec(request.headers.authorization ?? "")?.[1];
  return bearer ? appOfToken(emulator, bearer) : undefined;
}

export async function registerCors(app: FastifyInstance): Promise<void> {
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
          callback(null, { origin: ok, methods: ["GET", "POST", "PUT", "DELETE", "OPTIONS"], maxAge: 600 });
        });
    },
  });
}
