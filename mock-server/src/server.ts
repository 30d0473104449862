/**
 * Listening and shutting down, nothing else: listens, builds the app, hands the server over to it
 * once ready, and closes cleanly (state saved when a data directory is set) on SIGINT or SIGTERM.
 */
import { readFileSync } from "node:fs";
import { createServer as createHttpServer, type RequestListener, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createSecureContext } from "node:tls";
import type { FastifyInstance } from "fastify";
import { buildApp } from "./app.ts";
import { applyConfigFile, configBaseDir, readConfigFile } from "./config/config-file.ts";
import { defaultOptions, type EmulatorOptions, isLoopback } from "./config/options.ts";
import { healthOf } from "./control/get-health.ts";
import { listenForMetrics, type MetricsListener } from "./http/metrics-listener.ts";
import { whileStarting } from "./http/while-starting.ts";
import { Emulator } from "./runtime/emulator.ts";
import { maxRequestHeaderBytes } from "./runtime/large-requests.ts";
import { StatePersistence } from "./runtime/persistence.ts";

export interface RunningServer {
  app: FastifyInstance;
  emulator: Emulator;
  /** The base URL, e.g. `http://127.0.0.1:4000`. */
  url: string;
  /** Where the metrics are served without a token (`--metrics-address`), else null. */
  metricsUrl: string | null;
  close(): Promise<void>;
}

/** The certificate and key, read and checked before anything starts (a clear one-line reason otherwise). */
function readTls(options: EmulatorOptions): { cert: Buffer; key: Buffer } | null {
  if (options.tlsCert === null && options.tlsKey === null) return null;
  if (options.tlsCert === null || options.tlsKey === null)
    throw new Error("--tls-cert and --tls-key go together: give both files, or neither");
  const read = (file: string, what: string) => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new Error(`Cannot read the TLS ${what} ${file}: ${(error as NodeJS.ErrnoException).code ?? error}`);
    }
  };
  const cert = read(options.tlsCert, "certificate");
  const key = read(options.tlsKey, "key");
  try {
    createSecureContext({ cert, key });
  } catch (error) {
    throw new Error(
      `The TLS certificate ${options.tlsCert} and key ${options.tlsKey} do not work: ${(error as Error).message}`,
    );
  }
  return { cert, key };
}

export interface StartHooks {
  /**
   * The server listens at `url`: on a database from before it opens it (meanwhile it answers the
   * health check 200 and the readiness check 503 `starting`), else once it serves.
   */
  onListening?: (url: string) => void;
  /** Where the server's log goes instead of standard output (tests read it). */
  logStream?: NodeJS.WritableStream;
  /** How long requests wait for a starting server, and how many (http/while-starting.ts). */
  startingHold?: { holdMs: number; maxHeld: number };
}

/** How long an idle connection is kept open (see `startServer`). */
const keepAliveMs = 72_000;

/** How long a connection is idle before a draining server closes it (http/connection-drain.ts). */
const drainGraceMs = 500;

/** Listens, or rejects with Node's own error (EACCES…), a port in use with what to do about it. */
function listenOn(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const refused = (error: NodeJS.ErrnoException) =>
      reject(
        error.code === "EADDRINUSE"
          ? new Error(
              `Port ${port} on ${host} is in use: is another emulator (npm run mock, npm start) running? ` +
                "Stop it, or choose another port with --port (env PORT; 0 = any free port)",
              { cause: error },
            )
          : error,
      );
    server.once("error", refused);
    server.listen(port, host, () => {
      server.off("error", refused);
      resolve();
    });
  });
}

/** Stops taking connections; resolves once every connection is gone. */
const closeServer = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

