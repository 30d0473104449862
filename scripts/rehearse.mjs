#!/usr/bin/env node
// `npm run rehearse`: the production deployment that docs/production.md and docker-compose.yml's
// production profile describe, brought up on this machine without a container engine, and the web
// app's journeys (Playwright, tagged @production) run against it in Chromium, faults included:
//
//   - a throwaway PostgreSQL cluster (scripts/postgres-cluster.mjs), reached over TLS with its
//     certificate checked (sslmode=verify-full, the run's authority in sslrootcert);
//   - two server instances in --production on it, hosting an exported app folder whose links point
//     at the site (scripts/rehearsal/app-folder.mjs), mail going out over SMTP, each with a control
//     token: an operator reaches the inspector at an instance's own address, not through the site;
//   - nginx (Debian's; scripts/proxies.mjs finds it or, as root on Debian, installs it) with the site
//     configuration shipped in docker/nginx/app-services.conf, as it is: TLS with a certificate
//     made for the run, HTTP/2, the API balanced over both instances, the web app built for the
//     site with every VITE_ variable given;
//   - a real SMTP server, a process of its own (scripts/rehearsal/smtp-sink.mjs), whose received
//     messages the journeys read;
//   - the fake identity provider as a process of its own (`cli.js idp`), standing in for Google,
//     Apple and Facebook: the instances reach it only through its URLs (--identity-provider), as
//     they would reach the providers — discovery, keys, code exchange, Apple's client-secret JWT;
//   - the journeys (e2e/production/*.spec.ts), which kill an instance with SIGKILL and stop and
//     start PostgreSQL and the mail server through the rehearsal's own control endpoint.
//
// Each step is printed with how long it took; on failure, the last log lines of the instances, of
// nginx, of the mail server and of PostgreSQL, and all of them are kept in e2e/rehearsal-results/
// (logs/, and the failed journeys' screenshots in test-results/; `-- --trace on` adds traces).
//
//   npm run rehearse                       everything, then stop and clean up
//   npm run rehearse -- --serve            bring it up, print the site's address, run until Ctrl-C
//   npm run rehearse -- <playwright args>  e.g. -- --grep "killed" or -- --headed
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildBundle } from "../mock-server/scripts/build.mjs";
import { findBrowser } from "./ensure-browser.mjs";
import { localCertificate } from "./local-certificate.mjs";
import { startCluster } from "./postgres-cluster.mjs";
import { startNginx } from "./proxies.mjs";
import { exportAppFolder } from "./rehearsal/app-folder.mjs";
import { freePort } from "./system-packages.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2).filter((arg) => arg !== "--");
const serve = args.includes("--serve");
const playwrightArgs = args.filter((arg) => arg !== "--serve");
// On failure: the logs (logs/) beside Playwright's screenshots (test-results/).
const resultsDir = join(root, "e2e", "rehearsal-results", "logs");

// ---------------------------------------------------------------------------------------------------
// Steps and their timings

const started = Date.now();
const seconds = (since) => `${((Date.now() - since) / 1000).toFixed(1)}s`;

/**
 * Runs one step, printing its name and duration when it ends (steps run side by side print in the
 * order they finish).
 * @template T
 * @param {string} name
 * @param {() => Promise<T>} run
 * @returns {Promise<T>}
 */
