// Types for scripts/nginx.mjs (nginx for the proxy tests and the production rehearsal).

export interface NginxBinary {
  path: string;
  /** For example "1.22.1". */
  version: string;
  /** The package's mime.types, when it has one. */
  mimeTypes: string | null;
}

export interface StartNginxOptions {
  /** The `http { … }` block's contents for these free ports; `dir` is the configuration folder. */
  http: (ports: number[], dir: string) => string;
  /** How many free ports to pick (default 1); nginx is ready once the first accepts connections. */
  ports?: number;
  /** Files to write into the folder (paths relative to it) before nginx starts, or a function of its ports. */
  files?: Record<string, string | Buffer> | ((ports: number[]) => Record<string, string | Buffer>);
  log?: (line: string) => void;
  /** Default 10 000 ms. */
  readyTimeoutMs?: number;
}

export interface RunningNginx {
  /** Its folder: configuration prefix, logs, temporary paths. */
  readonly dir: string;
  readonly ports: number[];
  readonly binary: NginxBinary;
  /** The master's PID while it runs. */
  pid(): number | null;
  /** The last ~64 KB of its error log. */
  errorLog(): string;
  accessLog(): string;
  /** Fast shutdown (SIGTERM); the folder is removed. */
  stop(): Promise<void>;
}

/** Finds nginx: $NGINX, /usr/sbin/nginx, then PATH. */
export function findNginx(): NginxBinary | null;

/** Like findNginx(), but installs Debian's `nginx` package as root on Debian; otherwise throws what to install. */
export function ensureNginx(options?: { log?: (line: string) => void }): NginxBinary;

/** Starts nginx in a new temporary folder on free loopback ports. */
export function startNginx(options: StartNginxOptions): Promise<RunningNginx>;
