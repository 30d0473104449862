// Small HTTP helpers of the benchmark and soak scripts: control and App Services calls with fetch,
// the load generator as a pinned child process, and the measuring probe of an emulator.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { layout, root, spawnNode } from "./processes.mjs";

export const appServices = "/api/client/v2.0";

/** A JSON call that must answer `expect` (a status or a list of them); returns the parsed body. */
export async function callJson(base, method, path, { body, headers = {}, expect = [200, 201, 204] } = {}) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
    ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  const wanted = Array.isArray(expect) ? expect : [expect];
  if (!wanted.includes(response.status)) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return text === "" ? undefined : response.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text;
}

/** E-mail/password login of the benchmark's user (bench@example.com, seeded by each benchmark). */
export const loginScenario = {
  id: "login",
  title: "`login` (local-userpass, default hash cost)",
  request: {
    method: "POST",
    path: `${appServices}/app/local-app/auth/providers/local-userpass/login`,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "bench@example.com", password: "bench-password" }),
  },
};

export async function anonymousLogin(base, appId = "local-app") {
  return callJson(base, "POST", `${appServices}/app/${appId}/auth/providers/anon-user/login`, { body: {} });
}

/** Runs a load job (see load.mjs) in a child process on the load core; resolves with its result. */
export function runLoad(job) {
  const child = spawnNode([join(root, "scripts", "bench", "load.mjs")], { cpu: layout.loadCpu });
  let out = "";
  child.stdout.on("data", (chunk) => {
    out += chunk;
  });
  child.stdin.end(JSON.stringify(job));
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`the load generator failed (exit ${code})`));
      try {
        resolve(JSON.parse(out));
      } catch (error) {
        reject(new Error(`the load generator printed no result: ${error.message}\n${out}`));
      }
    });
  });
}

/** Node arguments that load the measuring probe (full GC, memory and active resources on SIGUSR2). */
export function probeArgs() {
  return ["--expose-gc", "--import", join(root, "scripts", "bench", "probe.mjs")];
}

/** Asks a probed process for a snapshot and waits for it (on a condition, with a deadline). */
export async function probe(pid, file, timeoutMs = 30_000) {
  const before = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")).sequence : 0;
  process.kill(pid, "SIGUSR2");
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (existsSync(file)) {
      const snapshot = JSON.parse(readFileSync(file, "utf8"));
      if (snapshot.sequence > before) return snapshot;
    }
    if (Date.now() > deadline) throw new Error(`no probe snapshot from ${pid} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export const median = (values) => {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
