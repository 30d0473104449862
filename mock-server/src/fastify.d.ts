import type { Registry } from "prom-client";
import type { AuthMode, Caller } from "./app-services/auth-context.ts";
import type { Area } from "./errors/catalogue.ts";
import type { ConnectionDrain } from "./http/connection-drain.ts";
import type { AppRuntime } from "./runtime/app-runtime.ts";
import type { Emulator } from "./runtime/emulator.ts";

declare module "fastify" {
  interface FastifyInstance {
    emulator: Emulator;
    /** The metrics' registry when they are kept (`--metrics-token`, `--metrics-address`), else null. */
    metrics: Registry | null;
    /** The server's connections, closed between requests when it drains (http/connection-drain.ts). */
    connections: ConnectionDrain;
    /** Compiles the routes' schemas not compiled yet (http/validation.ts), one a turn; answers how many. */
    compileSchemas: () => Promise<number>;
  }
  interface FastifyRequest {
    /** The app namespace the request belongs to, once known. */
    appRuntime: AppRuntime | null;
    /** The authenticated user and session, on token routes. */
    caller: Caller | null;
    /** Set when a fault override answered instead of the operation. */
    faulted: boolean;
    /** Stops counting the request toward its app's concurrency cap (a change stream, once open). */
    leaveInFlight: (() => void) | null;
    /** The JSON text the request's body was parsed from (http/json-body.ts), for the journal. */
    jsonText: string | null;
    /** The reply's payload as sent, for the journal (http/request-journal.ts). */
    sentPayload: unknown;
  }
  interface FastifyContextConfig {
    operationId?: string;
    area?: Area;
    auth?: AuthMode;
  }
}
