/**
 * Listening and shutting down, nothing else: builds the app, listens, prints where, and closes
 * cleanly (state saved when a data directory is set) on SIGINT or SIGTERM.
 */
import { readFileSync } from "node:fs";
import { createSecureContext } from "node:tls";
import type { FastifyInstance } from "fastify";
import { buildApp } from "./app.ts";
import { applyConfigFile, configBaseDir, readConfigFile } from "./config/config-file.ts";
import { defaultOptions, type EmulatorOptions, isLoopback } from "./config/options.ts";
import { Emulator } from "./runtime/emulator.ts";
import { StatePersistence } from "./runtime/persistence.ts";

export interface RunningServer {
  app: FastifyInstance;
  emulator: Emulator;
  /** The base URL, e.g. `http://127.0.0.1:4000`. */
  url: string;
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

export async function startServer(overrides: Partial<EmulatorOptions> = {}): Promise<RunningServer> {
  const options: EmulatorOptions = { ...defaultOptions(), ...overrides };
  // (In production the control API is off without a token, so nothing needs guarding.)
  if (!isLoopback(options.host) && options.controlToken === null && !options.production) {
    throw new Error(
      `Refusing to listen on ${options.host} without a control token: the control API can read and change everything. ` +
        "Set --control-token (or MOCK_CONTROL_TOKEN), or listen on 127.0.0.1.",
    );
  }
  const tls = readTls(options);
  const emulator = await Emulator.open(options);
  const persistence = options.dataDir ? new StatePersistence(emulator, options.dataDir) : null;
  // Kept state replaces the whole state, the apps' settings included: the settings this start is
  // given (the default app with --web-url, --app folders, then --config) are applied over it again,
  // as they are over a database's.
  if (await persistence?.load()) await emulator.addDefaults();
  if (options.configFile)
    await applyConfigFile(emulator, readConfigFile(options.configFile), configBaseDir(options.configFile));
  // Mail still queued when the last run stopped goes out now.
  emulator.smtp?.kick();
  const app = await buildApp({ emulator, ...(tls ? { tls } : {}) });
  await app.listen({ host: options.host, port: options.port });
  const address = app.server.address();
  const port = address !== null && typeof address === "object" ? address.port : options.port;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  persistence?.start(options.saveIntervalMs);
  let closing: Promise<void> | null = null;
  return {
    app,
    emulator,
    url: `${tls ? "https" : "http"}://${host}:${port}`,
    close() {
      closing ??= (async () => {
        // Requests in flight get `drainMs` to finish; then their connections are cut.
        const force = setTimeout(() => app.server.closeAllConnections(), options.drainMs);
        force.unref();
        // A keep-alive connection whose last request finished during the drain would otherwise
        // linger for Node's keep-alive timeout (5 s): close each one as soon as it is idle.
        // (Connections that never carried a request go at once: http/unused-connections.ts.)
        const sweep = setInterval(() => app.server.closeIdleConnections(), 25);
        sweep.unref();
        await app.close();
        clearTimeout(force);
        clearInterval(sweep);
        await persistence?.stop();
      })();
      return closing;
    },
  };
}
