#!/usr/bin/env node
/**
 * The emulator's command line.
 *
 *   app-services-emulator [start] [options]        run until Ctrl-C / SIGTERM
 *   app-services-emulator exec [options] -- CMD…   start on a free port, run CMD with MOCK_URL,
 *                                                  MOCK_APP_ID (and the VITE_ variables) set, stop,
 *                                                  exit with CMD's code
 *   app-services-emulator import [options] FILE     load a mongoexport file into the database
 *   app-services-emulator idp [options]             the fake identity provider on its own
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { parseAuthRateLimit } from "./app-services/abuse-limits.ts";
import type { AppConfig } from "./config/app-config.ts";
import { appFolderProblem } from "./config/app-folder.ts";
import { parseBudgets } from "./config/budgets.ts";
import { readConfigFile } from "./config/config-file.ts";
import {
  checkIdentityProvider,
  defaultOptions,
  type EmulatorOptions,
  productionAuthRateLimit,
  productionPasswordHashCost,
} from "./config/options.ts";
import { parseRetention } from "./config/retention.ts";
import { checkAllowedHost, parseTrustProxy } from "./http/host-check.ts";
import { clientsOfAppFolder, type IdpClients, idpUsage, parseClient, startIdentityProvider } from "./idp/standalone.ts";
import { startServer } from "./server.ts";
import { checkSmtpUrl } from "./state/smtp-relay.ts";
import { checkDatabaseUrl } from "./store/open-store.ts";

/**
 * The environment with each `NAME_FILE` (a Docker or Kubernetes secret mounted as a file) read into
 * `NAME`, for the settings that hold secrets; a file that cannot be read stops the start.
 */
function secretsFromFiles(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const name of [
    "DATABASE_URL",
    "SMTP_URL",
    "MOCK_SIGNING_SECRET",
    "MOCK_SIGNING_SECRET_FALLBACKS",
    "MOCK_CONTROL_TOKEN",
    "MOCK_METRICS_TOKEN",
  ]) {
    const file = env[`${name}_FILE`];
    if (!file) continue;
    try {
      out[name] = readFileSync(file, "utf8").replace(/\r?\n$/, "");
    } catch (error) {
      fail(`${name}_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? error})`);
    }
  }
  return out;
}

