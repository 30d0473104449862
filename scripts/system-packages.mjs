// What the test scripts need from the machine: Debian packages they install as root (the browser,
// PostgreSQL, nginx), free loopback ports, and whether a process is still there.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Root on a Debian-like system with apt-get: the scripts may install what they miss. */
export function isRootOnDebian() {
  return process.getuid?.() === 0 && existsSync("/etc/debian_version") && spawnSync("which", ["apt-get"]).status === 0;
}

/** Blocks the thread for `ms` (for exit handlers and other synchronous waits). @param {number} ms */
export function sleepSync(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Installs Debian packages with apt-get (after `apt-get update`), without questions. One install at
 * a time: npm test checks for PostgreSQL and the proxies side by side, and on a fresh machine both
 * install (apt-get refuses to run twice at once); a lock of our own makes the second wait, and
 * apt's own lock timeout waits for anyone else's.
 * @param {string[]} packages
 */
export function aptInstall(packages) {
  const lock = join(tmpdir(), "harness-apt-install.lock");
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // Left by a run that was killed: apt-get is long done after ten minutes.
      try {
        if (Date.now() - statSync(lock).mtimeMs > 10 * 60_000) rmdirSync(lock);
      } catch {
        // gone meanwhile
      }
      if (Date.now() > deadline) throw new Error(`another install held ${lock} for ten minutes`);
      sleepSync(250);
    }
  }
  try {
    const wait = ["-o", "DPkg::Lock::Timeout=300"];
    execFileSync("apt-get", [...wait, "update", "-qq"], { stdio: ["ignore", "inherit", "inherit"] });
    execFileSync("apt-get", [...wait, "install", "-y", "-qq", ...packages], {
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
  } finally {
    rmdirSync(lock);
  }
}

/**
 * A port of 127.0.0.1 that was free a moment ago (whoever binds it next may lose a race: callers
 * retry on "address in use").
 * @returns {Promise<number>}
 */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** @param {number} pid */
export function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return /** @type {NodeJS.ErrnoException} */ (error).code === "EPERM";
  }
}

/**
 * Removes the temporary folders (named `prefix…` under `base`) of runs whose owner is gone — a test
 * run killed with SIGKILL — after `stop(dir)` has stopped what such a run left running. A folder's
 * owner is the PID in its `owner.pid`.
 * @param {string} base
 * @param {string} prefix
 * @param {(dir: string) => void} stop
 */
export function sweepAbandoned(base, prefix, stop) {
  let names;
  try {
    names = readdirSync(base).filter((name) => name.startsWith(prefix));
  } catch {
    return;
  }
  for (const name of names) {
    const dir = join(base, name);
    try {
      const owner = Number(readFileSync(join(dir, "owner.pid"), "utf8").trim());
      if (!Number.isInteger(owner) || owner <= 0 || isAlive(owner)) continue;
      try {
        stop(dir);
      } catch {
        // nothing left running for it
      }
      rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
    } catch {
      // not ours or already gone
    }
  }
}

/**
 * Sends `signal` to the process whose PID the first line of `pidFile` holds, if its command line
 * names `dir` (so a PID reused by another program is left alone).
 * @param {string} pidFile @param {string} dir @param {NodeJS.Signals} signal
 */
export function killIfRunningIn(pidFile, dir, signal) {
  const pid = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
  if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dir)) process.kill(pid, signal);
}
