/**
 * Builds the emulator's HTTP server (tests `inject()` into it; `server.ts` listens): one Fastify
 * instance serving App Services, EmailJS, the control API and the inspector. Plugins in layers:
 * parsing and validation, CORS, then the route plugins, explicitly listed.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import Fastify, { type FastifyInstance, type FastifyRequest, type RouteOptions } from "fastify";
import { allowedRequestOrigins, credentialedLogin } from "./app-services/allowed-origins.ts";
import { appServicesPlugin } from "./app-services/plugin.ts";
import { controlApiServed, defaultOptions, type EmulatorOptions, metricsKept } from "./config/options.ts";
import { controlPlugin } from "./control/plugin.ts";
import { emailJsPlugin } from "./emailjs/plugin.ts";
import { clientErrorHandler } from "./http/client-errors.ts";
import { capConnectionsPerAddress } from "./http/connection-cap.ts";
import { ConnectionDrain } from "./http/connection-drain.ts";
import { registerCors } from "./http/cors.ts";
import { notFound, sendError } from "./http/error-handler.ts";
import { registerHostCheck } from "./http/host-check.ts";
import { registerJsonParser } from "./http/json-body.ts";
import { redactingHooks } from "./http/log-redaction.ts";
import { requestIdGenerator } from "./http/request-id.ts";
import { requestLinesAt } from "./http/request-lines.ts";
import { registerRequestMetrics } from "./http/request-metrics.ts";
import { routing } from "./http/request-targets.ts";
import { trustedPeer } from "./http/trusted-peer.ts";
import { UnsentReplies } from "./http/unsent-replies.ts";
import { warnOfUntrustedProxies } from "./http/untrusted-proxy.ts";
import { registerValidation } from "./http/validation.ts";
import { emulatorIdpHost } from "./idp/host.ts";
import { identityProviderPlugin } from "./idp/plugin.ts";
import { inspectorPlugin } from "./inspector/plugin.ts";
import { Emulator } from "./runtime/emulator.ts";
import { maxRequestBodyBytes, maxRequestHeaderBytes } from "./runtime/large-requests.ts";
import { emulatorMetrics, metricPrefix } from "./runtime/metrics.ts";
import { redactUrl } from "./state/journal.ts";

/** The hosted service accepts requests up to 18 MB. */
export const bodyLimit = maxRequestBodyBytes;

export interface BuildOptions extends Partial<EmulatorOptions> {
  /** Where log lines go (default stdout); tests read them. */
  logStream?: NodeJS.WritableStream;
  /** Serve HTTPS with this certificate and key (PEM contents). */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /**
   * Serve on this server (already listening, server.ts) instead of one of Fastify's own: its
   * request listener is handed to `onHandler`, for the caller to put in place once the app is ready.
   */
  server?: {
    server: Server;
    onHandler: (handler: (request: IncomingMessage, response: ServerResponse) => void) => void;
  };
  /** Reuse an emulator (state) instead of making a new one. */
  emulator?: Emulator;
  /** Sees every route as it is registered (the route table, e.g. for the contract test). */
  onRoute?: (route: RouteOptions) => void;
}

/** Fastify takes a hop count as a function of the hop (its types lack the number form). */
function trustProxyOption(value: EmulatorOptions["trustProxy"]) {
  return typeof value === "number" ? (_address: string, hop: number) => hop < value : value;
}