const usage = `Usage:
  app-services-emulator [start] [options]
  app-services-emulator exec [options] -- <command> [args…]
  app-services-emulator import --database URL --app-id ID --db NAME --collection NAME FILE
  app-services-emulator idp [--port N] [--app DIR] [--client P=ID:SECRET]   a fake identity provider alone

Options:
  --production           run as a self-hosted production server: needs --database and
                         --signing-secret; control API and inspector only with --control-token;
                         clock and faults refused; no demo app, no EmailJS API unless --emailjs;
                         password hash cost 15, --auth-rate-limit 10/1m, JSON request logs at info
  --emailjs              in production, serve the EmailJS API too (mail through --smtp)
  --port N               port to listen on (env PORT; default 4000; 0 = any free port)
  --host H               address to listen on (env HOST; default 127.0.0.1)
  --public-url URL       the origin clients reach the emulator at (env MOCK_PUBLIC_URL)
  --allowed-hosts LIST   more Host names to answer, comma-separated (.example.com: with subdomains;
                         '*': any Host) besides loopback and the --public-url host (env MOCK_ALLOWED_HOSTS)
  --auth-rate-limit R    limit logins, registrations, mail-sending and function-running calls and
                         links' confirm and reset per client address and per e-mail address:
                         MAX/WINDOW, e.g. 10/1m, or off (env MOCK_AUTH_RATE_LIMIT; default off,
                         10/1m in production)
  --trust-proxy P        believe X-Forwarded-For from: true (any), a hop count, or addresses/CIDRs
                         comma-separated (env MOCK_TRUST_PROXY; default: no proxy)
  --smtp URL             also deliver captured mail (confirmation, reset, EmailJS) over SMTP:
                         smtp://user:pass@host:port or smtps://… (env SMTP_URL)
  --tls-cert FILE        serve HTTPS with this PEM certificate (chain); needs --tls-key (env MOCK_TLS_CERT)
  --tls-key FILE         the PEM private key of --tls-cert (env MOCK_TLS_KEY)
  --web-url URL          the web app's origin, for the default app's e-mail links (env MOCK_WEB_URL)
  --config FILE          apps, EmailJS accounts and settings to add (JSON)
  --app DIR              host an App Services app folder too (repeatable)
  --data-dir DIR         load state from DIR at start; save it there (env MOCK_DATA_DIR)
  --save-interval S      with --data-dir: save changed state every S seconds (default 5; env
                         MOCK_SAVE_INTERVAL); it is saved on shutdown too
  --database URL         keep state in PostgreSQL (postgres://user:pass@host:port/db; env DATABASE_URL):
                         durable, shared by every instance on the database; needs --signing-secret;
                         over TLS: ?sslmode=verify-full (require reads the same)&sslrootcert=FILE
  --database-pool N      connections to the database per instance (default 20)
  --trigger-lease S      with --database, seconds a trigger event kept in the database stays an
                         instance's unrenewed: how soon another runs a dead one's (default 60)
  --budgets LIST         what the instance shares among its clients, KEY=SIZE comma-separated:
                         bodies (request bodies of 16 KiB or more being read; default 64MiB),
                         replies (large replies unread; 256MiB), streams (change events unsent;
                         256MiB), connections (per client address; 256) (env MOCK_BUDGETS)
  --retention LIST       with --database, how long ended mail and expired tokens are kept,
                         KEY=PERIOD comma-separated (period: a number with s, m, h or d): mail
                         (sent, finally failed or captured only; default 30d; queued mail is kept
                         until its delivery ends), tokens (confirmation and reset tokens past
                         their expiry; default 7d) (env MOCK_RETENTION)
  --control-token T      require this bearer token on the control API (env MOCK_CONTROL_TOKEN);
                         the control API then also takes function source
  --allow-function-source
                         let the control API take function source without a control token (env
                         MOCK_ALLOW_FUNCTION_SOURCE=1): functions run on this host as your user, so
                         anyone who reaches the control API can run code here; never in production
  --function-http-hosts LIST
                         hosts functions may reach with context.http, comma-separated (.example.com:
                         with subdomains; '*': any at a public address) (env MOCK_FUNCTION_HTTP_HOSTS;
                         default loopback only, '*' in production)
  --inspect-functions PORT
                         debug functions: each app's function process waits for a debugger
                         (chrome://inspect) on 127.0.0.1:PORT, the next app's on PORT+1…; calls have
                         no time limit meanwhile (env MOCK_INSPECT_FUNCTIONS; never in production)
  --identity-provider P  where Google, Apple and Facebook sign-ins go: fake (the built-in fake
                         identity provider, the default), real (the providers; the production
                         default) or the URL of a fake one run alone (\`idp\` below), e.g.
                         http://127.0.0.1:4100/_mock/idp/rehearsal (env MOCK_IDENTITY_PROVIDER)
  --metrics-token T      keep metrics and serve them at /_mock/v1/metrics behind this bearer token,
                         in every mode (env MOCK_METRICS_TOKEN)
  --metrics-address A    keep metrics and serve them at http://A/metrics without a token, A being
                         [HOST:]PORT (HOST default 127.0.0.1; env MOCK_METRICS_ADDRESS)
  --password-hash-cost N log2 of the scrypt cost of password hashes (default 10)
  --signing-secret S     the HS256 secret of access and refresh tokens (env MOCK_SIGNING_SECRET)
  --signing-secret-fallbacks LIST
                         also accept tokens of these secrets, comma-separated, at most 4: a
                         rotation's old secret, or its new one before every instance signs with it
                         (env MOCK_SIGNING_SECRET_FALLBACKS)
  --log-level L          silent | error | warn | info | debug (default warn)
  --no-watch             do not reload functions when their files change
  -h, --help             show this help`;

/** `[HOST:]PORT` (an IPv6 host in brackets), the host 127.0.0.1 when none is given; null when it is not one. */
function parseListenAddress(text: string): { host: string; port: number } | null {
  const match = /^(?:(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):)?(\d{1,5})$/.exec(text.trim());
  const port = Number(match?.[2]);
  if (!match || port > 65535) return null;
  return { host: match[1]?.replace(/^\[(.*)\]$/, "$1") ?? "127.0.0.1", port };
}

/** A comma-separated list of hosts in `--allowed-hosts`' syntax; exits naming the first bad one. */
function hostList(text: string, option: string): string[] {
  const hosts = text
    .split(",")
    .map((h) => h.trim())
    .filter(Boolean);
  const problem = hosts.map(checkAllowedHost).find((p) => p !== null);
  if (problem) fail(`${option}: ${problem}`);
  return hosts;
}

