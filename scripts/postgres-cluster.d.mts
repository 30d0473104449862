// Types for scripts/postgres-cluster.mjs (throw-away PostgreSQL clusters for the tests).

export interface PostgresBinaries {
  /** Folder holding the server binaries. */
  binDir: string;
  initdb: string;
  postgres: string;
  pgCtl: string | null;
  /** For example "15.18". */
  version: string;
}

export interface StartClusterOptions {
  /** Receives progress lines and the server's own log lines. */
  log?: (line: string) => void;
  /** A fixed port instead of a free one (no retry when it is taken). */
  port?: number;
  /** How long to wait for the server to accept connections; default 30 000 ms. */
  readyTimeoutMs?: number;
  /** Extra or overriding `-c name=value` server settings. */
  settings?: Record<string, string | number | boolean>;
  /**
   * Keep the cluster in memory (/dev/shm) when there is room (1 GiB free): no disk I/O and cheap file
   * creation. Falls back to the temporary folder.
   */
  inMemory?: boolean;
  /**
   * Serve TLS too with this certificate and key (PEM): written to the data folder as the server's own,
   * readable by its user alone (as PostgreSQL wants its key), with `ssl=on`.
   */
  tls?: { cert: string; key: string };
}

export interface PostgresCluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication, no password). */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** The temporary folder holding the data and socket folders. */
  readonly rootDir: string;
  readonly binaries: PostgresBinaries;
  /** PID of the running server, null while stopped. */
  pid(): number | null;
  isRunning(): boolean;
  /** The last ~64 KB of the server's output, across starts. */
  serverLog(): string;
  /**
   * Stops the server (SIGINT = fast shutdown, SIGKILL after 10 s) and removes the temporary folder;
   * with `keepData: true` only stops the server, so that `start()` can bring it back.
   */
  stop(options?: { keepData?: boolean }): Promise<void>;
  /** Starts the server again on the same port and data folder; rejects when the port was taken meanwhile. */
  start(): Promise<void>;
  /** `stop({ keepData: true })` then `start()`. */
  restart(): Promise<void>;
  /** Same as `stop({ keepData: true })`. */
  stopServer(): Promise<void>;
  /** Same as `start()`. */
  startServer(): Promise<void>;
}

/** Finds initdb and postgres: $PG_BIN, `pg_config --bindir`, /usr/lib/postgresql/<newest>/bin, then PATH. */
export function findPostgres(): PostgresBinaries | null;

/**
 * Like findPostgres(), but installs Debian's `postgresql` package when nothing is found and we are root on
 * Debian; otherwise throws an Error saying what to install.
 */
export function ensurePostgres(options?: { log?: (line: string) => void }): PostgresBinaries;

/** Creates a throw-away cluster in a temporary folder and starts its server on a free port of 127.0.0.1. */
export function startCluster(options?: StartClusterOptions): Promise<PostgresCluster>;
