/**
 * `npm run fuzz`: property-based fuzzing of every operation of the three OpenAPI documents against
 * an in-process, listening emulator (see cases.ts for what is generated, harness.ts for how each case
 * runs and what it must answer). Runs every case (it does not stop at the first failure), then
 * prints the distinct failures with a case to reproduce each, and the statistics.
 *
 *   npm run fuzz -- [--runs 10000] [--seed N]
 */
import { parseArgs } from "node:util";
import fc from "fast-check";
import { fuzzCase, operationIds } from "./cases.ts";
import { FuzzHarness } from "./harness.ts";

const { values } = parseArgs({
  options: { runs: { type: "string", default: "10000" }, seed: { type: "string" } },
});
const runs = Number(values.runs);
const seed = values.seed !== undefined ? Number(values.seed) : Date.now() % 2 ** 31;
const log = (line: string) => process.stdout.write(`${line}\n`);

log(`fuzzing ${operationIds.length} operations with ${runs} cases, seed ${seed}`);
const harness = await FuzzHarness.start();
const failures = new Map<string, { count: number; example: string }>();
const started = Date.now();
let index = 0;
// Cases are drawn in batches from one seeded stream (reproducible with the same --seed and --runs).
for (const c of fc.sample(fuzzCase, { seed, numRuns: runs })) {
  index++;
  const problem = await harness.run(c);
  if (problem) {
    // Group by the problem's first line without ids and numbers.
    const key = problem
      .split("\n")[0]!
      .replace(/[0-9a-f]{24}/g, "<id>")
      .replace(/\d+/g, "N")
      .slice(0, 200);
    const seen = failures.get(key);
    if (seen) seen.count++;
    else failures.set(key, { count: 1, example: `case #${index}: ${problem}` });
  }
  if (index % 1000 === 0)
    log(`  ${index} cases, ${failures.size} distinct failures, ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
const endProblems = await harness.finish();
await harness.close();

const { stats } = harness;
const untested = operationIds.filter((id) => !stats.byOperation[id]);
log(`\n${stats.cases} cases in ${((Date.now() - started) / 1000).toFixed(1)} s (seed ${seed})`);
log(
  `operations reached: ${operationIds.length - untested.length}/${operationIds.length}${untested.length ? ` (missing: ${untested.join(", ")})` : ""}`,
);
log(
  `statuses: ${Object.entries(stats.byStatus)
    .map(([s, n]) => `${s}×${n}`)
    .join(" ")}`,
);
log(`answered by Node's HTTP layer before the emulator (431, request head over 16 KB): ${stats.beforeRouting}`);
const mutations = Object.entries(stats.byMutation).sort((a, b) => b[1] - a[1]);
log(
  `mutations (body/token): ${mutations
    .slice(0, 25)
    .map(([m, n]) => `${m}×${n}`)
    .join(" ")}${mutations.length > 25 ? " …" : ""}`,
);
for (const problem of endProblems) log(`AFTER THE RUN: ${problem}`);
for (const [key, { count, example }] of failures) log(`\nFAILURE ×${count}: ${key}\n  ${example}`);
const failed = failures.size > 0 || endProblems.length > 0 || untested.length > 0;
log(failed ? "\nfuzzing found problems" : "\nno 5xx, no crash, no hang; every answer documented");
process.exit(failed ? 1 : 0);