/** At most this many fallback secrets: a forged token is checked against each. */
const maxSigningSecretFallbacks = 4;

/** `--signing-secret-fallbacks`: its secrets (comma- or space-separated, none when empty), or why not. */
function signingSecretFallbacks(
  text: string,
  signingSecret: string | null | undefined,
): { secrets: string[] } | string {
  const secrets = [...new Set(text.split(/[\s,]+/).filter((secret) => secret !== ""))];
  if (secrets.length === 0) return { secrets };
  if (!signingSecret) return "needs --signing-secret (the secret new tokens are signed with)";
  if (secrets.length > maxSigningSecretFallbacks)
    return `${secrets.length} secrets: at most ${maxSigningSecretFallbacks} (a forged token is checked against each)`;
  const short = secrets.find((secret) => secret.length < 16);
  if (short !== undefined) return `a secret of ${short.length} characters: each must be at least 16`;
  if (secrets.includes(signingSecret))
    return "lists the signing secret itself: list only the other secrets whose tokens to accept";
  return { secrets };
}

/** A token clients send as `Authorization: Bearer <token>`: one that a header can carry whole. */
function bearerToken(token: string, option: string): string {
  if (!/^[\x21-\x7e]+$/.test(token))
    fail(`${option} must be visible ASCII characters without spaces: a client sends it in an Authorization header`);
  return token;
}

function fail(message: string): never {
  process.stderr.write(`${message}\n\n${usage}\n`);
  process.exit(2);
}

