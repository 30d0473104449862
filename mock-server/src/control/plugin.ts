/**
 * The control API under `/_mock/v1`. Open on loopback; with a control token configured (required
 * when listening on another address) every call must carry it. Calls from a browser page of
 * another origin are refused, so a web page cannot reset or read the emulator behind your back.
 */
import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { controlErrors } from "../errors/catalogue.ts";
import { publicOrigin } from "../http/areas.ts";
import { registerDocumentedRoutes } from "../openapi/register-routes.ts";
import { routes } from "./routes.ts";

function tokenMatches(request: FastifyRequest, expected: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "");
  if (!match?.[1]) return false;
  const given = Buffer.from(match[1]);
  const wanted = Buffer.from(expected);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

export async function controlPlugin(app: FastifyInstance): Promise<void> {
  const { options } = app.emulator;

  app.addHook("onRequest", async (request) => {
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== publicOrigin(request)) throw controlErrors.forbiddenOrigin(origin);
    if (options.controlToken !== null && !tokenMatches(request, options.controlToken))
      throw controlErrors.unauthorized();
  });

  registerDocumentedRoutes(app, routes, "control");
}
