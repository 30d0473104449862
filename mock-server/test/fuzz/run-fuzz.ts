/**
 * `npm run fuzz`: property-based fuzzing of every operation of the three OpenAPI documents against
 * an in-process, listening emulator (see cases.ts for what is generated, harness.ts for how each case
 * runs and what it must answer). Runs every case (it does not stop at the first failure), then
 * prints the distinct failures with a case to reproduce each, and the statistics.
 *
 *   npm run fuzz                             10,000 cases, a new seed (printed)
 *   FUZZ_RUNS=50000 FUZZ_SEED=7 npm run fuzz  (from the root: npm keeps `--flags` for itself there)
 *   npm run fuzz -w mock-server -- --runs 50000 --seed 7
 *   FUZZ_STORE=postgres npm run fuzz          (or --store postgres: on a throw-away PostgreSQL cluster)
 */
import { parseArgs } from "node:util";
import fc from "fast-check";
import { startCluster } from "../../../scripts/postgres-cluster.mjs";
import { fuzzCase, operationIds } from "./cases.ts";
import { FuzzHarness } from "./harness.ts";

const { values } = parseArgs({
  options: { runs: { type: "string" }, seed: { type: "string" }, store: { type: "string" } },
});
const store = values.store ?? process.env.FUZZ_STORE ?? "memory";
const runs = Number(values.runs ?? process.env.FUZZ_RUNS ?? 10_000);
const seedText = values.seed ?? process.env.FUZZ_SEED;
const seed = seedText !== undefined ? Number(seedText) : Date.now() % 2 ** 31;
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(seed) || !["memory", "postgres"].includes(store)) {
  process.stderr.write(
    "usage: run-fuzz.ts [--runs N] [--seed N] [--store memory|postgres] (or FUZZ_RUNS, FUZZ_SEED, FUZZ_STORE)\n",
  );
  process.exit(2);
}
const log = (line: string) => process.stdout.write(`${line}\n`);

log(`fuzzing ${operationIds.length} operations with ${runs} cases, seed ${seed}, ${store} store`);
const cluster = store === "postgres" ? await startCluster() : null;
const harness = await FuzzHarness.start(
  cluster ? { databaseUrl: cluster.url, signingSecret: "the-fuzzer's-signing-secret" } : {},
).catch(async (error: unknown) => {
  await cluster?.stop();
  throw error;
});
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
await cluster?.stop();

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
log(`answered by Node's HTTP layer before the emulator (431, request head over 64 KiB): ${stats.beforeRouting}`);
const mutations = Object.entries(stats.byMutation).sort((a, b) => b[1] - a[1]);
log(
  `mutations (body/token): ${mutations
    .slice(0, 25)
    .map(([m, n]) => `${m}×${n}`)
    .join(" ")}${mutations.length > 25 ? " …" : ""}`,
);
for (const problem of endProblems) log(`AFTER THE RUN: ${problem}`);
for (const [key, { count, example }] of failures) log(`\nFAILURE ×${count}: ${key}\n  ${example}`);
// A short run may not reach every operation; a full one (2,000 cases or more) must.
const failed = failures.size > 0 || endProblems.length > 0 || (runs >= 2000 && untested.length > 0);
log(failed ? "\nfuzzing found problems" : "\nno 5xx, no crash, no hang; every answer documented");
process.exit(failed ? 1 : 0);
