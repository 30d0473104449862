// A measuring preload for the emulator process, used by the benchmark and soak scripts only
// (`node --expose-gc --import ./scripts/bench/probe.mjs mock-server/dist/cli.js …`); the emulator's
// own code knows nothing of it. On SIGUSR2 it runs a full garbage collection and writes the
// process's memory and its active handles and timers as one JSON line to the file named by
// BENCH_PROBE_FILE (written whole, then renamed, so a reader never sees half a line).
import { renameSync, writeFileSync } from "node:fs";

const out = process.env.BENCH_PROBE_FILE;
if (out) {
  let sequence = 0;
  process.on("SIGUSR2", () => {
    globalThis.gc?.();
    globalThis.gc?.();
    const resources = {};
    for (const name of process.getActiveResourcesInfo()) resources[name] = (resources[name] ?? 0) + 1;
    const snapshot = { sequence: ++sequence, at: Date.now(), ...process.memoryUsage(), resources };
    writeFileSync(`${out}.tmp`, `${JSON.stringify(snapshot)}\n`);
    renameSync(`${out}.tmp`, out);
  });
}
