/**
 * The emulator's start-up settings, from defaults, a `--config` file's `settings`, environment
 * variables and command-line flags (later ones win).
 */
import { existsSync } from "node:fs";
import { isIPv4 } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { defaultPasswordHashCost } from "../state/passwords.ts";
import type { Budgets } from "./budgets.ts";
import type { Retention } from "./retention.ts";

/** `--auth-rate-limit`: requests per client address and per e-mail address in a window. */
export interface AuthRateLimit {
  max: number;
  windowMs: number;
}

export interface EmulatorOptions {
  /**
   * Production mode (`--production`): a self-hosted App Services server. Needs the database and a
   * signing secret; no control API or inspector without a control token; no testing features
   * (clock, faults); no default demo app, no EmailJS emulation unless asked; production defaults for
   * the password hash cost, the abuse limits and the request logs.
   */
  production: boolean;
  /** Serve the EmailJS API (always in the harness; in production only with `--emailjs`). */
  emailjs: boolean;
  host: string;
  port: number;
  /** The origin clients should use (location's `hostname`); from each request's Host when null. */
  publicUrl: string | null;
  /**
   * Host names (a leading dot: with subdomains) or addresses answered besides loopback, the
   * listening address and the host of `publicUrl`; `*` answers any Host (http/host-check.ts).
   */
  allowedHosts: string[];
  /** Limits on login, register and the mail-sending calls (app-services/abuse-limits.ts); off when null. */
  authRateLimit: AuthRateLimit | null;
  /** Fastify's `trustProxy`: which proxies' X-Forwarded-For to believe for the client address. */
  trustProxy: boolean | number | string[];
  /** On SIGTERM/SIGINT, how long requests in flight may take to finish before they are cut. */
  drainMs: number;
  /** Deliver captured mail over SMTP too (state/smtp-relay.ts); capture only when null. */
  smtpUrl: string | null;
  /**
   * How long an ended change stream's last bytes may take to reach a client that does not read
   * before its connection is cut (default 5 s; tests shorten it).
   */
  streamDrainGraceMs?: number;
  /** How often an idle event stream gets a heartbeat comment (default 15 s; tests shorten it). */
  streamHeartbeatMs?: number;
  /** What the instance shares among all its clients (`--budgets`; config/budgets.ts has the defaults). */
  budgets?: Partial<Budgets>;
  /** How long a large reply may send nothing before its connection is cut (default 60 s; http/unsent-replies.ts; tests shorten it). */
  unsentReplyIdleMs?: number;
  /** How long a body of 16 KiB or more may send nothing before its connection is closed (default 10 s; tests shorten it). */
  largeRequestIdleMs?: number;
  /** Password hashes at once, their longest expected wait and their clock (state/password-work.ts has the defaults; tests change them). */
  passwordWork?: { concurrency?: number; maxWaitMs?: number; now?: () => number };
  /** The relay's retry timing (defaults: 1 s doubling to 5 min; 5 refusals); tests shorten it. */
  smtpRetry?: {
    baseDelayMs: number;
    maxDelayMs: number;
    maxRefusals: number;
    timeouts?: { connectMs?: number; greetingMs?: number; silenceMs?: number };
    closeWaitMs?: number;
  };
  /** How long the database keeps ended mail and expired tokens (`--retention`; config/retention.ts has the defaults). */
  retention?: Partial<Retention>;
  /** How often the retention sweeps run, how many rows a statement removes, and their clock (defaults in config/retention.ts; tests change them). */
  retentionSweeps?: { everyMs?: number; batch?: number; now?: () => number };
  /** PEM files: serve HTTPS instead of HTTP when both are set. */
  tlsCert: string | null;
  tlsKey: string | null;
  /** The web app's origin: the default app's confirmation and reset links point at its pages. */
  webUrl: string | null;
  /** Where state is loaded from at start and saved to (atomically) periodically and on shutdown. */
  dataDir: string | null;
  /** The PostgreSQL store (`postgres://…`): durable, shared by every instance; in memory when null. */
  databaseUrl: string | null;
  /** Connections each instance keeps to the database. */
  databasePoolSize: number;
  /**
   * How long a trigger event kept in the database stays an instance's without being renewed: how
   * soon another instance runs the events of one that died (`--trigger-lease`; decision 0031).
   */
  triggerLeaseMs: number;
  /** With `dataDir`: how often changed state is saved (`--save-interval`). */
  saveIntervalMs: number;
  /** Required on the control API when listening on a non-loopback address. */
  controlToken: string | null;
  /** Serve the metrics on the main port behind this bearer token (`--metrics-token`). */
  metricsToken: string | null;
  /** Serve the metrics at `/metrics` on this address of their own, without a token (`--metrics-address`). */
  metricsAddress: { host: string; port: number } | null;
  /**
   * Let the control API take function source (inline functions, app folders it does not host yet)
   * without a control token (`--allow-function-source`). Function source runs on the host; without
   * this or a control token the control API refuses it, and production mode always does
   * (control/function-source.ts, docs/decisions/0010).
   */
  allowFunctionSource: boolean;
  /**
   * The hosts functions may reach with `context.http` (`--function-http-hosts`): names (a leading
   * dot: with subdomains), addresses, or `*`; null: loopback only in the harness (tests stay
   * hermetic), any host in production (functions/outbound-http.ts).
   */
  functionHttpHosts: string[] | null;
  /**
   * `--inspect-functions PORT`: the apps' function processes listen for a debugger from this port
   * on (0: any free port each), without the permission model and their time limits; null: off.
   * Never in production (functions/function-inspector.ts).
   */
  inspectFunctions: number | null;
  passwordHashCost: number;
  /**
   * Where the OAuth 2.0 providers (Google, Apple, Facebook) are: `fake`, the built-in fake identity
   * provider (the harness default); `real`, the providers themselves (the production default); or
   * the base URL of a fake identity provider run on its own (`cli.js idp`), whose discovery
   * documents are at `<URL>/<provider>/.well-known/openid-configuration`.
   */
  identityProvider: "fake" | "real" | string;
  /** The HS256 secret for access and refresh tokens; random per process when null. */
  signingSecret: string | null;
  /**
   * Other secrets whose tokens are accepted too (a rotation: the previous secret, or the next one
   * before every instance signs with it); tokens are signed with `signingSecret` only.
   */
  signingSecretFallbacks: string[];
  defaultAppId: string;
  /** The App Services app folder of the default app (and the template of new apps). */
  defaultAppDir: string;
  /** The default EmailJS account (its services and templates are the defaults of new accounts). */
  emailjsDefaultsFile: string;
  /** More app folders to host, each under its own app id. */
  appDirs: string[];
  configFile: string | null;
  logLevel: "silent" | "error" | "warn" | "info" | "debug";
  /** Reload functions when their files change. */
  watchFunctions: boolean;
}

