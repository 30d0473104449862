// Processes of the benchmark and soak scripts: the emulator (the bundled CLI, started with node
// itself, never through npm), the bare node:http server and the load generator, each optionally
// pinned to one core with taskset; their memory read from outside, in /proc/<pid>/status.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const cli = join(root, "mock-server", "dist", "cli.js");
const hasTaskset = spawnSync("taskset", ["-c", "0", "true"]).status === 0;

/** Cores to pin to: the server on one, the load generator on another (when the machine has two). */
export const layout = {
  pinned: hasTaskset && cpus().length >= 2,
  serverCpu: 0,
  loadCpu: 1,
};

export function buildEmulator() {
  const result = spawnSync(process.execPath, [join(root, "mock-server", "scripts", "build.mjs")], { stdio: "inherit" });
  if (result.status !== 0) throw new Error("building the emulator failed");
}

/** Spawns `node …args`, pinned to a core when possible (taskset execs node: the pid is node's). */
export function spawnNode(args, { cpu, env, stdio = ["pipe", "pipe", "inherit"] } = {}) {
  const pin = cpu !== undefined && layout.pinned;
  const command = pin ? "taskset" : process.execPath;
  const argv = pin ? ["-c", String(cpu), process.execPath, ...args] : args;
  return spawn(command, argv, { cwd: root, stdio, env: { ...process.env, ...env } });
}

/** Waits until a child prints `listening on http://…` and returns the URL. */
export function listeningUrl(child, what, timeoutMs = 20_000) {
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(
      () => fail(new Error(`${what} did not start within ${timeoutMs} ms:\n${output}`)),
      timeoutMs,
    );
    const onData = (chunk) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        child.stdout.off("data", onData);
        child.off("exit", onExit);
        child.stdout.resume();
        resolve(match[1]);
      }
    };
    const onExit = (code, signal) => fail(new Error(`${what} exited (${code ?? signal}) before listening:\n${output}`));
    function fail(error) {
      clearTimeout(timer);
      child.stdout.off("data", onData);
      reject(error);
    }
    child.stdout.on("data", onData);
    child.once("exit", onExit);
  });
}

/** Stops a child we started (by its own handle), SIGKILL if it does not exit in time. */
export async function stop(child, timeoutMs = 10_000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  await exited;
  clearTimeout(timer);
}

/**
 * The benchmarks drive the default app from one address with a few users doing the work of many
 * (100,000 anonymous logins, one anonymous writer inserting thousands of notes a second): its
 * per-user and per-address limits (docs/decisions/0018-fair-shares.md) are lifted for them, the
 * app's own limits kept: for every build measured, so that an A/B (`--cli`, `--against`) compares
 * like with like (a build older than those limits refuses the file: measure it from its own commit).
 */
const benchLimits = {
  anonymousUsersPerAddress: 1_000_000_000,
  documentsPerUser: 1_000_000_000,
  documentBytesPerUser: 1024 ** 4,
  writesPerSecondPerUser: 1_000_000_000,
  documentsPerAnonymousUser: 1_000_000_000,
  documentBytesPerAnonymousUser: 1024 ** 4,
  writesPerSecondPerAnonymousUser: 1_000_000_000,
  anonymousDocuments: 1_000_000_000,
  anonymousDocumentBytes: 1024 ** 4,
};
/**
 * Likewise the caps on function calls running at once and on a user's (and an address's) MongoDB
 * actions running at once (one token drives 50 connections of `sum`, of `insertOne`, of `find`,
 * from one address): the benchmark measures the server's pace, not one user's share of it.
 */
const benchCaps = {
  maxFunctionCallsPerUser: 1_000_000_000,
  maxFunctionCallsPerAnonymousUser: 1_000_000_000,
  maxFunctionCallsPerAddress: 1_000_000_000,
  maxMongoActionsPerUser: 1_000_000_000,
  maxMongoActionsPerAddress: 1_000_000_000,
};
let benchConfig;
export function benchConfigFile() {
  if (!benchConfig) {
    benchConfig = join(mkdtempSync(join(tmpdir(), "bench-config-")), "emulator.json");
    writeFileSync(
      benchConfig,
      JSON.stringify({ apps: [{ appId: "local-app", config: { limits: benchLimits, ...benchCaps } }] }),
    );
  }
  return benchConfig;
}

