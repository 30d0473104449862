// What the test scripts need from the machine: Debian packages they install as root (the browser,
// PostgreSQL, nginx), free loopback ports, and whether a process is still there.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";

/** Root on a Debian-like system with apt-get: the scripts may install what they miss. */
export function isRootOnDebian() {
  return process.getuid?.() === 0 && existsSync("/etc/debian_version") && spawnSync("which", ["apt-get"]).status === 0;
}

/**
 * Installs Debian packages with apt-get (after `apt-get update`), without questions.
 * @param {string[]} packages
 */
export function aptInstall(packages) {
  execFileSync("apt-get", ["update", "-qq"], { stdio: ["ignore", "inherit", "inherit"] });
  execFileSync("apt-get", ["install", "-y", "-qq", ...packages], {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
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
