import { readFileSync } from "node:fs";
import { vi } from "vitest";
import { defaultQueryLimits, withQueryLimits } from "../../src/data/query-limits.ts";

/**
 * The main thread's CPU time (Linux: its schedstat), so that a stall of the event loop is told
 * apart from a machine too busy to schedule it: what the server's own work held, not the load.
 */
export function mainThreadHeld(): () => number {
  const path = `/proc/self/task/${process.pid}/schedstat`;
  const cpuMs = () => Number(readFileSync(path, "utf8").split(" ")[0]) / 1e6;
  let last = cpuMs();
  let held = 0;
  const take = () => {
    const now = cpuMs();
    held = Math.max(held, now - last);
    last = now;
  };
  const timer = setInterval(take, 2);
  return () => {
    clearInterval(timer);
    take();
    return held;
  };
}

/**
 * Runs `fn` on the main thread's query slice (as a request's evaluation runs) with the clock held
 * still, so that what hands work to a worker is the slice's share of it (steps, bytes, heavy
 * units) and not the test machine's load: a process waiting a few milliseconds for a core stops a
 * slice by its clock, as it should in a server, which a test of the shares cannot tell apart.
 */
export function onSliceByWork<T>(fn: () => T): T {
  const now = performance.now();
  const clock = vi.spyOn(performance, "now").mockReturnValue(now);
  try {
    return withQueryLimits(defaultQueryLimits, fn, { mainThread: true, deadline: now + 60_000 });
  } finally {
    clock.mockRestore();
  }
}
