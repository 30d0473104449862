#!/usr/bin/env node
// Throw-away PostgreSQL clusters for the tests: finds the server binaries ($PG_BIN, `pg_config --bindir`,
// /usr/lib/postgresql/<newest>/bin, PATH) or, as root on Debian, installs Debian's `postgresql` package;
// otherwise stops with what to install. Never downloads anything else.
//
//   node scripts/postgres-cluster.mjs --check            only make sure the binaries exist, print where
//   node scripts/postgres-cluster.mjs                    start a cluster, print its URL, run until Ctrl-C
//   node scripts/postgres-cluster.mjs -- cmd args…       run cmd with DATABASE_URL set, exit with its code
//
// A cluster lives in a fresh temporary folder (initdb -A trust -U postgres), listens on 127.0.0.1 only,
// on a free port, and is removed by stop(). The server is our own child process (no pg_ctl daemon), so it
// is stopped by PID. initdb and postgres refuse to run as root: as root they run as the `postgres` system
// user (created by Debian's package) or a system user `harness-pg` created on demand.
import { spawn, spawnSync } from "node:child_process";
import {
  accessSync,
  chownSync,
  constants,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statfsSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import {
  aptInstall,
  freePort,
  isRootOnDebian,
  killIfRunningIn,
  sleepSync,
  sweepAbandoned,
} from "./system-packages.mjs";

/**
 * @typedef {object} PostgresBinaries
 * @property {string} binDir folder holding the server binaries
 * @property {string} initdb
 * @property {string} postgres
 * @property {string | null} pgCtl
 * @property {string} version for example "15.18"
 */

/**
 * @typedef {object} StartClusterOptions
 * @property {(line: string) => void} [log] receives progress lines and the server's own log lines
 * @property {number} [port] a fixed port instead of a free one (no retry when it is taken)
 * @property {number} [readyTimeoutMs] how long to wait for the server to accept connections (default 30 000)
 * @property {Record<string, string | number | boolean>} [settings] extra or overriding `-c name=value` settings
 * @property {boolean} [inMemory] keep the cluster in memory (/dev/shm) when there is room: no disk I/O and cheap
 *   file creation (each CREATE DATABASE makes about a thousand files); falls back to the temporary folder
 * @property {{ cert: string, key: string }} [tls] serve TLS too with this certificate and key (PEM): written to
 *   the data folder as the server's own, readable by its user alone (as PostgreSQL wants its key), `ssl=on`
 */

/**
 * @typedef {object} PostgresCluster
 * @property {string} url `postgres://postgres@127.0.0.1:<port>/postgres`
 * @property {number} port
 * @property {string} dataDir
 * @property {string} rootDir the temporary folder holding the data and socket folders
 * @property {PostgresBinaries} binaries
 * @property {() => number | null} pid PID of the running server, null while stopped
 * @property {() => boolean} isRunning
 * @property {() => string} serverLog the last ~64 KB of the server's output (all starts)
 * @property {(options?: { keepData?: boolean }) => Promise<void>} stop stops the server (SIGINT, SIGKILL after
 *   10 s) and removes the folder, unless keepData, in which case start() can bring it back
 * @property {() => Promise<void>} start starts the server again on the same port and data folder
 * @property {() => Promise<void>} restart stop({ keepData: true }) then start()
 * @property {() => Promise<void>} stopServer same as stop({ keepData: true })
 * @property {() => Promise<void>} startServer same as start()
 */

const TEMP_PREFIX = "harness-pg-";
const FALLBACK_USER = "harness-pg";
const LOG_LIMIT = 64 * 1024;
const DEFAULT_SETTINGS = {
  listen_addresses: "127.0.0.1",
  fsync: "on",
  shared_buffers: "32MB",
  max_connections: 200,
  huge_pages: "off",
  max_wal_senders: 0,
  wal_level: "minimal",
  logging_collector: "off",
};

/** @param {string} path */
function isExecutable(path) {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** @param {string} postgres */
function versionOf(postgres) {
  const result = spawnSync(postgres, ["--version"], { encoding: "utf8", timeout: 10_000 });
  if (result.status !== 0) return null;
  const match = /\(PostgreSQL\)\s+(\S+)/.exec(result.stdout) ?? /(\d+(?:\.\d+)*)/.exec(result.stdout);
  return match?.[1] ?? result.stdout.trim();
}

/**
 * @param {string | undefined} dir
 * @returns {PostgresBinaries | null}
 */
function binariesIn(dir) {
  if (!dir) return null;
  const initdb = join(dir, "initdb");
  const postgres = join(dir, "postgres");
  if (!isExecutable(initdb) || !isExecutable(postgres)) return null;
  const version = versionOf(postgres);
  if (!version) return null;
  const pgCtl = join(dir, "pg_ctl");
  return { binDir: dir, initdb, postgres, pgCtl: isExecutable(pgCtl) ? pgCtl : null, version };
}

function pgConfigBinDir() {
  const result = spawnSync("pg_config", ["--bindir"], { encoding: "utf8", timeout: 10_000 });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** Debian's layout: /usr/lib/postgresql/<major>/bin, newest major first. */
function debianBinDirs() {
  try {
    return readdirSync("/usr/lib/postgresql")
      .filter((name) => /^\d+(\.\d+)?$/.test(name))
      .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a))
      .map((name) => join("/usr/lib/postgresql", name, "bin"));
  } catch {
    return [];
  }
}

/**
 * Finds initdb and postgres: $PG_BIN, `pg_config --bindir`, /usr/lib/postgresql/<newest>/bin, then PATH.
 * @returns {PostgresBinaries | null}
 */
export function findPostgres() {
  const dirs = [
    process.env.PG_BIN,
    pgConfigBinDir(),
    ...debianBinDirs(),
    ...(process.env.PATH ?? "").split(delimiter).filter(Boolean),
  ];
  const seen = new Set();
  for (const dir of dirs) {
    if (!dir || seen.has(dir)) continue;
    seen.add(dir);
    const found = binariesIn(dir);
    if (found) return found;
  }
  return null;
}

/**
 * Like findPostgres(), but when nothing is found and we are root on Debian, installs Debian's `postgresql`
 * package first. Throws an Error saying what to install otherwise.
 * @param {{ log?: (line: string) => void }} [options]
 * @returns {PostgresBinaries}
 */
export function ensurePostgres(options = {}) {
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  const pgBin = process.env.PG_BIN;
  if (pgBin) {
    const found = binariesIn(pgBin);
    if (found) return found;
    throw new Error(`PG_BIN=${pgBin} does not hold runnable initdb and postgres binaries.`);
  }
  let found = findPostgres();
  if (!found && isRootOnDebian()) {
    log("No PostgreSQL server found: installing Debian's postgresql package (about 30 s)…");
    aptInstall(["postgresql"]);
    found = findPostgres();
  }
  if (!found) {
    throw new Error(
      "The tests need a PostgreSQL server (initdb and postgres) and none was found.\n" +
        "  Debian/Ubuntu:  sudo apt-get install postgresql\n" +
        "  or set PG_BIN to the folder holding initdb and postgres (for example /usr/lib/postgresql/15/bin).",
    );
  }
  return found;
}

// ---------------------------------------------------------------------------------------------------------
// Running as an unprivileged user when we are root

/** @param {string} name */
function idsOf(name) {
  const uid = spawnSync("id", ["-u", name], { encoding: "utf8" });
  const gid = spawnSync("id", ["-g", name], { encoding: "utf8" });
  if (uid.status !== 0 || gid.status !== 0) return null;
  return { user: name, uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** @type {{ user: string, uid: number, gid: number } | null | undefined} */
let cachedServerUser;

/** The user to run initdb and postgres as: null when we are not root (run as ourselves). */
function serverUser() {
  if (process.getuid?.() !== 0) return null;
  if (cachedServerUser) return cachedServerUser;
  let ids = idsOf("postgres") ?? idsOf(FALLBACK_USER);
  if (!ids) {
    const created = spawnSync(
      "useradd",
      ["--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", FALLBACK_USER],
      { encoding: "utf8" },
    );
    ids = idsOf(FALLBACK_USER);
    if (!ids) {
      throw new Error(
        "PostgreSQL refuses to run as root and there is no `postgres` user; creating the user " +
          `${FALLBACK_USER} failed: ${created.error?.message ?? created.stderr.trim()}`,
      );
    }
  }
  cachedServerUser = ids;
  return ids;
}

/** A folder another (unprivileged) user can reach: every ancestor must be searchable by others. */
function reachableByOthers(/** @type {string} */ dir) {
  for (let current = dir; ; current = dirname(current)) {
    try {
      if ((statSync(current).mode & 0o001) === 0) return false;
    } catch {
      return false;
    }
    if (dirname(current) === current) return true;
  }
}

/** Memory-backed folders with at least this much free space are used for `inMemory` clusters. */
const IN_MEMORY_MIN_FREE = 1024 ** 3;

/** /dev/shm when it is a folder everyone may write in (and the server user reach) with room to spare. */
function memoryBase() {
  const dir = "/dev/shm";
  try {
    const stats = statSync(dir);
    if (!stats.isDirectory() || (stats.mode & 0o1777) !== 0o1777 || !reachableByOthers(dir)) return null;
    const fs = statfsSync(dir);
    return fs.bavail * fs.bsize >= IN_MEMORY_MIN_FREE ? dir : null;
  } catch {
    return null;
  }
}

function tempBase(inMemory = false) {
  const memory = inMemory ? memoryBase() : null;
  if (memory) return memory;
  const base = tmpdir();
  if (process.getuid?.() === 0 && !reachableByOthers(base) && reachableByOthers("/tmp")) return "/tmp";
  return base;
}

// ---------------------------------------------------------------------------------------------------------
// Small utilities

/**
 * Whether `promise` settles within `ms`; the timer does not outlive it.
 * @param {Promise<unknown>} promise
 * @param {number} ms
 * @returns {Promise<boolean>}
 */
async function settlesWithin(promise, ms) {
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const expired = new Promise((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return /** @type {boolean} */ (await Promise.race([promise.then(() => true), expired]));
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Speaks just enough of the PostgreSQL wire protocol to know whether the server accepts a session:
 * "ready" once ReadyForQuery arrives, otherwise a short reason (refused, starting up, …).
 * @param {number} port
 * @returns {Promise<string>}
 */
function probe(port) {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    let buffer = Buffer.alloc(0);
    let settled = false;
    /** @param {string} outcome */
    const finish = (outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (outcome === "ready") {
        const terminate = Buffer.from([0x58, 0, 0, 0, 4]); // 'X' Terminate
        socket.end(terminate);
      } else {
        socket.destroy();
      }
      resolve(outcome);
    };
    const timer = setTimeout(() => finish("no answer within 2 s"), 2_000);
    socket.on("error", (error) => finish(/** @type {NodeJS.ErrnoException} */ (error).code ?? error.message));
    socket.on("close", () => finish("connection closed"));
    socket.on("connect", () => {
      const params = Buffer.from("user\0postgres\0database\0postgres\0\0", "utf8");
      const header = Buffer.alloc(8);
      header.writeInt32BE(8 + params.length, 0);
      header.writeInt32BE(196608, 4); // protocol 3.0
      socket.write(Buffer.concat([header, params]));
    });
    socket.on("data", (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      while (buffer.length >= 5) {
        const type = String.fromCharCode(buffer[0] ?? 0);
        const length = buffer.readInt32BE(1);
        if (buffer.length < 1 + length) return;
        const body = buffer.subarray(5, 1 + length);
        buffer = buffer.subarray(1 + length);
        if (type === "Z") return finish("ready");
        if (type === "R" && body.readInt32BE(0) !== 0)
          return finish(`server asks for authentication ${body.readInt32BE(0)}`);
        if (type === "E") {
          /** @type {Record<string, string>} */
          const fields = {};
          let at = 0;
          while (at < body.length && body[at] !== 0) {
            const code = String.fromCharCode(body[at] ?? 0);
            const end = body.indexOf(0, at + 1);
            fields[code] = body.subarray(at + 1, end).toString("utf8");
            at = end + 1;
          }
          return finish(`${fields.C ?? "?"} ${fields.M ?? "error"}`);
        }
      }
    });
  });
}

/**
 * Runs a command to completion, collecting its output.
 * @param {string} file
 * @param {string[]} args
 * @param {import("node:child_process").SpawnOptions} options
 * @param {(child: import("node:child_process").ChildProcess) => void} [onSpawn]
 * @returns {Promise<{ code: number | null, signal: NodeJS.Signals | null, output: string }>}
 */
function run(file, args, options, onSpawn) {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    onSpawn?.(child);
    let output = "";
    child.stdout?.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr?.on("data", (chunk) => {
      output += chunk;
    });
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, output }));
  });
}

