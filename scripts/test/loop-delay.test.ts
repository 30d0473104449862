/**
 * The benchmark's `--loop-delay` preload (scripts/bench/loop-delay.mjs): on SIGUSR2 it appends how
 * long the event loop was blocked and, on Linux, the main thread's own CPU time between two turns,
 * so that the emulator's own work is told apart from a busy host.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

it.runIf(process.platform === "linux")("tells the main thread's own busy time within the loop's delay", async () => {
  const dir = mkdtempSync(join(tmpdir(), "loop-delay-"));
  dirs.push(dir);
  const file = join(dir, "delay.jsonl");
  // A program that holds its loop with 60 ms of its own work, then waits for the signal. The work is
  // counted in the main thread's CPU time (where the preload reads it), not in wall time: on a busy
  // host 60 ms of wall time may hold little CPU.
  const program = `
    setTimeout(() => {
      const stat = "/proc/self/task/" + process.pid + "/schedstat";
      const spent = () => Number(require("node:fs").readFileSync(stat, "utf8").split(" ")[0]) / 1e6;
      const until = spent() + 60;
      while (spent() < until);
      // Said once the loop has turned: a signal read in the turn right after the hold would come
      // before the preload's timers saw it.
      setTimeout(() => process.stdout.write("held\\n"), 10);
    }, 20);
    process.on("SIGUSR2", () => setTimeout(() => process.exit(0), 50));
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ["--import", join(root, "scripts/bench/loop-delay.mjs"), "-e", program], {
    env: { ...process.env, BENCH_LOOP_DELAY_FILE: file },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve) => child.stdout.on("data", () => resolve()));
  child.kill("SIGUSR2");
  expect(await new Promise((resolve) => child.on("exit", resolve))).toBe(0);
  const figures = JSON.parse(readFileSync(file, "utf8").trim()) as Record<string, number>;
  // The loop's delay and the thread's own CPU time both saw the hold.
  expect(figures.max).toBeGreaterThan(20);
  expect(figures.heldMax).toBeGreaterThan(20);
  expect(figures.heldP99).toBeLessThanOrEqual(figures.heldMax!);
});