export async function buildApp(options: BuildOptions = {}): Promise<FastifyInstance> {
  const { emulator: given, onRoute, tls, server, logStream, ...overrides } = options;
  const emulator = given ?? (await Emulator.open({ ...defaultOptions(), ...overrides }));
  const app = Fastify({
    logger:
      emulator.options.logLevel === "silent"
        ? false
        : {
            level: emulator.options.logLevel,
            ...(logStream ? { stream: logStream } : {}),
            // Request logs never carry a token: `baas_at` (stream access tokens) and other secrets in
            // the query are redacted, and headers are not logged. Should anything else log a request
            // body or headers (an error's context), their secrets are censored too (http/log-redaction.ts).
            hooks: redactingHooks,
            serializers: {
              req: (request: FastifyRequest) => ({
                method: request.method,
                url: redactUrl(request.originalUrl),
                host: request.host,
                remoteAddress: request.ip,
              }),
            },
          },
    bodyLimit,
    // A request arrives whole within Node's five minutes, on a server Fastify makes as on those
    // `startServer` makes (Fastify's default is no limit). Bodies of 16 KiB or more are also cut
    // after 10 s without a byte (runtime/large-requests.ts).
    requestTimeout: 300_000,
    // On close, idle keep-alive connections go at once, but for a draining server's (server.ts,
    // http/connection-drain.ts); requests in flight may finish.
    forceCloseConnections: "idle",
    // A request the parser cannot read is answered with `Connection: close` (http/client-errors.ts).
    clientErrorHandler,
    trustProxy: trustProxyOption(emulator.options.trustProxy),
    return503OnClosing: false,
    // HTTPS through a server factory, so the instance keeps one (HTTP/1.1) type either way.
    ...(server
      ? {
          serverFactory: (handler: Parameters<typeof createHttpsServer>[1]) => {
            server.onHandler(handler as (request: IncomingMessage, response: ServerResponse) => void);
            return server.server;
          },
        }
      : tls
        ? {
            serverFactory: (handler: Parameters<typeof createHttpsServer>[1]) =>
              createHttpsServer(
                { cert: tls.cert, key: tls.key, maxHeaderSize: maxRequestHeaderBytes },
                handler,
              ) as unknown as Server,
          }
        : { http: { maxHeaderSize: maxRequestHeaderBytes } }),
    genReqId: requestIdGenerator(emulator.options.trustProxy),
    logController: requestLinesAt(emulator.options.logLevel),
    // Malformed percent-encoding and long path parameters are routed as any path (http/request-targets.ts).
    ...routing,
  });
  if (onRoute) app.addHook("onRoute", onRoute);
  app.decorate("emulator", emulator);
  // Metrics cost every request a little: kept only where something can read them.
  const metrics = metricsKept(emulator.options) ? emulatorMetrics(emulator) : null;
  app.decorate("metrics", metrics);
  if (metrics) registerRequestMetrics(app, metrics, metricPrefix);
  app.decorateRequest("appRuntime", null);
  app.decorateRequest("caller", null);
  app.decorateRequest("faulted", false);
  app.decorateRequest("leaveInFlight", null);
  app.decorateRequest("sentPayload", null);
  app.decorate("connections", new ConnectionDrain(app, trustedPeer(emulator.options.trustProxy)));
  capConnectionsPerAddress(app.server, {
    max: emulator.budgets.connections,
    exempt: trustedPeer(emulator.options.trustProxy),
    onRefused: () => {
      emulator.refusedConnections.overCap += 1;
    },
  });
  registerHostCheck(app);
  warnOfUntrustedProxies(app, trustedPeer(emulator.options.trustProxy));
  registerJsonParser(app);
  registerValidation(app);
  emulator.apps.log = app.log;
  for (const folder of emulator.notRun)
    app.log.warn(folder, "parts of the exported app are not run by this server (docs/production.md#not-provided)");
  app.setErrorHandler((error, request, reply) => sendError(request, reply, error));
  app.setNotFoundHandler((request, reply) => notFound(request, reply));
  // realm-core needs exactly `application/json` (no charset) to read a JSON reply; the reply says
  // its request's id (http/request-id.ts; event streams add it themselves); and the reply as sent
  // is kept on its request for the journals (onResponse no longer sees it). One hook for all
  // three, and a callback one: each costs every request, an async one a promise and a turn more.
  app.addHook("onSend", (request, reply, payload, done) => {
    reply.header("x-request-id", request.id);
    const type = reply.getHeader("content-type");
    if (typeof type === "string" && type.startsWith("application/json") && type !== "application/json") {
      reply.header("content-type", "application/json");
    }
    request.sentPayload = payload;
    if (UnsentReplies.large(payload)) emulator.unsentReplies.watch(reply.raw);
    done(null, payload);
  });
  // Shutting down: change streams end first (they would hold the drain open for ever), then the
  // requests in flight finish (server.ts bounds how long), then the emulator stops.
  app.addHook("preClose", async () => {
    for (const runtime of emulator.apps.loaded()) runtime.closeStreams("the server is shutting down", "service");
    emulator.store.mail.releaseWaits();
    emulator.events.shutdown();
  });
  app.addHook("onClose", async () => emulator.close());
  app.decorate("idpHost", emulatorIdpHost(emulator));
  await registerCors(app, allowedRequestOrigins(emulator), credentialedLogin);
  // A request no route takes is answered before its body is read (its CORS headers set: after
  // them), and its connection closed: the body would take no place of the budgets the routes'
  // bodies take, and no cut of a stalled one (sixty 17 MB bodies to a path that did not exist
  // held a gigabyte, for minutes).
  app.addHook("onRequest", (request, reply, done) => {
    if (!request.is404 || emulator.largeRequests.declaredSize(request.headers) === 0) return done();
    reply.header("connection", "close");
    notFound(request, reply);
  });
  await app.register(appServicesPlugin);
  // The fake identity provider (Google, Apple, Facebook) is the harness's: none in production.
  if (emulator.fakeIdentityProvider)
    await app.register(identityProviderPlugin, { provider: emulator.fakeIdentityProvider });
  const settings = emulator.options;
  if (settings.emailjs) await app.register(emailJsPlugin);
  // In production the control API (but its health check) and the inspector exist only behind a control token.
  await app.register(controlPlugin);
  if (controlApiServed(settings)) await app.register(inspectorPlugin);
  return app;
}