const here = dirname(fileURLToPath(import.meta.url));

/** The repository's default app folder, wherever the emulator runs from (source or bundle). */
export function findDefaultAppDir(): string {
  // from src/config: ../../apps; from the dist bundle: ../apps
  const candidates = [join(here, "..", "..", "apps", "local-app"), join(here, "..", "apps", "local-app")];
  return candidates.find((dir) => existsSync(join(dir, "realm_config.json"))) ?? resolve(candidates[0]!);
}

/** The repository's default EmailJS account, beside the default app folder. */
export function findEmailJsDefaultsFile(): string {
  return join(findDefaultAppDir(), "..", "emailjs-default-account.json");
}

export function defaultOptions(): EmulatorOptions {
  return {
    production: false,
    emailjs: true,
    host: "127.0.0.1",
    port: 4000,
    publicUrl: null,
    allowedHosts: [],
    authRateLimit: null,
    drainMs: 10_000,
    smtpUrl: null,
    tlsCert: null,
    tlsKey: null,
    trustProxy: false,
    webUrl: null,
    dataDir: null,
    databaseUrl: null,
    databasePoolSize: 20,
    triggerLeaseMs: 60_000,
    saveIntervalMs: 5000,
    controlToken: null,
    metricsToken: null,
    metricsAddress: null,
    allowFunctionSource: false,
    functionHttpHosts: null,
    inspectFunctions: null,
    passwordHashCost: defaultPasswordHashCost,
    identityProvider: "fake",
    signingSecret: null,
    signingSecretFallbacks: [],
    defaultAppId: "local-app",
    defaultAppDir: findDefaultAppDir(),
    emailjsDefaultsFile: findEmailJsDefaultsFile(),
    appDirs: [],
    configFile: null,
    logLevel: "warn",
    watchFunctions: true,
  };
}

/** Production's password hash cost: log2 of scrypt's N (N = 32,768, r = 8: 32 MiB and ~0.1 s a hash). */
export const productionPasswordHashCost = 15;
/** Production's abuse limit on login, register and the mail-sending calls. */
export const productionAuthRateLimit: AuthRateLimit = { max: 10, windowMs: 60_000 };

/**
 * Whether the control API (beyond its health check) and the inspector are served: always, but in
 * production mode without a control token. Without them nothing can read the request journals,
 * so then none is kept.
 */
export function controlApiServed(options: Pick<EmulatorOptions, "production" | "controlToken">): boolean {
  return !options.production || options.controlToken !== null;
}

/** Whether metrics are kept: only when something can read them. */
export function metricsKept(options: Pick<EmulatorOptions, "metricsToken" | "metricsAddress">): boolean {
  return options.metricsToken !== null || options.metricsAddress !== null;
}

/** Loopback addresses (127.0.0.0/8, ::1, IPv4-mapped 127.x) and `localhost` names (RFC 6761). */
export function isLoopback(host: string): boolean {
  const name = host.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (name === "localhost" || name.endsWith(".localhost")) return true;
  if (name === "::1" || name === "0:0:0:0:0:0:0:1") return true;
  const v4 = name.startsWith("::ffff:") ? name.slice("::ffff:".length) : name;
  return isIPv4(v4) && v4.startsWith("127.");
}

/** What is wrong with an `--identity-provider` value, or null. */
export function checkIdentityProvider(value: string, production: boolean): string | null {
  if (value === "real") return null;
  if (value === "fake")
    return production ? "the fake identity provider is a testing feature, not for a production server" : null;
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {}
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.search || url.hash)
    return `'${value}' is not fake, real or an http(s) URL without query or fragment`;
  return null;
}
