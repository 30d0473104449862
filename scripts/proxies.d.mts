// Types for scripts/proxies.mjs (nginx and Caddy for the proxy tests and the production rehearsal).

export interface ProxyBinary {
  path: string;
  /** For example "1.22.1". */
  version: string;
  /** nginx: the package's mime.types, when it has one. */
  mimeTypes: string | null;
}

export interface StartOptions {
  /** How many free ports to pick (default 1); the proxy is ready once the first accepts connections. */
  ports?: number;
  /** Files to write into the folder (paths relative to it) before it starts, or a function of its ports. */
  files?: Record<string, string | Buffer> | ((ports: number[]) => Record<string, string | Buffer>);
  log?: (line: string) => void;
  /** Default 10 000 ms. */
  readyTimeoutMs?: number;
}

export interface RunningProxy {
  /** Its folder (for nginx the configuration prefix): logs, temporary paths, data. */
  readonly dir: string;
  readonly ports: number[];
  readonly binary: ProxyBinary;
  /** Its PID while it runs. */
  pid(): number | null;
  /** The last ~64 KB of what it wrote to stderr (nginx's error log). */
  errorLog(): string;
  /** nginx: its access log. */
  accessLog(): string;
  /** Stopped (SIGTERM); the folder is removed. */
  stop(): Promise<void>;
}

/** The proxies found, installing the missing ones as root on Debian; throws what to install otherwise. */
export function ensureProxies(
  names: ("nginx" | "caddy")[],
  options?: { log?: (line: string) => void },
): Record<string, ProxyBinary>;
export function ensureNginx(options?: { log?: (line: string) => void }): ProxyBinary;
export function ensureCaddy(options?: { log?: (line: string) => void }): ProxyBinary;

/** nginx with the caller's `http` block (the folder is its configuration prefix). */
export function startNginx(
  options: StartOptions & { http: (ports: number[], dir: string) => string },
): Promise<RunningProxy>;

/** Caddy with the caller's site blocks (no admin endpoint; data and configuration in its folder). */
export function startCaddy(
  options: StartOptions & { sites: (ports: number[], dir: string) => string },
): Promise<RunningProxy>;
