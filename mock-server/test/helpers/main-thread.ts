import { readFileSync } from "node:fs";

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
