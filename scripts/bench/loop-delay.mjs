// A measuring preload for `--profile … --store … --loop-delay`: how long the emulator's event loop
// was blocked (perf_hooks' event-loop delay, 1 ms resolution). On SIGUSR2 it appends the
// percentiles since the last signal to $BENCH_LOOP_DELAY_FILE and starts over; the emulator's code
// knows nothing of it.
import { appendFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";

const histogram = monitorEventLoopDelay({ resolution: 1 });
histogram.enable();
process.on("SIGUSR2", () => {
  const ms = (ns) => ns / 1e6;
  appendFileSync(
    process.env.BENCH_LOOP_DELAY_FILE,
    `${JSON.stringify({
      p50: ms(histogram.percentile(50)),
      p99: ms(histogram.percentile(99)),
      p999: ms(histogram.percentile(99.9)),
      max: ms(histogram.max),
    })}\n`,
  );
  histogram.reset();
});
