#!/usr/bin/env node
// The reverse proxies of the proxy tests and the production rehearsal: nginx and Caddy, Debian's
// packages. Each is found ($NGINX / $CADDY, the package's path, PATH) or, as root on Debian,
// installed; otherwise we stop with what to install. Nothing else is downloaded.
//
//   node scripts/proxies.mjs --check      make sure both exist, print where
//
// startNginx() and startCaddy() run one from a temporary folder of their own: in the foreground (our
// child, stopped by PID), everything it writes inside the folder, on free loopback ports. For nginx
// the folder is the configuration prefix, so relative `include`s and certificate paths are files in it.
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { aptInstall, freePort, isRootOnDebian, killIfRunningIn, sweepAbandoned } from "./system-packages.mjs";

const LOG_LIMIT = 64 * 1024;

/**
 * @typedef {object} ProxyBinary
 * @property {string} path
 * @property {string} version for example "1.22.1"
 * @property {string | null} mimeTypes nginx: the package's mime.types, when it has one
 */

/**
 * @typedef {object} Proxy
 * @property {string} name
 * @property {string} envVar where a path can be given
 * @property {string[]} paths where Debian's package puts it
 * @property {string} debianPackage
 * @property {(path: string) => ProxyBinary | null} probe
 */

/** @type {Record<"nginx" | "caddy", Proxy>} */
const proxies = {
  nginx: {
    name: "nginx",
    envVar: "NGINX",
    paths: ["/usr/sbin/nginx"],
    debianPackage: "nginx",
    probe(path) {
      const result = spawnSync(path, ["-V"], { encoding: "utf8", timeout: 10_000 });
      if (result.status !== 0) return null;
      const text = `${result.stdout}${result.stderr}`;
      const confPath = /--conf-path=(\S+)/.exec(text)?.[1];
      const mimeTypes = confPath ? join(dirname(confPath), "mime.types") : null;
      return {
        path,
        version: /nginx\/(\S+)/.exec(text)?.[1] ?? "unknown",
        mimeTypes: mimeTypes && existsSync(mimeTypes) ? mimeTypes : null,
      };
    },
  },
  caddy: {
    name: "Caddy",
    envVar: "CADDY",
    paths: ["/usr/bin/caddy"],
    debianPackage: "caddy",
    probe(path) {
      const result = spawnSync(path, ["version"], { encoding: "utf8", timeout: 10_000 });
      if (result.status !== 0) return null;
      return { path, version: /v?(\d+\.\d+\.\d+)/.exec(result.stdout)?.[1] ?? "unknown", mimeTypes: null };
    },
  },
};

/** @param {Proxy} proxy @returns {ProxyBinary | null} */
function find(proxy) {
  const command = proxy.debianPackage;
  const candidates = [
    process.env[proxy.envVar],
    ...proxy.paths,
    ...(process.env.PATH ?? "").split(delimiter).map((dir) => dir && join(dir, command)),
  ];
  for (const path of candidates) {
    if (path && existsSync(path)) {
      const found = proxy.probe(path);
      if (found) return found;
    }
  }
  return null;
}

/**
 * The proxies found, installing the missing ones (one apt-get run) as root on Debian; throws what to
 * install otherwise.
 * @param {("nginx" | "caddy")[]} names
 * @param {{ log?: (line: string) => void }} [options]
 * @returns {Record<string, ProxyBinary>}
 */
export function ensureProxies(names, options = {}) {
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  const missing = names.filter((name) => !find(proxies[name]));
  if (missing.length > 0 && isRootOnDebian()) {
    log(`Not found: ${missing.join(", ")}. Installing Debian's package${missing.length > 1 ? "s" : ""} (about 10 s)…`);
    aptInstall(missing.map((name) => proxies[name].debianPackage));
  }
  /** @type {Record<string, ProxyBinary>} */
  const found = {};
  for (const name of names) {
    const binary = find(proxies[name]);
    if (!binary) {
      const proxy = proxies[name];
      throw new Error(
        `The proxy tests and the production rehearsal need ${proxy.name} and none was found.\n` +
          `  Debian/Ubuntu:  sudo apt-get install ${proxy.debianPackage}\n` +
          `  or set ${proxy.envVar} to its binary.`,
      );
    }
    found[name] = binary;
  }
  return found;
}