async function step(name, run) {
  const t = Date.now();
  try {
    const result = await run();
    process.stdout.write(`  ✔ ${name} (${seconds(t)})\n`);
    return result;
  } catch (error) {
    process.stdout.write(`  ✖ ${name} (${seconds(t)})\n`);
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------------
// Processes of the run, their logs, and cleaning up

/** Last lines of each process's output, by name. */
const logs = new Map();
const logLimit = 400;

/** @param {string} name @param {string} text */
function record(name, text) {
  const lines = logs.get(name) ?? [];
  for (const line of text.split("\n")) if (line.trim()) lines.push(line);
  if (lines.length > logLimit) lines.splice(0, lines.length - logLimit);
  logs.set(name, lines);
}

/** @type {(() => Promise<void>)[]} */
const cleanups = [];
let cleaning = null;
const cleanUp = () => {
  cleaning ??= (async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  })();
  return cleaning;
};

/**
 * Starts a process of the run, its output kept under `name`; resolves once `ready` matches a line
 * of its stdout (with the match), rejects if it exits first.
 * @param {string} name
 * @param {string} command
 * @param {string[]} argv
 * @param {{ ready: RegExp, env?: NodeJS.ProcessEnv, cwd?: string, timeoutMs?: number }} options
 */
function startProcess(name, command, argv, { ready, env = {}, cwd = root, timeoutMs = 30_000 }) {
  const child = spawn(command, argv, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal)));
  let stdout = "";
  const readiness = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within ${timeoutMs} ms`)), timeoutMs);
    child.stdout.setEncoding("utf8").on("data", (text) => {
      record(name, text);
      stdout += text;
      const match = ready.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
    child.stderr.setEncoding("utf8").on("data", (text) => record(name, text));
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code}) before it was ready`));
    });
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
  };
  return { child, exited, ready: readiness, stop };
}

/**
 * Runs a command to its end, its output kept under `name`; resolves with its exit code.
 * @param {string} name @param {string} command @param {string[]} argv
 * @param {{ env?: NodeJS.ProcessEnv, cwd?: string }} [options]
 * @returns {Promise<number>}
 */