export async function startServer(
  overrides: Partial<EmulatorOptions> = {},
  hooks: StartHooks = {},
): Promise<RunningServer> {
  const options: EmulatorOptions = { ...defaultOptions(), ...overrides };
  // (In production the control API is off without a token, so nothing needs guarding.)
  if (!isLoopback(options.host) && options.controlToken === null && !options.production) {
    throw new Error(
      `Refusing to listen on ${options.host} without a control token: the control API can read and change everything. ` +
        "Set --control-token (or MOCK_CONTROL_TOKEN), or listen on 127.0.0.1.",
    );
  }
  const tls = readTls(options);
  const startedAt = Date.now();
  const server: Server = tls
    ? (createHttpsServer({ cert: tls.cert, key: tls.key, maxHeaderSize: maxRequestHeaderBytes }) as unknown as Server)
    : createHttpServer({ maxHeaderSize: maxRequestHeaderBytes });
  // An idle connection is kept longer than the proxies in front keep theirs (nginx's upstream
  // `keepalive_timeout`, the usual load balancers' idle timeouts: 60 s), so that a proxy never sends
  // a request on a connection the server is closing (a reset, answered 502 to a POST). Node's
  // default is 5 s; this is Fastify's, which its own servers (the tests') have.
  server.keepAliveTimeout = keepAliveMs;
  const listen = async () => {
    await listenOn(server, options.host, options.port);
    const address = server.address();
    const port = address !== null && typeof address === "object" ? address.port : options.port;
    const host = options.host.includes(":") ? `[${options.host}]` : options.host;
    const url = `${tls ? "https" : "http"}://${host}:${port}`;
    hooks.onListening?.(url);
    return url;
  };
  // On a database, listening comes first: while it opens (its migrations may wait for another
  // instance's) the health and readiness checks answer (http/while-starting.ts). In memory or from
  // --data-dir nothing outside the process can hold the start up: the server listens once it
  // serves, so there an answering health check means ready too, as it always has.
  const starting = options.databaseUrl ? whileStarting(() => healthOf(startedAt), hooks.startingHold) : null;
  let url: string | null = null;
  if (starting) {
    server.on("request", starting.listener);
    url = await listen();
  }

  let emulator: Emulator | undefined;
  let app: FastifyInstance | undefined;
  let persistence: StatePersistence | null = null;
  let metricsListener: MetricsListener | null = null;
  try {
    emulator = await Emulator.open(options);
    persistence = options.dataDir ? new StatePersistence(emulator, options.dataDir) : null;
    // Kept state replaces the whole state, the apps' settings included: the settings this start is
    // given (the default app with --web-url, --app folders, then --config) are applied over it again,
    // as they are over a database's.
    if (await persistence?.load()) await emulator.addDefaults();
    if (options.configFile)
      await applyConfigFile(emulator, readConfigFile(options.configFile), configBaseDir(options.configFile));
    // Mail still queued when the last run stopped goes out now.
    emulator.smtp?.kick();
    let handler: RequestListener | undefined;
    app = await buildApp({
      emulator,
      server: { server, onHandler: (given) => (handler = given) },
      ...(hooks.logStream ? { logStream: hooks.logStream } : {}),
    });
    // Fastify closes only servers it listened with itself: closing waits for this one's connections
    // here, once the change streams have ended (preClose hooks run in order; buildApp's first).
    app.addHook("preClose", () => closeServer(server));
    await app.ready();
    // A production server compiles its routes' schemas before it says it is ready (the checks
    // answer 503 meanwhile): the first request of each route would otherwise hold the event loop
    // for the compilation (~20 ms each, 1 s for all of them on a slow machine).
    if (options.production) await app.compileSchemas();
    if (app.metrics && options.metricsAddress)
      metricsListener = await listenForMetrics(app.metrics, options.metricsAddress.host, options.metricsAddress.port);
    if (starting) server.off("request", starting.listener);
    if (handler) {
      server.on("request", handler);
      starting?.serve(handler);
    }
    url ??= await listen();
  } catch (error) {
    starting?.fail();
    server.closeAllConnections();
    await closeServer(server);
    await metricsListener?.close();
    await (app ? app.close() : emulator?.close());
    throw error;
  }
  const running = { app, emulator, url };
  persistence?.start(options.saveIntervalMs);
  let closing: Promise<void> | null = null;
  return {
    ...running,
    metricsUrl: metricsListener?.url ?? null,
    close() {
      closing ??= (async () => {
        // The readiness check says so at once: load balancers send no new traffic here.
        running.emulator.markStopping();
        // Requests in flight get `drainMs` to finish; then their connections are cut.
        const force = setTimeout(() => server.closeAllConnections(), options.drainMs);
        force.unref();
        // Connections close between requests: replies say `Connection: close`, and an idle one
        // goes after a moment of idleness, not at once under a proxy's next request
        // (http/connection-drain.ts).
        const endDrain = running.app.connections.start(Math.min(drainGraceMs, options.drainMs / 4));
        await running.app.close();
        clearTimeout(force);
        endDrain();
        await metricsListener?.close();
        await persistence?.stop();
      })();
      return closing;
    },
  };
}
