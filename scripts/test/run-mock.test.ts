/**
 * `npm run mock` (scripts/run-mock.mjs): the bundle, built when a source changed, runs in the
 * script's own process (no second Node start before the first answer), with every option passed
 * through, and ends as the emulator does.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { waitForHealth } from "../dev-stack-lib.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const running = new Set<ChildProcess>();

afterEach(() => {
  for (const child of running) if (child.exitCode === null) child.kill("SIGKILL");
  running.clear();
});

function runMock(args: string[]) {
  const child = spawn(process.execPath, ["scripts/run-mock.mjs", ...args], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, exited, output: () => output };
}

describe("npm run mock", () => {
  it("serves from its own process and ends with exit 0 on SIGTERM", async () => {
    const mock = runMock(["--port", "0"]);
    await expect
      .poll(() => /listening on (http:\S+)/.exec(mock.output())?.[1] ?? mock.child.exitCode ?? "starting", {
        timeout: 20_000,
      })
      .toMatch(/^http:/);
    const url = /listening on (http:\S+)/.exec(mock.output())?.[1] as string;
    await waitForHealth(url, { isAlive: () => mock.child.exitCode === null });
    // The process started is the one that answers: it has started no other.
    const children = `/proc/${mock.child.pid}/task/${mock.child.pid}/children`;
    if (existsSync(children)) expect(readFileSync(children, "utf8").trim()).toBe("");
    mock.child.kill("SIGTERM");
    expect(await mock.exited).toBe(0);
  });

  it("passes the options through: a usage error ends it with exit 2", async () => {
    const mock = runMock(["--save-interval", "1"]);
    expect(await mock.exited).toBe(2);
    expect(mock.output()).toContain("--save-interval needs --data-dir");
  });
});