function parse(argv: string[]): { command: "start" | "exec"; options: Partial<EmulatorOptions>; rest: string[] } {
  const dashDash = argv.indexOf("--");
  const own = dashDash >= 0 ? argv.slice(0, dashDash) : argv;
  const rest = dashDash >= 0 ? argv.slice(dashDash + 1) : [];
  const { values, positionals } = parseArgs({
    args: own,
    allowPositionals: true,
    options: {
      port: { type: "string" },
      host: { type: "string" },
      "public-url": { type: "string" },
      "allowed-hosts": { type: "string" },
      "auth-rate-limit": { type: "string" },
      "trust-proxy": { type: "string" },
      smtp: { type: "string" },
      "tls-cert": { type: "string" },
      "tls-key": { type: "string" },
      "web-url": { type: "string" },
      config: { type: "string" },
      app: { type: "string", multiple: true },
      "data-dir": { type: "string" },
      "save-interval": { type: "string" },
      database: { type: "string" },
      "database-pool": { type: "string" },
      "trigger-lease": { type: "string" },
      budgets: { type: "string" },
      retention: { type: "string" },
      "control-token": { type: "string" },
      "metrics-token": { type: "string" },
      "metrics-address": { type: "string" },
      "allow-function-source": { type: "boolean" },
      "function-http-hosts": { type: "string" },
      "inspect-functions": { type: "string" },
      "password-hash-cost": { type: "string" },
      "identity-provider": { type: "string" },
      "signing-secret": { type: "string" },
      "signing-secret-fallbacks": { type: "string" },
      "log-level": { type: "string" },
      "no-watch": { type: "boolean" },
      production: { type: "boolean" },
      emailjs: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  const command = positionals[0] ?? "start";
  if (command !== "start" && command !== "exec") fail(`Unknown command '${command}'`);
  const env = secretsFromFiles(process.env);
  const defaults = defaultOptions();
  const options: Partial<EmulatorOptions> = {};
  const production = values.production === true || env.MOCK_PRODUCTION === "1" || env.MOCK_PRODUCTION === "true";
  if (production) {
    options.production = true;
    options.emailjs = values.emailjs === true;
    options.passwordHashCost = productionPasswordHashCost;
    options.authRateLimit = productionAuthRateLimit;
    options.logLevel = "info";
    options.watchFunctions = false;
  }
  // A --config file's settings first; environment variables and flags override them.
  const configFile = values.config ? resolve(values.config) : null;
  if (configFile) {
    options.configFile = configFile;
    const settings = readConfigFile(configFile).settings ?? {};
    if (settings.host !== undefined) options.host = settings.host;
    if (settings.port !== undefined) options.port = settings.port;
    if (settings.publicUrl !== undefined) options.publicUrl = settings.publicUrl;
    if (settings.dataDir !== undefined) options.dataDir = resolve(settings.dataDir);
    if (settings.passwordHashCost !== undefined) options.passwordHashCost = settings.passwordHashCost;
    if (settings.defaultAppId !== undefined) options.defaultAppId = settings.defaultAppId;
  }
  const port = values.port ?? env.PORT;
  if (port !== undefined) {
    const n = Number(port);
    if (!Number.isInteger(n) || n < 0 || n > 65535) fail(`--port must be a port number, not '${port}'`);
    options.port = n;
  }
  if (command === "exec" && values.port === undefined) options.port = 0;
  const host = values.host ?? env.HOST;
  if (host) options.host = host;
  const publicUrl = values["public-url"] ?? env.MOCK_PUBLIC_URL;
  if (publicUrl) options.publicUrl = publicUrl;
  if (publicUrl) {
    let url: URL | null = null;
    try {
      url = new URL(publicUrl);
    } catch {}
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:"))
      fail(`--public-url must be an http(s) URL, not '${publicUrl}'`);
  }
  const allowedHosts = values["allowed-hosts"] ?? env.MOCK_ALLOWED_HOSTS;
  if (allowedHosts !== undefined) {
    const hosts = hostList(allowedHosts, "--allowed-hosts");
    if (hosts.includes("*"))
      process.stderr.write(
        "Warning: --allowed-hosts '*' answers any Host: DNS-rebinding protection is off for the services " +
          "(the control API answers other names than its own only with --control-token).\n",
      );
    options.allowedHosts = hosts;
  }
  const authRateLimit = values["auth-rate-limit"] ?? env.MOCK_AUTH_RATE_LIMIT;
  if (authRateLimit === "off") options.authRateLimit = null;
  else if (authRateLimit !== undefined) {
    const parsed = parseAuthRateLimit(authRateLimit);
    if (typeof parsed === "string") fail(`--auth-rate-limit: ${parsed}`);
    options.authRateLimit = parsed;
  }
  const trustProxy = values["trust-proxy"] ?? env.MOCK_TRUST_PROXY;
  if (trustProxy !== undefined) {
    const parsed = parseTrustProxy(trustProxy);
    if (typeof parsed === "string") fail(`--trust-proxy: ${parsed}`);
    options.trustProxy = parsed;
  }
  const smtp = values.smtp ?? env.SMTP_URL;
  if (smtp) {
    const problem = checkSmtpUrl(smtp);
    if (problem) fail(`--smtp: ${problem}`);
    options.smtpUrl = smtp;
  }
  const tlsCert = values["tls-cert"] ?? env.MOCK_TLS_CERT;
  if (tlsCert) options.tlsCert = resolve(tlsCert);
  const tlsKey = values["tls-key"] ?? env.MOCK_TLS_KEY;
  if (tlsKey) options.tlsKey = resolve(tlsKey);
  const webUrl = values["web-url"] ?? env.MOCK_WEB_URL;
  if (webUrl) options.webUrl = webUrl;
  if (values.app) {
    options.appDirs = values.app.map((d) => resolve(d));
    for (const dir of options.appDirs) {
      const problem = appFolderProblem(dir);
      if (problem) fail(`--app: ${problem}`);
    }
  }
  const dataDir = values["data-dir"] ?? env.MOCK_DATA_DIR;
  if (dataDir) options.dataDir = resolve(dataDir);
  const saveInterval = values["save-interval"] ?? env.MOCK_SAVE_INTERVAL;
  if (saveInterval !== undefined) {
    const seconds = Number(saveInterval);
    if (saveInterval.trim() === "" || !Number.isFinite(seconds) || seconds < 0.1 || seconds > 86_400) {
      fail(`--save-interval: '${saveInterval}' is not a number of seconds from 0.1 to 86400`);
    }
    if (!dataDir) fail("--save-interval needs --data-dir (there is nothing to save without it)");
    options.saveIntervalMs = Math.round(seconds * 1000);
  }
  const database = values.database ?? env.DATABASE_URL;
  if (database) {
    const problem = checkDatabaseUrl(database);
    if (problem) fail(`--database: ${problem}`);
    options.databaseUrl = database;
  }
  const budgets = values.budgets ?? env.MOCK_BUDGETS;
  if (budgets !== undefined) {
    const parsed = parseBudgets(budgets);
    if (typeof parsed === "string") fail(`--budgets: ${parsed}`);
    options.budgets = parsed;
  }
  const retention = values.retention ?? env.MOCK_RETENTION;
  if (retention !== undefined) {
    const parsed = parseRetention(retention);
    if (typeof parsed === "string") fail(`--retention: ${parsed}`);
    options.retention = parsed;
  }
  if (values["database-pool"] !== undefined) {
    const n = Number(values["database-pool"]);
    if (!Number.isInteger(n) || n < 1 || n > 1000) fail("--database-pool must be an integer from 1 to 1000");
    options.databasePoolSize = n;
  }
  const triggerLease = values["trigger-lease"];
  if (triggerLease !== undefined) {
    const n = Number(triggerLease);
    if (!Number.isInteger(n) || n < 1 || n > 3600)
      fail(`--trigger-lease: '${triggerLease}' is not a whole number of seconds from 1 to 3600`);
    if (!options.databaseUrl) fail("--trigger-lease needs --database (only the database keeps trigger events)");
    options.triggerLeaseMs = n * 1000;
  }
  const controlToken = values["control-token"] ?? env.MOCK_CONTROL_TOKEN;
  if (controlToken) options.controlToken = bearerToken(controlToken, "--control-token");
  const metricsToken = values["metrics-token"] ?? env.MOCK_METRICS_TOKEN;
  if (metricsToken) options.metricsToken = bearerToken(metricsToken, "--metrics-token");
  const metricsAddress = values["metrics-address"] ?? env.MOCK_METRICS_ADDRESS;
  if (metricsAddress) {
    const parsed = parseListenAddress(metricsAddress);
    if (!parsed) fail(`--metrics-address: '${metricsAddress}' is not [HOST:]PORT (for example 127.0.0.1:9464 or 9464)`);
    options.metricsAddress = parsed;
  }
  const allowFunctionSource =
    values["allow-function-source"] === true ||
    env.MOCK_ALLOW_FUNCTION_SOURCE === "1" ||
    env.MOCK_ALLOW_FUNCTION_SOURCE === "true";
  if (allowFunctionSource && production)
    fail(
      "--allow-function-source does not go with --production: a production server takes functions only from its app folders (--app)",
    );
  if (allowFunctionSource) options.allowFunctionSource = true;
  const functionHttpHosts = values["function-http-hosts"] ?? env.MOCK_FUNCTION_HTTP_HOSTS;
  if (functionHttpHosts !== undefined) options.functionHttpHosts = hostList(functionHttpHosts, "--function-http-hosts");
  const inspectFunctions = values["inspect-functions"] ?? env.MOCK_INSPECT_FUNCTIONS;
  if (inspectFunctions !== undefined) {
    if (production)
      fail(
        "--inspect-functions does not go with --production: a function process being debugged runs without its permission model and time limits",
      );
    const port = Number(inspectFunctions);
    if (!/^\d+$/.test(inspectFunctions) || port < 1 || port > 65535)
      fail(`--inspect-functions: '${inspectFunctions}' is not a port (1 to 65535; Node's debugger port is 9229)`);
    options.inspectFunctions = port;
  }
  const identityProvider = values["identity-provider"] ?? env.MOCK_IDENTITY_PROVIDER;
  if (production) options.identityProvider = "real";
  if (identityProvider !== undefined) {
    const problem = checkIdentityProvider(identityProvider, production);
    if (problem) fail(`--identity-provider: ${problem}`);
    options.identityProvider = identityProvider.replace(/\/+$/, "");
  }
  const signingSecret = values["signing-secret"] ?? env.MOCK_SIGNING_SECRET;
  if (signingSecret) {
    if (signingSecret.length < 16)
      fail("--signing-secret must be at least 16 characters (32 random bytes, e.g. `openssl rand -hex 32`, are best)");
    options.signingSecret = signingSecret;
  }
  const fallbacks = values["signing-secret-fallbacks"] ?? env.MOCK_SIGNING_SECRET_FALLBACKS;
  if (fallbacks !== undefined) {
    const parsed = signingSecretFallbacks(fallbacks, options.signingSecret);
    if (typeof parsed === "string") fail(`--signing-secret-fallbacks: ${parsed}`);
    options.signingSecretFallbacks = parsed.secrets;
  }
  if (values["password-hash-cost"] !== undefined) {
    const n = Number(values["password-hash-cost"]);
    if (!Number.isInteger(n) || n < 1 || n > 20) fail("--password-hash-cost must be an integer from 1 to 20");
    options.passwordHashCost = n;
  }
  const level = values["log-level"];
  if (level !== undefined) {
    if (!["silent", "error", "warn", "info", "debug"].includes(level)) fail(`Unknown --log-level '${level}'`);
    options.logLevel = level as EmulatorOptions["logLevel"];
  }
  if (values["no-watch"]) options.watchFunctions = false;
  if (production && !options.databaseUrl)
    fail("--production needs --database (or DATABASE_URL): production state must be durable and shared");
  if (production && !options.signingSecret)
    fail("--production needs --signing-secret (or MOCK_SIGNING_SECRET / MOCK_SIGNING_SECRET_FILE)");
  if (options.databaseUrl && !options.signingSecret)
    fail(
      "--database needs --signing-secret (or MOCK_SIGNING_SECRET): every instance on the database must sign and check tokens with the same secret",
    );
  if (options.databaseUrl && options.dataDir)
    fail("--database and --data-dir do not go together: the database keeps the state");
  if (command === "exec" && rest.length === 0) fail("exec needs a command after --");
  return { command, options: { ...options, defaultAppId: options.defaultAppId ?? defaults.defaultAppId }, rest };
}

/** `idp`: the fake identity provider on its own (idp/standalone.ts). */
async function runIdentityProvider(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: "string" },
      host: { type: "string" },
      "public-url": { type: "string" },
      app: { type: "string" },
      client: { type: "string", multiple: true },
      help: { type: "boolean", short: "h" },
    },
  });
  const stop = (message: string): never => {
    process.stderr.write(`${message}\n\n${idpUsage}\n`);
    process.exit(2);
  };
  if (values.help) {
    process.stdout.write(`${idpUsage}\n`);
    process.exit(0);
  }
  const port = Number(values.port ?? 4100);
  if (!Number.isInteger(port) || port < 0 || port > 65535) stop(`--port must be a port number, not '${values.port}'`);
  const appProblem = values.app === undefined ? undefined : appFolderProblem(resolve(values.app));
  if (appProblem) stop(`--app: ${appProblem}`);
  const clients: IdpClients = values.app ? clientsOfAppFolder(resolve(values.app)) : {};
  for (const text of values.client ?? []) {
    const parsed = parseClient(text);
    if (typeof parsed === "string") stop(`--client: ${parsed}`);
    else clients[parsed[0]] = parsed[1];
  }
  const publicUrl = values["public-url"]?.replace(/\/+$/, "") ?? null;
  const running = await startIdentityProvider({ host: values.host ?? "127.0.0.1", port, clients, publicUrl });
  const origin = publicUrl ?? running.url;
  process.stdout.write(
    `Fake identity provider listening on ${running.url}\n` +
      `  clients                ${Object.keys(clients).join(", ") || "none (give --app or --client)"}\n` +
      `  for a server           --identity-provider ${origin}/_mock/idp/<tenant>\n` +
      `  Google's discovery     ${origin}/_mock/idp/<tenant>/oauth2-google/.well-known/openid-configuration\n`,
  );
  let closing = false;
  const close = () => {
    if (closing) return;
    closing = true;
    void running.close().then(() => process.exit(0));
  };
  process.on("SIGINT", close);
  process.on("SIGTERM", close);
}

