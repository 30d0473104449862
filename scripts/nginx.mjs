#!/usr/bin/env node
// nginx for the proxy tests and the production rehearsal: finds it ($NGINX, /usr/sbin/nginx, PATH)
// or, as root on Debian, installs Debian's `nginx` package; otherwise stops with what to install.
// Never downloads anything else.
//
//   node scripts/nginx.mjs --check      only make sure nginx exists, print where
//
// startNginx() runs one from a temporary folder of its own: in the foreground (our child, stopped by
// PID), its pid file, logs and temporary paths inside the folder (the defaults point under
// /var/lib/nginx), on free loopback ports, with the caller's `http` block — the folder is the
// configuration prefix, so the caller's relative `include`s and certificate paths are files in it.
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { aptInstall, freePort, isAlive, isRootOnDebian } from "./system-packages.mjs";

const TEMP_PREFIX = "harness-nginx-";
const LOG_LIMIT = 64 * 1024;

/**
 * @typedef {object} NginxBinary
 * @property {string} path
 * @property {string} version for example "1.22.1"
 * @property {string | null} mimeTypes the package's mime.types, when it has one
 */

/** @param {string} path @returns {NginxBinary | null} */
function binaryAt(path) {
  const result = spawnSync(path, ["-V"], { encoding: "utf8", timeout: 10_000 });
  if (result.status !== 0) return null;
  const text = `${result.stdout}${result.stderr}`;
  const version = /nginx\/(\S+)/.exec(text)?.[1] ?? "unknown";
  const confPath = /--conf-path=(\S+)/.exec(text)?.[1];
  const mimeTypes = confPath ? join(dirname(confPath), "mime.types") : null;
  return { path, version, mimeTypes: mimeTypes && existsSync(mimeTypes) ? mimeTypes : null };
}

/** Finds nginx: $NGINX, /usr/sbin/nginx, then PATH. @returns {NginxBinary | null} */
export function findNginx() {
  const candidates = [
    process.env.NGINX,
    "/usr/sbin/nginx",
    ...(process.env.PATH ?? "").split(delimiter).map((dir) => dir && join(dir, "nginx")),
  ];
  for (const path of candidates) {
    if (path && existsSync(path)) {
      const found = binaryAt(path);
      if (found) return found;
    }
  }
  return null;
}

/**
 * Like findNginx(), but installs Debian's `nginx` package when nothing is found and we are root on
 * Debian; otherwise throws an Error saying what to install.
 * @param {{ log?: (line: string) => void }} [options]
 * @returns {NginxBinary}
 */
export function ensureNginx(options = {}) {
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  let found = findNginx();
  if (!found && isRootOnDebian()) {
    log("No nginx found: installing Debian's nginx package (about 10 s)…");
    aptInstall(["nginx"]);
    found = findNginx();
  }
  if (!found) {
    throw new Error(
      "The proxy tests and the production rehearsal need nginx and none was found.\n" +
        "  Debian/Ubuntu:  sudo apt-get install nginx\n" +
        "  or set NGINX to an nginx binary.",
    );
  }
  return found;
}

// ---------------------------------------------------------------------------------------------------------
// Running one

/** @type {Set<() => void>} */
const live = new Set();
let exitHandler = false;

/** Removes folders of runs whose owner is gone (SIGKILLed), stopping their nginx. */
function sweepAbandoned(/** @type {string} */ base) {
  let names;
  try {
    names = readdirSync(base).filter((name) => name.startsWith(TEMP_PREFIX));
  } catch {
    return;
  }
  for (const name of names) {
    const dir = join(base, name);
    try {
      const owner = Number(readFileSync(join(dir, "owner.pid"), "utf8").trim());
      if (!Number.isInteger(owner) || owner <= 0 || isAlive(owner)) continue;
      try {
        const pid = Number(readFileSync(join(dir, "nginx.pid"), "utf8").trim());
        if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dir)) process.kill(pid, "SIGTERM");
      } catch {
        // no nginx left running for it
      }
      rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
    } catch {
      // not ours or already gone
    }
  }
}

