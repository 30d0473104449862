/**
 * Listening and shutting down, nothing else: builds the app, listens, prints where, and closes
 * cleanly (state saved when a data directory is set) on SIGINT or SIGTERM.
 */
import type { FastifyInstance } from "fastify";
import { buildApp } from "./app.ts";
import { applyConfigFile, configBaseDir, readConfigFile } from "./config/config-file.ts";
import { defaultOptions, type EmulatorOptions, isLoopback } from "./config/options.ts";
import { Emulator } from "./state/emulator.ts";
import { StatePersistence } from "./state/persistence.ts";

export interface RunningServer {
  app: FastifyInstance;
  emulator: Emulator;
  /** The base URL, e.g. `http://127.0.0.1:4000`. */
  url: string;
  close(): Promise<void>;
}

export async function startServer(overrides: Partial<EmulatorOptions> = {}): Promise<RunningServer> {
  const options: EmulatorOptions = { ...defaultOptions(), ...overrides };
  if (!isLoopback(options.host) && options.controlToken === null) {
    throw new Error(
      `Refusing to listen on ${options.host} without a control token: the control API can read and change everything. ` +
        "Set --control-token (or MOCK_CONTROL_TOKEN), or listen on 127.0.0.1.",
    );
  }
  const emulator = new Emulator(options);
  if (options.configFile)
    applyConfigFile(emulator, readConfigFile(options.configFile), configBaseDir(options.configFile));
  const persistence = options.dataDir ? new StatePersistence(emulator, options.dataDir) : null;
  persistence?.load();
  const app = await buildApp({ emulator });
  await app.listen({ host: options.host, port: options.port });
  const address = app.server.address();
  const port = address !== null && typeof address === "object" ? address.port : options.port;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  persistence?.start(options.saveIntervalMs);
  let closing: Promise<void> | null = null;
  return {
    app,
    emulator,
    url: `http://${host}:${port}`,
    close() {
      closing ??= (async () => {
        await app.close();
        await persistence?.stop();
      })();
      return closing;
    },
  };
}