/** Whether an unreaped child has finished (zombie) or is gone, per /proc; null when /proc cannot tell. */
function hasExitedPerProc(/** @type {number} */ pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state === "Z" || state === "X";
  } catch (error) {
    return /** @type {NodeJS.ErrnoException} */ (error).code === "ENOENT" ? true : null;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Best-effort cleanup: on exit and on signals, and of folders left by runs that were SIGKILLed

/** @type {Set<{ cleanupSync(): void }>} */
const live = new Set();
const SIGNALS = /** @type {const} */ (["SIGINT", "SIGTERM", "SIGHUP"]);
let handlersInstalled = false;

function cleanupAllSync() {
  for (const cluster of [...live]) cluster.cleanupSync();
}

/** @param {NodeJS.Signals} signal */
function onSignal(signal) {
  // Someone else handles this signal (vitest, our CLI…): let them, the exit handler stays as the safety net.
  if (process.listenerCount(signal) > 1) return;
  cleanupAllSync();
  uninstallHandlers();
  process.kill(process.pid, signal);
}

function installHandlers() {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on("exit", cleanupAllSync);
  for (const signal of SIGNALS) process.on(signal, onSignal);
}

function uninstallHandlers() {
  if (!handlersInstalled) return;
  handlersInstalled = false;
  process.off("exit", cleanupAllSync);
  for (const signal of SIGNALS) process.off(signal, onSignal);
}

// ---------------------------------------------------------------------------------------------------------
// Clusters

/**
 * Creates a throw-away cluster in a temporary folder and starts its server on a free port of 127.0.0.1.
 * @param {StartClusterOptions} [options]
 * @returns {Promise<PostgresCluster>}
 */
export async function startCluster(options = {}) {
  const log = options.log;
  const binaries = ensurePostgres(log ? { log } : {});
  const readyTimeoutMs = options.readyTimeoutMs ?? 30_000;
  const user = serverUser();
  const base = tempBase(options.inMemory);
  // Clusters of runs killed with SIGKILL: their server stopped, their folder removed.
  sweepAbandoned(base, TEMP_PREFIX, (dir) =>
    killIfRunningIn(join(dir, "data", "postmaster.pid"), join(dir, "data"), "SIGKILL"),
  );

  const rootDir = mkdtempSync(join(base, TEMP_PREFIX));
  const dataDir = join(rootDir, "data");
  const socketDir = join(rootDir, "sock");
  writeFileSync(join(rootDir, "owner.pid"), `${process.pid}\n`);
  mkdirSync(socketDir);
  if (user) {
    chownSync(rootDir, user.uid, user.gid);
    chownSync(socketDir, user.uid, user.gid);
  }
  // Unix socket paths are limited to ~107 bytes; without room we only listen on TCP.
  const socketSetting = socketDir.length + 20 < 100 ? socketDir : "";

  /** @type {import("node:child_process").SpawnOptions} */
  const spawnOptions = {
    cwd: rootDir,
    env: { ...process.env, LC_ALL: "C", LANG: "C", PGDATA: dataDir, ...(user ? { HOME: rootDir } : {}) },
    ...(user ? { uid: user.uid, gid: user.gid } : {}),
  };

  let serverLog = "";
  let launchLog = "";
  /** @param {string} text */
  const appendLog = (text) => {
    serverLog = (serverLog + text).slice(-LOG_LIMIT);
    launchLog = (launchLog + text).slice(-LOG_LIMIT);
    if (log) for (const line of text.split("\n")) if (line.trim()) log(`[postgres] ${line}`);
  };

  /** @type {import("node:child_process").ChildProcess | null} */
  let child = null;
  /** @type {import("node:child_process").ChildProcess | null} */
  let initdbChild = null;
  /** @type {Promise<void> | null} */
  let exited = null;
  let removed = false;
  let port = options.port ?? 0;
  const running = () => child !== null && child.exitCode === null && child.signalCode === null;

  const cleanup = {
    cleanupSync() {
      live.delete(cleanup);
      if (live.size === 0) uninstallHandlers();
      if (initdbChild && initdbChild.exitCode === null && initdbChild.signalCode === null) initdbChild.kill("SIGKILL");
      const pid = running() ? child?.pid : undefined;
      if (pid) {
        try {
          process.kill(pid, "SIGQUIT"); // immediate shutdown: the data goes anyway
        } catch {
          // already gone
        }
        const deadline = Date.now() + 5_000;
        while (Date.now() < deadline && hasExitedPerProc(pid) === false) sleepSync(20);
        if (hasExitedPerProc(pid) !== true) {
          try {
            process.kill(pid, "SIGKILL");
          } catch {
            // already gone
          }
        }
      }
      removed = true;
      try {
        rmSync(rootDir, { recursive: true, force: true, maxRetries: 5 });
      } catch {
        // best effort: a later startCluster() sweeps folders whose owner is gone
      }
    },
  };
  live.add(cleanup);
  installHandlers();

  const t0 = Date.now();
  try {
    const initdb = await run(
      binaries.initdb,
      ["-D", dataDir, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"],
      spawnOptions,
      (spawned) => {
        initdbChild = spawned;
      },
    );
    initdbChild = null;
    if (initdb.code !== 0) {
      throw new Error(`initdb failed (exit ${initdb.code ?? initdb.signal}):\n${initdb.output}`);
    }
    log?.(`initdb done in ${Date.now() - t0} ms (${dataDir})`);
  } catch (error) {
    cleanup.cleanupSync();
    throw error;
  }

  if (options.tls) {
    for (const [file, text] of [
      ["server.crt", options.tls.cert],
      ["server.key", options.tls.key],
    ]) {
      const path = join(dataDir, file);
      writeFileSync(path, text, { mode: 0o600 });
      if (user) chownSync(path, user.uid, user.gid);
    }
  }
  const settings = { ...DEFAULT_SETTINGS, ...(options.tls ? { ssl: "on" } : {}), ...options.settings };

  /**
   * Starts the server on `port` and waits until it accepts a session.
   * @returns {Promise<{ ok: true } | { ok: false, portTaken: boolean, message: string }>}
   */
  const launch = async () => {
    launchLog = "";
    const args = ["-D", dataDir, "-p", String(port), "-k", socketSetting];
    for (const [name, value] of Object.entries(settings)) args.push("-c", `${name}=${value}`);
    const server = spawn(binaries.postgres, args, {
      ...spawnOptions,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    child = server;
    // A forgotten cluster must not keep the process alive: the exit handler removes it then.
    server.unref();
    for (const stream of [server.stdout, server.stderr]) /** @type {import("node:net").Socket} */ (stream).unref();
    server.stdout?.setEncoding("utf8").on("data", appendLog);
    server.stderr?.setEncoding("utf8").on("data", appendLog);
    /** @type {string | null} */
    let exitReason = null;
    exited = new Promise((resolve) => {
      server.on("error", (error) => {
        exitReason = error.message;
        resolve();
      });
      server.on("exit", (code, signal) => {
        exitReason = `exit ${code ?? signal}`;
        resolve();
      });
    });
    const deadline = Date.now() + readyTimeoutMs;
    let last = "";
    while (Date.now() < deadline) {
      if (exitReason) break;
      last = await probe(port);
      if (last === "ready") return /** @type {const} */ ({ ok: true });
      if (exitReason) break;
      await settlesWithin(exited, 50);
    }
    if (!exitReason) await stopProcess();
    const ownLog = launchLog;
    const portTaken = /could not bind|Address already in use|could not create any TCP\/IP sockets/i.test(ownLog);
    const why = exitReason ? `the server stopped (${exitReason})` : `not ready after ${readyTimeoutMs} ms (${last})`;
    return /** @type {const} */ ({
      ok: false,
      portTaken,
      message: `PostgreSQL on 127.0.0.1:${port}: ${why}. Server log:\n${ownLog}`,
    });
  };

  /** Fast shutdown by PID, SIGKILL after 10 s. */
  const stopProcess = async () => {
    const server = child;
    if (!server || !exited) return;
    if (running()) {
      server.kill("SIGINT");
      if (!(await settlesWithin(exited, 10_000))) {
        log?.(`PostgreSQL (pid ${server.pid}) did not stop within 10 s: SIGKILL`);
        server.kill("SIGKILL");
        await settlesWithin(exited, 5_000);
      }
    }
    child = null;
  };

  try {
    const fixedPort = options.port !== undefined;
    for (let attempt = 1; ; attempt++) {
      if (!fixedPort) port = await freePort();
      const result = await launch();
      if (result.ok) break;
      if (!result.portTaken || fixedPort || attempt >= 5) throw new Error(result.message);
      log?.(`port ${port} was taken meanwhile: trying another`);
    }
  } catch (error) {
    cleanup.cleanupSync();
    throw error;
  }
  log?.(`PostgreSQL ${binaries.version} ready on 127.0.0.1:${port} after ${Date.now() - t0} ms`);

  /** @type {Promise<void>} */
  let queue = Promise.resolve();
  /**
   * Runs lifecycle operations one after another.
   * @param {() => Promise<void>} operation
   */
  const serial = (operation) => {
    const next = queue.then(operation);
    queue = next.catch(() => {});
    return next;
  };

  const stopServer = () => serial(stopProcess);
  const startServer = () =>
    serial(async () => {
      if (removed) throw new Error("This cluster was removed by stop(); it cannot start again.");
      if (running()) return;
      const result = await launch();
      if (!result.ok) {
        if (result.portTaken) throw new Error(`Port ${port} is taken by another process now.\n${result.message}`);
        throw new Error(result.message);
      }
    });

  /** @type {PostgresCluster} */
  const cluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    rootDir,
    binaries,
    pid: () => (running() ? (child?.pid ?? null) : null),
    isRunning: running,
    serverLog: () => serverLog,
    stop: (stopOptions = {}) =>
      serial(async () => {
        await stopProcess();
        if (stopOptions.keepData || removed) return;
        removed = true;
        live.delete(cleanup);
        if (live.size === 0) uninstallHandlers();
        rmSync(rootDir, { recursive: true, force: true, maxRetries: 5 });
      }),
    start: startServer,
    startServer,
    stopServer,
    restart: async () => {
      await stopServer();
      await startServer();
    },
  };
  return cluster;
}

// ---------------------------------------------------------------------------------------------------------
// Command line

/** @param {string[]} argv */
async function main(argv) {
  const say = (/** @type {string} */ line) => process.stderr.write(`postgres-cluster: ${line}\n`);
  if (argv[0] === "--check") {
    const binaries = ensurePostgres({ log: say });
    process.stdout.write(
      `PostgreSQL ${binaries.version}: ${binaries.binDir} (initdb, postgres${binaries.pgCtl ? ", pg_ctl" : ""})\n`,
    );
    return 0;
  }
  const separator = argv.indexOf("--");
  const command = separator >= 0 ? argv.slice(separator + 1) : [];
  const unknown = separator >= 0 ? argv.slice(0, separator) : argv;
  if (unknown.length > 0) {
    say(`unknown arguments: ${unknown.join(" ")}`);
    say("usage: node scripts/postgres-cluster.mjs [--check | -- command args…]");
    return 2;
  }

  const started = Date.now();
  const cluster = await startCluster();
  say(`PostgreSQL ${cluster.binaries.version} ready in ${Date.now() - started} ms: ${cluster.url}`);

  if (command.length === 0) {
    process.stdout.write(`${cluster.url}\n`);
    say("press Ctrl-C to stop and remove it");
    // The cluster's process does not keep ours alive (see startCluster): this timer does, until a signal.
    const keepAlive = setInterval(() => undefined, 60_000);
    const signal = await new Promise((resolve) => {
      for (const name of SIGNALS) process.once(name, () => resolve(name));
    });
    clearInterval(keepAlive);
    await cluster.stop();
    say("stopped and removed");
    return signal === "SIGINT" ? 130 : 143;
  }

  const [file, ...args] = /** @type {[string, ...string[]]} */ (command);
  const child = spawn(file, args, { stdio: "inherit", env: { ...process.env, DATABASE_URL: cluster.url } });
  /** @param {NodeJS.Signals} signal */
  const forward = (signal) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  for (const name of SIGNALS) process.on(name, forward);
  /** @type {number} */
  const code = await new Promise((resolve) => {
    child.on("error", (error) => {
      say(`cannot run ${file}: ${error.message}`);
      resolve(127);
    });
    child.on("exit", (exitCode, signal) => {
      const numbers = /** @type {Record<string, number>} */ ({ SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 });
      resolve(exitCode ?? 128 + (signal ? (numbers[signal] ?? 1) : 1));
    });
  });
  for (const name of SIGNALS) process.off(name, forward);
  await cluster.stop();
  return code;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error) => {
      process.stderr.write(`postgres-cluster: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