/** Whether something accepts connections on 127.0.0.1:port. @param {number} port */
function accepts(port) {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/**
 * @typedef {object} StartNginxOptions
 * @property {(ports: number[], dir: string) => string} http the `http { … }` block's contents for these
 *   free ports (the caller's `listen` lines use them); `dir` is the configuration folder
 * @property {number} [ports] how many free ports to pick (default 1); the first is waited for
 * @property {Record<string, string | Buffer> | ((ports: number[]) => Record<string, string | Buffer>)} [files]
 *   files to write into the folder (relative paths) before nginx starts, or a function of its ports
 * @property {(line: string) => void} [log] receives progress lines
 * @property {number} [readyTimeoutMs] default 10 000
 */

/**
 * @typedef {object} RunningNginx
 * @property {string} dir its folder (configuration prefix, logs, temporary paths)
 * @property {number[]} ports
 * @property {NginxBinary} binary
 * @property {() => number | null} pid the master's PID while it runs
 * @property {() => string} errorLog the last ~64 KB of its error log (stderr)
 * @property {() => string} accessLog its access log
 * @property {() => Promise<void>} stop fast shutdown (SIGTERM), then the folder is removed
 */

/**
 * Starts nginx in a new temporary folder on free loopback ports, and waits until it accepts
 * connections on the first. A port taken meanwhile by someone else: tries other ports.
 * @param {StartNginxOptions} options
 * @returns {Promise<RunningNginx>}
 */
export async function startNginx(options) {
  const binary = ensureNginx(options.log ? { log: options.log } : {});
  const base = tmpdir();
  sweepAbandoned(base);
  const dir = mkdtempSync(join(base, TEMP_PREFIX));
  // As root, nginx's workers run as `nobody`: they must reach the folder (and what is served from it).
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, "owner.pid"), `${process.pid}\n`);
  mkdirSync(join(dir, "temp"));

  let errorLog = "";
  /** @type {import("node:child_process").ChildProcess | null} */
  let child = null;
  const running = () => child !== null && child.exitCode === null && child.signalCode === null;
  const removeFolder = () => rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
  const cleanupSync = () => {
    if (running()) child?.kill("SIGTERM");
    removeFolder();
  };
  live.add(cleanupSync);
  if (!exitHandler) {
    exitHandler = true;
    process.on("exit", () => {
      for (const cleanup of [...live]) cleanup();
    });
  }

  /** @param {number[]} ports */
  const launch = async (ports) => {
    const files = typeof options.files === "function" ? options.files(ports) : (options.files ?? {});
    for (const [name, content] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), content);
    }
    writeFileSync(join(dir, "nginx.conf"), mainConfig(binary, options.http(ports, dir)));
    errorLog = "";
    const server = spawn(binary.path, ["-p", `${dir}/`, "-c", join(dir, "nginx.conf"), "-e", "stderr"], {
      cwd: dir,
      stdio: ["ignore", "ignore", "pipe"],
    });
    child = server;
    server.stderr?.setEncoding("utf8").on("data", (text) => {
      errorLog = (errorLog + text).slice(-LOG_LIMIT);
    });
    const exited = new Promise((resolve) => server.once("exit", resolve));
    const deadline = Date.now() + (options.readyTimeoutMs ?? 10_000);
    while (Date.now() < deadline && running()) {
      if (await accepts(/** @type {number} */ (ports[0]))) return true;
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 20))]);
    }
    if (running()) {
      server.kill("SIGTERM");
      await exited;
      throw new Error(`nginx did not accept connections within ${options.readyTimeoutMs ?? 10_000} ms:\n${errorLog}`);
    }
    if (/Address already in use/.test(errorLog)) return false;
    throw new Error(`nginx did not start (exit ${server.exitCode ?? server.signalCode}):\n${errorLog}`);
  };

  /** @type {number[]} */
  let ports = [];
  try {
    for (let attempt = 1; ; attempt++) {
      ports = [];
      for (let i = 0; i < (options.ports ?? 1); i++) ports.push(await freePort());
      if (await launch(ports)) break;
      if (attempt >= 5) throw new Error(`nginx found no free ports in 5 attempts:\n${errorLog}`);
      options.log?.("a port was taken meanwhile: trying others");
    }
  } catch (error) {
    live.delete(cleanupSync);
    removeFolder();
    throw error;
  }
  options.log?.(`nginx ${binary.version} on 127.0.0.1:${ports.join(", ")} (${dir})`);

  return {
    dir,
    ports,
    binary,
    pid: () => (running() ? (child?.pid ?? null) : null),
    errorLog: () => errorLog,
    accessLog: () => {
      try {
        return readFileSync(join(dir, "access.log"), "utf8");
      } catch {
        return "";
      }
    },
    stop: async () => {
      const server = child;
      if (server && running()) {
        const exited = new Promise((resolve) => server.once("exit", resolve));
        server.kill("SIGTERM");
        await exited;
      }
      live.delete(cleanupSync);
      removeFolder();
    },
  };
}

/**
 * The main context around the caller's `http` block: in the foreground, one worker, everything it
 * writes inside its folder (relative paths resolve against the `-p` prefix), the package's MIME types.
 * @param {NginxBinary} binary
 * @param {string} http
 */
function mainConfig(binary, http) {
  return `# Written by scripts/nginx.mjs for one run.
daemon off;
worker_processes 1;
pid nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
  ${binary.mimeTypes ? `include ${binary.mimeTypes};` : "types { text/html html; text/css css; application/javascript js; application/json json map; image/svg+xml svg; }"}
  default_type application/octet-stream;
  access_log access.log;
  client_body_temp_path temp/client_body;
  proxy_temp_path temp/proxy;
  fastcgi_temp_path temp/fastcgi;
  uwsgi_temp_path temp/uwsgi;
  scgi_temp_path temp/scgi;
${http}
}
`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] !== "--check") {
    process.stderr.write("usage: node scripts/nginx.mjs --check\n");
    process.exit(2);
  }
  try {
    const found = ensureNginx();
    process.stdout.write(`nginx ${found.version}: ${found.path}\n`);
  } catch (error) {
    process.stderr.write(`${/** @type {Error} */ (error).message}\n`);
    process.exit(1);
  }
}
