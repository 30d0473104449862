/**
 * The control API under `/_mock/v1`. Open on loopback; with a control token configured (required
 * when listening on another address) every call must carry it. Calls from a browser page of
 * another origin are refused (but the health check), so a web page cannot reset or read the
 * emulator behind your back.
 * In production mode it exists only with a control token (but for the health check), and refuses
 * the testing features.
 */
import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { controlApiServed } from "../config/options.ts";
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

/** What production mode refuses: making an app fail or jump in time is for tests. */
const testingOnly: Record<string, string> = {
  listIdentityProviderAccounts: "the fake identity provider",
  createIdentityProviderAccount: "the fake identity provider",
  mintIdentityProviderToken: "the fake identity provider",
  addFault: "adding a fault",
  addEmailJsFault: "adding a fault",
  advanceClock: "moving the clock",
  advanceEmailJsClock: "moving the clock",
};

export async function controlPlugin(app: FastifyInstance): Promise<void> {
  const { options } = app.emulator;
  // Production without a control token: the health check only (for load balancers and containers).
  if (!controlApiServed(options)) {
    registerDocumentedRoutes(
      app,
      routes.filter((route) => route.operationId === "getHealth"),
      "control",
    );
    return;
  }

  app.addHook("onRequest", async (request) => {
    const operationId = request.routeOptions.config.operationId;
    // The health check is open, from anywhere: it tells nothing and changes nothing, and a load
    // balancer or a container's healthcheck has no token.
    if (operationId === "getHealth") return;
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== publicOrigin(request)) throw controlErrors.forbiddenOrigin(origin);
    if (options.controlToken !== null && !tokenMatches(request, options.controlToken))
      throw controlErrors.unauthorized();
    const testing = testingOnly[operationId ?? ""];
    if (options.production && testing) throw controlErrors.notInProduction(testing);
  });

  registerDocumentedRoutes(app, routes, "control");
}
