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
import { bearerMatches } from "../http/bearer.ts";
import { hostName, hostPolicy } from "../http/host-check.ts";
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
  listIdentityProviderAccounts: "the fake identity provider",
  createIdentityProviderAccount: "the fake identity provider",
  mintIdentityProviderToken: "the fake identity provider",
  addFault: "adding a fault",
  addEmailJsFault: "adding a fault",
  advanceClock: "moving the clock",
  advanceEmailJsClock: "moving the clock",
};

/**
 * Whether a browser page's `Origin` is the emulator's own: the origin the page reached it at (its
 * `Host` passed the allow-list) or the `--public-url` one, compared as origins (`Localhost` and
 * `localhost`, `:443` and none over https, are one).
 */
function ownOrigin(origin: string, reached: string, configured: string | null): boolean {
  const given = originOf(origin);
  return given !== null && (given === originOf(reached) || given === configured);
}

function originOf(text: string): string | null {
  try {
    const origin = new URL(text).origin;
    return origin === "null" ? null : origin;
  } catch {
    return null;
  }
}

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

  const ownHosts = hostPolicy({ ...options, allowedHosts: [] });
  const configuredOrigin = options.publicUrl === null ? null : new URL(options.publicUrl).origin;
  const anyHost = options.allowedHosts.includes("*");
  app.addHook("onRequest", async (request) => {
    const operationId = request.routeOptions.config.operationId;
    if (ownRules.has(operationId ?? "")) return;
    const host = request.headers.host ?? "";
    // Any Host answered: a page on a name resolved to this host is same-origin with itself and
    // sends no Origin on a GET, so only a token, or a name surely the emulator's, lets it in.
    if (anyHost && options.controlToken === null && !ownHosts.allows(host))
      throw controlErrors.anyHostNeedsToken(hostName(host));
    const origin = request.headers.origin;
    if (origin !== undefined && !ownOrigin(origin, `${request.protocol}://${host}`, configuredOrigin))
      throw controlErrors.forbiddenOrigin(origin);
    if (options.controlToken !== null && !bearerMatches(request, options.controlToken))
      throw controlErrors.unauthorized();
    const testing = testingOnly[operationId ?? ""];
    if (options.production && testing) throw controlErrors.notInProduction(testing);
  });

  registerDocumentedRoutes(app, routes, "control");
}