export const ensureNginx = (/** @type {{ log?: (line: string) => void }} */ options = {}) =>
  /** @type {ProxyBinary} */ (ensureProxies(["nginx"], options).nginx);
export const ensureCaddy = (/** @type {{ log?: (line: string) => void }} */ options = {}) =>
  /** @type {ProxyBinary} */ (ensureProxies(["caddy"], options).caddy);

// ---------------------------------------------------------------------------------------------------------
// Running one

/** @type {Set<() => void>} */
const live = new Set();
let exitHandler = false;

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
 * @typedef {object} RunningProxy
 * @property {string} dir its folder
 * @property {number[]} ports
 * @property {ProxyBinary} binary
 * @property {() => number | null} pid its PID while it runs
 * @property {() => string} errorLog the last ~64 KB of what it wrote to stderr (nginx's error log)
 * @property {() => string} accessLog nginx: its access log (access.log in the folder)
 * @property {() => Promise<void>} stop stopped (SIGTERM), then the folder is removed
 */

/**
 * @typedef {object} LaunchSpec
 * @property {ProxyBinary} binary
 * @property {string} prefix of the temporary folder's name
 * @property {number} ports
 * @property {Record<string, string | Buffer> | ((ports: number[]) => Record<string, string | Buffer>)} [files]
 * @property {(ports: number[], dir: string) => { args: string[], env?: NodeJS.ProcessEnv }} command
 * @property {(line: string) => void} [log]
 * @property {number} [readyTimeoutMs]
 */

/**
 * A proxy in a new temporary folder on free loopback ports, ready once the first accepts
 * connections; a port taken meanwhile by someone else: other ports are tried.
 * @param {LaunchSpec} spec
 * @returns {Promise<RunningProxy>}
 */
async function launchProxy(spec) {
  const base = tmpdir();
  // Folders of runs killed with SIGKILL: their proxy stopped, the folder removed.
  sweepAbandoned(base, spec.prefix, (dir) => killIfRunningIn(join(dir, "proxy.pid"), dir, "SIGTERM"));
  const dir = mkdtempSync(join(base, spec.prefix));
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
  const readyTimeoutMs = spec.readyTimeoutMs ?? 10_000;

  /** @param {number[]} ports */
  const launch = async (ports) => {
    const files = typeof spec.files === "function" ? spec.files(ports) : (spec.files ?? {});
    for (const [name, content] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), content);
    }
    const { args, env = {} } = spec.command(ports, dir);
    errorLog = "";
    const server = spawn(spec.binary.path, args, {
      cwd: dir,
      env: { ...process.env, ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    child = server;
    if (server.pid) writeFileSync(join(dir, "proxy.pid"), `${server.pid}\n`);
    server.stderr?.setEncoding("utf8").on("data", (text) => {
      errorLog = (errorLog + text).slice(-LOG_LIMIT);
    });
    const exited = new Promise((resolve) => server.once("exit", resolve));
    const deadline = Date.now() + readyTimeoutMs;
    while (Date.now() < deadline && running()) {
      if (await accepts(/** @type {number} */ (ports[0]))) return true;
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 20))]);
    }
    if (running()) {
      server.kill("SIGTERM");
      await exited;
      throw new Error(`${spec.binary.path} did not accept connections within ${readyTimeoutMs} ms:\n${errorLog}`);
    }
    if (/address already in use/i.test(errorLog)) return false;
    throw new Error(`${spec.binary.path} did not start (exit ${server.exitCode ?? server.signalCode}):\n${errorLog}`);
  };

  /** @type {number[]} */
  let ports = [];
  try {
    for (let attempt = 1; ; attempt++) {
      ports = [];
      for (let i = 0; i < spec.ports; i++) ports.push(await freePort());
      if (await launch(ports)) break;
      if (attempt >= 5) throw new Error(`no free ports in 5 attempts:\n${errorLog}`);
      spec.log?.("a port was taken meanwhile: trying others");
    }
  } catch (error) {
    live.delete(cleanupSync);
    removeFolder();
    throw error;
  }
  spec.log?.(`${spec.binary.path} ${spec.binary.version} on 127.0.0.1:${ports.join(", ")} (${dir})`);

  return {
    dir,
    ports,
    binary: spec.binary,
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
 * @typedef {object} StartOptions
 * @property {number} [ports] how many free ports to pick (default 1); the first is waited for
 * @property {Record<string, string | Buffer> | ((ports: number[]) => Record<string, string | Buffer>)} [files]
 *   files to write into the folder (relative paths) before it starts, or a function of its ports
 * @property {(line: string) => void} [log] receives progress lines
 * @property {number} [readyTimeoutMs] default 10 000
 */

/**
 * nginx, with the caller's `http` block inside a main context of ours: in the foreground, one
 * worker, its pid file, logs and temporary paths in its folder, the package's MIME types.
 * @param {StartOptions & { http: (ports: number[], dir: string) => string }} options
 * @returns {Promise<RunningProxy>}
 */
export function startNginx(options) {
  const binary = ensureNginx(options.log ? { log: options.log } : {});
  const types = binary.mimeTypes
    ? `include ${binary.mimeTypes};`
    : "types { text/html html; text/css css; application/javascript js; application/json json map; image/svg+xml svg; }";
  return launchProxy({
    ...options,
    binary,
    prefix: "harness-nginx-",
    ports: options.ports ?? 1,
    command: (ports, dir) => {
      writeFileSync(
        join(dir, "nginx.conf"),
        `# Written by scripts/proxies.mjs for one run.
daemon off;
worker_processes 1;
pid nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
  ${types}
  default_type application/octet-stream;
  access_log access.log;
  client_body_temp_path temp/client_body;
  proxy_temp_path temp/proxy;
  fastcgi_temp_path temp/fastcgi;
  uwsgi_temp_path temp/uwsgi;
  scgi_temp_path temp/scgi;
${options.http(ports, dir)}
}
`,
      );
      return { args: ["-p", `${dir}/`, "-c", join(dir, "nginx.conf"), "-e", "stderr"] };
    },
  });
}

/**
 * Caddy with the caller's Caddyfile site blocks, after global options of ours: no admin endpoint
 * (its default port would collide with other runs), no automatic HTTPS (certificates come from the
 * caller), HTTP/1.1 and HTTP/2, its data and configuration in its folder.
 * @param {StartOptions & { sites: (ports: number[], dir: string) => string }} options
 * @returns {Promise<RunningProxy>}
 */
export function startCaddy(options) {
  const binary = ensureCaddy(options.log ? { log: options.log } : {});
  return launchProxy({
    ...options,
    binary,
    prefix: "harness-caddy-",
    ports: options.ports ?? 1,
    command: (ports, dir) => {
      // No automatic HTTPS either: it would bind ports 80 and 443 and ask for certificates.
      const global = "{\n\tadmin off\n\tauto_https off\n\tservers {\n\t\tprotocols h1 h2\n\t}\n}\n";
      writeFileSync(join(dir, "Caddyfile"), `${global}${options.sites(ports, dir)}\n`);
      return {
        args: ["run", "--config", join(dir, "Caddyfile"), "--adapter", "caddyfile"],
        env: { HOME: dir, XDG_DATA_HOME: join(dir, "data"), XDG_CONFIG_HOME: join(dir, "config") },
      };
    },
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] !== "--check") {
    process.stderr.write("usage: node scripts/proxies.mjs --check\n");
    process.exit(2);
  }
  try {
    for (const [name, binary] of Object.entries(ensureProxies(["nginx", "caddy"])))
      process.stdout.write(`${name} ${binary.version}: ${binary.path}\n`);
  } catch (error) {
    process.stderr.write(`${/** @type {Error} */ (error).message}\n`);
    process.exit(1);
  }
}