/** Where the metrics are, if anywhere. */
function metricsLine(url: string, behindToken: boolean, separate: string | null): string {
  const places = [
    ...(behindToken ? [`${url}/_mock/v1/metrics (token required)`] : []),
    ...(separate ? [separate] : []),
  ];
  return places.length > 0 ? `  metrics                ${places.join(", ")}\n` : "";
}

/** The default app's HTTPS endpoints and Data API, for the start's banner (at most 10 endpoints). */
function endpointLines(url: string, appId: string, config: AppConfig): string {
  const base = `${url}/app/${appId}/endpoint`;
  const endpoints = (config.endpoints ?? []).filter((e) => e.disabled !== true);
  const lines = endpoints
    .slice(0, 10)
    .map(
      (e, i) =>
        `  ${i === 0 ? "HTTPS endpoints" : "".padEnd(15)}        ${e.httpMethod === "*" ? "ANY" : e.httpMethod} ${base}${e.route}\n`,
    );
  if (endpoints.length > 10) lines.push(`                         … and ${endpoints.length - 10} more\n`);
  if (config.dataApi && config.dataApi.disabled !== true)
    lines.push(`  Data API               POST ${base}/data/v1/action/<action>\n`);
  return lines.join("");
}

async function main() {
  // (Loaded only for the command: it brings the PostgreSQL client, which a start without
  // --database never needs, and which costs a start a tenth of its time to load.)
  if (process.argv[2] === "import") {
    const { runImport } = await import("./import-command.ts");
    process.exit(await runImport(process.argv.slice(3)));
  }
  if (process.argv[2] === "idp") return runIdentityProvider(process.argv.slice(3));
  const { command, options, rest } = parse(process.argv.slice(2));
  const server = await startServer(options, {
    onListening: (url) => {
      if (options.databaseUrl)
        process.stdout.write(`Opening the database (${url}/_mock/v1/ready answers 503 until it is ready)\n`);
    },
  });
  const appId = server.emulator.options.defaultAppId;
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await server.close();
    process.exit(code);
  };

  if (command === "start") {
    const settings = server.emulator.options;
    const fallbacks = settings.signingSecretFallbacks.length;
    const secretsLine =
      fallbacks > 0
        ? `  token secrets          tokens of ${fallbacks} fallback secret${fallbacks > 1 ? "s" : ""} accepted too (metric appservices_fallback_token_uses_total)\n`
        : "";
    if (settings.production) {
      const appIds = (await server.emulator.apps.list()).map((a) => a.appId);
      const control = settings.controlToken !== null;
      process.stdout.write(
        `App Services server (production) listening on ${server.url}\n` +
          `  App Services base URL  ${settings.publicUrl ?? server.url}  (apps: ${appIds.join(", ") || "none"})\n` +
          (settings.emailjs ? `  EmailJS origin         ${settings.publicUrl ?? server.url}\n` : "") +
          `  control API            ${control ? `${server.url}/_mock/v1 (token required)` : "off (no --control-token)"}\n` +
          secretsLine +
          metricsLine(server.url, settings.metricsToken !== null, server.metricsUrl),
      );
      if (appIds.length === 0)
        process.stderr.write("Warning: no apps to serve: give --app DIR (an App Services app export).\n");
    } else {
      const defaultApp = await server.emulator.apps.get(appId);
      process.stdout.write(
        `App Services emulator listening on ${server.url}\n` +
          `  App Services base URL  ${server.url}  (app id: ${appId})\n` +
          `  EmailJS origin         ${server.url}  (public key: local-public-key)\n` +
          `  control API            ${server.url}/_mock/v1\n` +
          `  inspector              ${server.url}/_mock/\n` +
          (settings.inspectFunctions !== null
            ? `  functions debugger     127.0.0.1:${settings.inspectFunctions} and on, a port an app (chrome://inspect; no time limits)\n`
            : "") +
          (defaultApp ? endpointLines(server.url, appId, defaultApp.config) : "") +
          secretsLine +
          metricsLine(server.url, settings.metricsToken !== null, server.metricsUrl),
      );
    }
    // Every signal, not just the first: Ctrl-C in a terminal reaches this process and whatever runs
    // it (npm start), which passes it on; a second one must not end a shutdown bounded anyway.
    process.on("SIGINT", () => void stop(0));
    process.on("SIGTERM", () => void stop(0));
    return;
  }

  const [cmd, ...args] = rest as [string, ...string[]];
  const child = spawn(cmd, args, {
    stdio: "inherit",
    env: {
      ...process.env,
      MOCK_URL: server.url,
      MOCK_APP_ID: appId,
      MOCK_EMAILJS_PUBLIC_KEY: "local-public-key",
      VITE_APP_SERVICES_BASE_URL: server.url,
      VITE_APP_SERVICES_APP_ID: appId,
      VITE_EMAILJS_ORIGIN: server.url,
    },
  });
  const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
  process.on("SIGINT", forward("SIGINT"));
  process.on("SIGTERM", forward("SIGTERM"));
  child.on("error", (error) => {
    process.stderr.write(`Cannot run ${cmd}: ${error.message}\n`);
    void stop(127);
  });
  child.on("exit", (code, signal) => void stop(code ?? (signal ? 128 + 15 : 1)));
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
