/**
 * The control API under `/_mock/v1`. Open on loopback; with a control token configured (required
 * when listening on another address) every call must carry it. Calls from a browser page of
 * another origin are refused (but the probes), so a web page cannot reset or read the emulator
 * behind your back.
 * In production mode it exists only with a control token (but for the health and readiness checks
 * and the metrics), and refuses the testing features.
 */
import type { FastifyInstance } from "fastify";
import { controlApiServed } from "../config/options.ts";
import { controlErrors } from "../errors/catalogue.ts";
import { publicOrigin } from "../http/areas.ts";
import { bearerMatches } from "../http/bearer.ts";
import { registerDocumentedRoutes } from "../openapi/register-routes.ts";
import { routes } from "./routes.ts";

/**
 * Routes with access rules of their own, served in every mode: the probes are open to anyone (a
 * load balancer or a container's healthcheck has no token, and they tell nothing); the metrics
 * are behind the metrics token (control/get-metrics.ts).
 */
const ownRules = new Set<string>(["getHealth", "getReadiness", "getMetrics"]);

/** What production mode refuses: making an app fail or jump in time is for tests. */
const testingOnly: Record<string, string> = {
  addFault: "adding a fault",
  addEmailJsFault: "adding a fault",
  advanceClock: "moving the clock",
  advanceEmailJsClock: "moving the clock",
};

export async function controlPlugin(app: FastifyInstance): Promise<void> {
  const { options } = app.emulator;
  // Production without a control token: the probes and the metrics only.
  if (!controlApiServed(options)) {
    registerDocumentedRoutes(
      app,
      routes.filter((route) => ownRules.has(route.operationId)),
      "control",
    );
    return;
  }

  app.addHook("onRequest", async (request) => {
    const operationId = request.routeOptions.config.operationId;
    if (ownRules.has(operationId ?? "")) return;
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== publicOrigin(request)) throw controlErrors.forbiddenOrigin(origin);
    if (options.controlToken !== null && !bearerMatches(request, options.controlToken))
      throw controlErrors.unauthorized();
    const testing = testingOnly[operationId ?? ""];
    if (options.production && testing) throw controlErrors.notInProduction(testing);
  });

  registerDocumentedRoutes(app, routes, "control");
}
