// A measuring preload for `--profile … --store … --loop-delay`: how long the emulator's event loop
// was blocked (perf_hooks' event-loop delay, 1 ms resolution), and, on Linux, how much of that was
// the main thread's own work: a 1 ms timer reads the thread's CPU time (its schedstat) at each
// turn, so that a turn that waited because the host ran something else on the core (a busy
// machine) is told apart from one the emulator's own code held. On SIGUSR2 it appends the figures
// since the last signal to $BENCH_LOOP_DELAY_FILE and starts over; the emulator's code knows
// nothing of it.
import { appendFileSync, readFileSync } from "node:fs";
import { createHistogram, monitorEventLoopDelay } from "node:perf_hooks";

const histogram = monitorEventLoopDelay({ resolution: 1 });
histogram.enable();

/** The main thread's CPU time in ns, or null where the system does not tell it. */
const schedstat = `/proc/self/task/${process.pid}/schedstat`;
const cpuNs = () => {
  try {
    return Number(readFileSync(schedstat, "utf8").split(" ")[0]);
  } catch {
    return null;
  }
};
/** CPU time the main thread spent between two turns of the timer (ns, at least 1). */
const held = createHistogram();
let last = cpuNs();
if (last !== null)
  setInterval(() => {
    const now = cpuNs();
    if (now === null || last === null) return;
    held.record(Math.max(1, now - last));
    last = now;
  }, 1).unref();

process.on("SIGUSR2", () => {
  const ms = (ns) => ns / 1e6;
  appendFileSync(
    process.env.BENCH_LOOP_DELAY_FILE,
    `${JSON.stringify({
      p50: ms(histogram.percentile(50)),
      p99: ms(histogram.percentile(99)),
      p999: ms(histogram.percentile(99.9)),
      max: ms(histogram.max),
      ...(held.count > 0
        ? { heldP99: ms(held.percentile(99)), heldP999: ms(held.percentile(99.9)), heldMax: ms(held.max) }
        : {}),
    })}\n`,
  );
  histogram.reset();
  held.reset();
  last = cpuNs();
});