function runToEnd(name, command, argv, { env = {}, cwd = root } = {}) {
  const child = spawn(command, argv, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout.setEncoding("utf8").on("data", (text) => record(name, text));
  child.stderr.setEncoding("utf8").on("data", (text) => record(name, text));
  return new Promise((resolve) => {
    child.once("error", (error) => {
      record(name, error.message);
      resolve(127);
    });
    child.once("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

// ---------------------------------------------------------------------------------------------------
// The parts

/** The emulator's bundle, rebuilt only when an input changed (npm test has just built it). */
async function emulatorBundle() {
  return (await buildBundle()) ? "built" : "up to date";
}

/**
 * The web app built for the site, with every VITE_ variable given (web/.env.example): its backend
 * is the site itself, EmailJS the real service (which the journeys keep unreachable).
 * @param {string} site @param {string} appId @param {string} outDir
 */
async function buildWeb(site, appId, outDir) {
  const env = {
    VITE_APP_SERVICES_BASE_URL: site,
    VITE_APP_SERVICES_APP_ID: appId,
    VITE_EMAILJS_ORIGIN: "https://api.emailjs.com",
    VITE_EMAILJS_PUBLIC_KEY: "rehearsal-public-key",
    VITE_EMAILJS_SERVICE_ID: "service_rehearsal",
    VITE_EMAILJS_CONTACT_TEMPLATE_ID: "template_contact",
    VITE_EMAILJS_NOTE_TEMPLATE_ID: "template_note",
    VITE_AUTH_CONFIRMATION: "email",
    VITE_AUTH_RESET: "email",
    VITE_AUTH_PROVIDERS: "google,apple,facebook",
  };
  const vite = join(root, "node_modules/.bin/vite");
  const built = await runToEnd(
    "web build",
    vite,
    ["build", "--outDir", outDir, "--emptyOutDir", "--logLevel", "warn"],
    {
      env,
      cwd: join(root, "web"),
    },
  );
  if (built !== 0) throw new Error("the web app did not build");
  const checked = await runToEnd("web build", process.execPath, ["web/scripts/check-no-harness-defaults.mjs", outDir], {
    env,
  });
  if (checked !== 0) throw new Error("the web app's build carries harness defaults");
}

/**
 * One server instance in production mode on a fixed port (nginx's upstream names it).
 * @param {string} name
 * @param {number} port
 * @param {{ databaseUrl: string, appDir: string, site: string, smtpPort: number, identityProvider: string }} settings
 */
async function startInstance(name, port, { databaseUrl, appDir, site, smtpPort, identityProvider }) {
  const instance = startProcess(
    name,
    process.execPath,
    [
      "mock-server/dist/cli.js",
      "--production",
      "--port",
      String(port),
      "--database",
      databaseUrl,
      "--app",
      appDir,
      "--public-url",
      site,
      "--trust-proxy",
      "127.0.0.1",
      "--smtp",
      `smtp://127.0.0.1:${smtpPort}`,
      "--metrics-address",
      "127.0.0.1:0",
      "--identity-provider",
      identityProvider,
      // The journeys sign in more often than production's 10 a minute from one address (loopback).
      "--auth-rate-limit",
      "60/1m",
    ],
    {
      ready: /metrics\s+(http:\/\/\S+\/metrics)/,
      env: {
        MOCK_SIGNING_SECRET: tokenSecrets.signing,
        MOCK_SIGNING_SECRET_FALLBACKS: tokenSecrets.fallbacks.join(","),
        MOCK_CONTROL_TOKEN: controlToken,
      },
    },
  );
  const [, metricsUrl] = await instance.ready;
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  while ((await fetch(`${url}/_mock/v1/ready`).catch(() => null))?.status !== 200) {
    if (Date.now() > deadline) throw new Error(`${name} was not ready within 20 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { name, port, url, metricsUrl, ...instance };
}

const newSecret = () => randomBytes(32).toString("hex");
/** The instances' control token (the control API and inspector exist in production only with one). */
const controlToken = randomBytes(24).toString("hex");

/**
 * The instances' token secrets, rotated by the journeys as docs/production.md#operations says: each
 * step is applied, then every instance restarted in turn with it.
 */
const tokenSecrets = { signing: newSecret(), fallbacks: /** @type {string[]} */ ([]), next: newSecret() };
const rotationSteps = {
  /** Every instance accepts the next secret's tokens too, still signing with its own. */
  "accept-next": () => {
    tokenSecrets.fallbacks = [tokenSecrets.next];
  },
  /** Every instance signs with the next secret, and accepts the previous one's tokens. */
  "sign-next": () => {
    tokenSecrets.fallbacks = [tokenSecrets.signing];
    tokenSecrets.signing = tokenSecrets.next;
    tokenSecrets.next = newSecret();
  },
  /** The previous secret's tokens are refused. */
  "drop-previous": () => {
    tokenSecrets.fallbacks = [];
  },
};

/**
 * What the journeys may do to the deployment (faults and their repair), over HTTP on loopback:
 *   GET  /ready                        answered once the deployment is up (500 if it did not come up)
 *   GET  /instances                    [{name, url, metricsUrl, running}]
 *   POST /instances/{name}/kill        SIGKILL, answered once it is gone
 *   POST /instances/{name}/start       started again on its port, answered once it is ready
 *   POST /postgres/stop, /postgres/start
 *   POST /smtp/stop, /smtp/start       the mail server gone (connections refused) and back on its port
 *   POST /signing-secret/{step}        a step of a rotation of the token secret (accept-next,
 *                                      sign-next, drop-previous), each instance restarted in turn
 * @param {{ ready: Promise<void>, instances: Map<string, any>, restart: (name: string) => Promise<void>, cluster: any, smtp: any }} deployment
 * @returns {Promise<import("node:http").Server>}
 */
function controlServer(deployment) {
  const server = createServer(async (request, response) => {
    const answer = (status, body) =>
      response
        .writeHead(status, { "content-type": "application/json" })
        .end(body === undefined ? "" : JSON.stringify(body));
    try {
      const url = request.url ?? "";
      const instance = /^\/instances\/([^/]+)\/(kill|start)$/.exec(url);
      if (request.method === "GET" && url === "/ready") {
        await deployment.ready;
        return answer(200, { status: "ready" });
      }
      if (request.method === "GET" && url === "/instances") {
        return answer(
          200,
          [...deployment.instances.values()].map((i) => ({
            name: i.name,
            url: i.url,
            metricsUrl: i.metricsUrl,
            running: i.child.exitCode === null && i.child.signalCode === null,
          })),
        );
      }
      if (request.method === "POST" && instance) {
        const [, name, action] = instance;
        const target = deployment.instances.get(name);
        if (!target) return answer(404, { error: `no instance ${name}` });
        if (action === "kill") {
          target.child.kill("SIGKILL");
          await target.exited;
        } else await deployment.restart(name);
        return answer(204);
      }
      if (request.method === "POST" && url === "/postgres/stop") {
        await deployment.cluster.stopServer();
        return answer(204);
      }
      if (request.method === "POST" && url === "/postgres/start") {
        await deployment.cluster.startServer();
        return answer(204);
      }
      if (request.method === "POST" && url === "/smtp/stop") {
        await deployment.smtp.stop();
        return answer(204);
      }
      if (request.method === "POST" && url === "/smtp/start") {
        await deployment.smtp.start();
        return answer(204);
      }
      const rotation = /^\/signing-secret\/([a-z-]+)$/.exec(url);
      if (request.method === "POST" && rotation && Object.hasOwn(rotationSteps, rotation[1])) {
        rotationSteps[/** @type {keyof typeof rotationSteps} */ (rotation[1])]();
        for (const name of deployment.instances.keys()) await deployment.restart(name);
        return answer(204);
      }
      return answer(404, { error: `no route ${request.method} ${url}` });
    } catch (error) {
      return answer(500, { error: error instanceof Error ? error.message : String(error) });
    }
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/**
 * Starts the journeys (Playwright with e2e/production.config.ts): at once, so that Playwright loads
 * and launches its browser while the deployment comes up; its global setup waits until it is.
 * @param {Record<string, string>} env
 * @returns {{ exit: Promise<number>, stop: () => void }}
 */
function startJourneys(env) {
  const playwright = join(
    dirname(createRequire(join(root, "e2e/package.json")).resolve("@playwright/test/package.json")),
    "cli.js",
  );
  const run = spawn(
    process.execPath,
    [playwright, "test", "--config", join(root, "e2e/production.config.ts"), ...playwrightArgs],
    {
      cwd: root,
      stdio: "inherit",
      env: { ...process.env, ...env },
    },
  );
  return {
    exit: new Promise((resolve) => run.once("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)))),
    stop: () => run.kill("SIGTERM"),
  };
}

// ---------------------------------------------------------------------------------------------------
// The rehearsal

async function main() {
  process.stdout.write("Production rehearsal\n");
  const work = mkdtempSync(join(tmpdir(), "rehearsal-"));
  cleanups.push(async () => rmSync(work, { recursive: true, force: true }));
  const mailDir = join(work, "mail");
  mkdirSync(mailDir);

  if (!findBrowser() && !serve) {
    if ((await runToEnd("browser", process.execPath, ["scripts/ensure-browser.mjs"])) !== 0)
      throw new Error((logs.get("browser") ?? []).join("\n"));
  }

  // What the journeys reach through the control endpoint, filled in as the deployment comes up.
  /** @type {(value?: unknown) => void} */
  let markReady = () => {};
  /** @type {(error: unknown) => void} */
  let markFailed = () => {};
  const deployment = {
    ready: new Promise((resolve, reject) => {
      markReady = resolve;
      markFailed = reject;
    }),
    /** @type {Map<string, any>} */
    instances: new Map(),
    cluster: /** @type {any} */ (null),
    /** The mail server: stopped and started again on its port by the journeys. */
    smtp: /** @type {any} */ (null),
    restart: async (/** @type {string} */ name) => {
      const old = deployment.instances.get(name);
      await old.stop();
      await launch(name, old.port);
    },
  };
  deployment.ready.catch(() => undefined);
  const control = await controlServer(deployment);
  cleanups.push(async () => new Promise((resolve) => control.close(() => resolve(undefined))));
  const controlUrl = `http://127.0.0.1:${/** @type {import("node:net").AddressInfo} */ (control.address()).port}`;

  // nginx first: its port is the site's origin, which everything else is built and started for.
  // The instances' ports are chosen now too (nginx's upstream names them).
  const instancePorts = [await freePort(), await freePort()];
  // The identity provider's too, so the journeys know it from the start. An address, not
  // `localhost`: the site's HSTS holds for every port of its host name.
  const identityProvider = `http://127.0.0.1:${await freePort()}/_mock/idp/rehearsal`;
  const certificate = await step("certificate for localhost", localCertificate);
  const nginx = await step("nginx with docker/nginx/app-services.conf", () =>
    startNginx({
      // The shipped file as it is, and this site's parts beside it (see its header).
      files: ([port]) => ({
        "conf.d/app-services.conf": readFileSync(join(root, "docker/nginx/app-services.conf")),
        "site/server.conf": `listen 127.0.0.1:${port} ssl http2;\nserver_name localhost;\naccess_log access.log app_services;\n`,
        "site/upstream.conf": instancePorts.map((p) => `server 127.0.0.1:${p} max_fails=0;\n`).join(""),
        "site/tls.crt": certificate.cert,
        "site/tls.key": certificate.key,
      }),
      http: () => "  include conf.d/app-services.conf;",
    }),
  );
  cleanups.push(async () => {
    record("nginx", nginx.errorLog());
    record("nginx access", nginx.accessLog());
    await nginx.stop();
  });
  const site = `https://localhost:${nginx.ports[0]}`;
  const appDir = join(work, "app");
  const { appId } = exportAppFolder({ dir: appDir, site });

  const journeys = serve
    ? null
    : startJourneys({
        REHEARSAL_SITE: site,
        REHEARSAL_APP_ID: appId,
        REHEARSAL_CONTROL: controlUrl,
        REHEARSAL_MAIL_DIR: mailDir,
        REHEARSAL_IDENTITY_PROVIDER: identityProvider,
        REHEARSAL_CONTROL_TOKEN: controlToken,
      });
  if (journeys) cleanups.push(async () => journeys.stop());

  // Side by side: the web build, and the database, mail server and bundle the instances need.
  let settings;
  const launch = async (/** @type {string} */ name, /** @type {number} */ port) => {
    const instance = await startInstance(name, port, settings);
    deployment.instances.set(name, instance);
    return instance;
  };
  cleanups.push(async () => {
    await Promise.all([...deployment.instances.values()].map((i) => i.stop()));
  });
  const backend = async () => {
    const [cluster, smtp] = await Promise.all([
      step("PostgreSQL cluster", async () => {
        // Reached over TLS, its certificate checked (docs/production.md): the site's, made for this run.
        const started = await startCluster({
          inMemory: true,
          tls: certificate,
        });
        cleanups.push(async () => {
          record("postgres", started.serverLog());
          await started.stop();
        });
        return started;
      }),
      step("SMTP server", async () => {
        const startSink = async (/** @type {number} */ port) => {
          const sink = startProcess(
            "smtp",
            process.execPath,
            ["scripts/rehearsal/smtp-sink.mjs", "--dir", mailDir, "--port", String(port)],
            { ready: /smtp listening on (\d+)/ },
          );
          const [, listening] = await sink.ready;
          return { ...sink, port: Number(listening) };
        };
        let sink = await startSink(0);
        deployment.smtp = {
          stop: () => sink.stop(),
          start: async () => {
            await sink.stop();
            sink = await startSink(sink.port);
          },
        };
        cleanups.push(() => sink.stop());
        return { port: sink.port };
      }),
      step("emulator bundle", emulatorBundle),
    ]);
    deployment.cluster = cluster;
    await step("fake identity provider as a process (Google, Apple, Facebook)", async () => {
      const idp = startProcess(
        "identity provider",
        process.execPath,
        ["mock-server/dist/cli.js", "idp", "--port", new URL(identityProvider).port, "--app", appDir],
        { ready: /listening on (http:\/\/\S+)/ },
      );
      cleanups.push(idp.stop);
      await idp.ready;
    });
    const authority = join(work, "database-authority.crt");
    writeFileSync(authority, certificate.cert);
    const databaseUrl = `${cluster.url}?sslmode=verify-full&sslrootcert=${encodeURIComponent(authority)}`;
    settings = { databaseUrl, appDir, site, smtpPort: smtp.port, identityProvider };
    await step("two instances in --production", () =>
      Promise.all([launch("instance-a", instancePorts[0]), launch("instance-b", instancePorts[1])]),
    );
    await step("their database connections encrypted", async () => {
      const pg = createRequire(join(root, "mock-server/package.json"))("pg");
      const client = new pg.Client({ connectionString: cluster.url });
      await client.connect();
      try {
        const { rows } = await client.query(
          `SELECT count(*)::int AS connections, count(*) FILTER (WHERE s.ssl)::int AS encrypted
             FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
            WHERE a.application_name LIKE 'app-services-emulator%'`,
        );
        const { connections, encrypted } = rows[0];
        if (connections === 0 || encrypted !== connections)
          throw new Error(`${encrypted} of the instances' ${connections} database connections are encrypted`);
      } finally {
        await client.end();
      }
    });
  };
  try {
    await Promise.all([
      backend(),
      step("web app built for the site", () => buildWeb(site, appId, join(nginx.dir, "html"))),
    ]);
  } catch (error) {
    markFailed(error);
    throw error;
  }
  markReady();

  if (serve) {
    process.stdout.write(
      `\n  site        ${site}  (a certificate made for this run: accept it in the browser)\n` +
        `  instances   ${[...deployment.instances.values()].map((i) => `${i.url} (metrics ${i.metricsUrl})`).join(", ")}\n` +
        `  database    ${settings.databaseUrl}  (as the instances reach it)\n  mail        ${mailDir}\n  faults      ${controlUrl}\n` +
        `  providers   ${identityProvider} (Google, Apple, Facebook: pick or add any account)\n\nCtrl-C stops it.\n`,
    );
    await new Promise((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
    return 0;
  }

  // (Playwright started with the deployment; from here its tests run.)
  return step("journeys (@production)", async () => {
    const exit = await /** @type {NonNullable<typeof journeys>} */ (journeys).exit;
    if (exit !== 0) throw new Error(`the journeys failed (exit ${exit})`);
    return exit;
  });
}

/** Prints the last lines of every log and keeps all of them in e2e/rehearsal-results/. */
function report() {
  rmSync(resultsDir, { recursive: true, force: true });
  mkdirSync(resultsDir, { recursive: true });
  for (const [name, lines] of logs) {
    writeFileSync(join(resultsDir, `${name.replace(/\W+/g, "-")}.log`), `${lines.join("\n")}\n`);
    const last = lines.slice(-25).map((line) => (line.length > 400 ? `${line.slice(0, 400)}…` : line));
    process.stderr.write(`\n── ${name}: last lines ──\n${last.join("\n")}\n`);
  }
  process.stderr.write(`\nAll logs: ${resultsDir}\n`);
}

for (const signal of ["SIGINT", "SIGTERM"])
  process.on(signal, () => {
    if (serve) return;
    void cleanUp().then(() => process.exit(signal === "SIGINT" ? 130 : 143));
  });

/** Stops everything the run started, prints the logs, and exits with 1. */
async function fail(/** @type {unknown} */ error) {
  process.stderr.write(
    `\nRehearsal failed after ${seconds(started)}: ${error instanceof Error ? error.message : error}\n`,
  );
  await cleanUp();
  report();
  process.exit(1);
}
// A promise that failed outside main() must not leave the processes of the run behind either.
process.on("unhandledRejection", (error) => void fail(error));

main().then(async (code) => {
  await cleanUp();
  process.stdout.write(`Rehearsal passed in ${seconds(started)}\n`);
  process.exit(code);
}, fail);