/**
 * Starts the emulator pinned to the server core. `nodeArgs` go before the script (e.g. a
 * measuring preload, `--cpu-prof`); `args` after it. Every build gets the benchmarks' limits.
 */
export async function startEmulator({ args = [], nodeArgs = [], env, cpu = layout.serverCpu, script = cli } = {}) {
  const config = ["--config", benchConfigFile()];
  const child = spawnNode([...nodeArgs, script, "--port", "0", "--no-watch", ...config, ...args], { cpu, env });
  const url = await listeningUrl(child, "the emulator");
  return { child, pid: child.pid, url, stop: () => stop(child) };
}

/** Memory of a process from /proc/<pid>/status, in bytes. */
export function procMemory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN) * 1024;
  return { rss: kb("VmRSS"), hwm: kb("VmHWM"), threads: Number(/^Threads:\s+(\d+)/m.exec(status)?.[1]) };
}

/** CPU time a process has used so far (all its threads), in user and in kernel mode, in milliseconds. */
function procCpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may contain spaces) start at the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { user: (Number(fields[11]) * 1000) / clockTicks, system: (Number(fields[12]) * 1000) / clockTicks };
}
const clockTicks = Number(spawnSync("getconf", ["CLK_TCK"]).stdout?.toString().trim()) || 100;

/**
 * CPU time of a process and of its descendants alive now (the emulator's function processes), in
 * milliseconds: a call of an app function costs both processes. (A process gone in between is
 * left out: none ends during a measured run.)
 */
export function procTreeCpuMs(pid) {
  const { user, system } = procTreeCpuSplit(pid);
  return user + system;
}

/** procTreeCpuMs in user and in kernel mode (`system`: system calls, the loopback network's work among them). */
export function procTreeCpuSplit(pid) {
  const total = { user: 0, system: 0 };
  const add = (cpu) => {
    total.user += cpu.user;
    total.system += cpu.system;
  };
  try {
    add(procCpuMs(pid));
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const children = readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim();
      for (const child of children === "" ? [] : children.split(" ")) add(procTreeCpuSplit(Number(child)));
    }
  } catch {
    // the process ended while it was read
  }
  return total;
}

/**
 * CPU time (ms, user + system) of one process's main thread (its event loop) and of its other
 * threads together (libuv's pool, where password hashes run, and V8's helpers: GC, compilers; Node
 * names them all "node"). Threads that ended in between are left out.
 */
export function threadCpuMs(pid) {
  const threads = { main: 0, others: 0 };
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      threads[Number(task) === pid ? "main" : "others"] +=
        ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks;
    }
  } catch {
    // the process ended while it was read
  }
  return threads;
}

/** Open file descriptors of a process (sockets included), counted from outside. */
export function openFds(pid) {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return Number.NaN;
  }
}

/** A free loopback port (for a process whose first answer we poll before it can tell us its port). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export function machine() {
  const cpuInfo = existsSync("/proc/cpuinfo") ? readFileSync("/proc/cpuinfo", "utf8") : "";
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuInfo)?.[1]?.trim() ?? cpus()[0]?.model ?? "unknown";
  const mhz = /^cpu MHz\s*:\s*([\d.]+)/m.exec(cpuInfo)?.[1];
  return {
    cpu: model,
    mhz: mhz ? Math.round(Number(mhz)) : undefined,
    cores: cpus().length,
    node: process.version,
    memoryGb: Math.round(Number(/^MemTotal:\s+(\d+)/m.exec(readFileSync("/proc/meminfo", "utf8"))?.[1]) / 1024 / 1024),
    pinned: layout.pinned,
  };
}
