/**
 * The query engine's overhead on the in-memory hot path (docs/decisions/0006-query-limits.md):
 * 1,000 documents through plain mingo and through the emulator's engine (operators wrapped for the
 * limits, regular expressions rewritten), median CPU time per run of 7 rounds of 500.
 *
 *   taskset -c 1 npx tsx mock-server/scripts/query-engine-bench.ts
 */
import { ObjectId } from "bson";
import { find as mingoFind, Query } from "mingo";
import { compileQuery, find } from "../src/data/query-engine.ts";
import { defaultQueryLimits, withQueryLimits } from "../src/data/query-limits.ts";

const docs = Array.from({ length: 1000 }, (_, i) => ({
  _id: new ObjectId(),
  owner_id: `u${i % 10}`,
  n: i,
  title: `note ${i}`,
  tags: ["a", "b"],
  at: new Date(),
}));
const opts = { scriptEnabled: false, useStrictMode: true };
const queries: Record<string, unknown>[] = [
  {},
  { owner_id: "u3" },
  { n: { $gte: 500 }, owner_id: { $in: ["u1", "u2"] } },
];
function time(label: string, fn: () => unknown) {
  for (let i = 0; i < 300; i++) fn();
  const rounds: number[] = [];
  for (let r = 0; r < 7; r++) {
    const t = process.cpuUsage();
    for (let i = 0; i < 500; i++) fn();
    const d = process.cpuUsage(t);
    rounds.push((d.user + d.system) / 500);
  }
  rounds.sort((a, b) => a - b);
  console.log(label.padEnd(50), `${rounds[3]!.toFixed(1)} µs`);
}
for (const q of queries) {
  time(`mingo ${JSON.stringify(q)}`, () => mingoFind(docs, q, undefined, opts).limit(50000).all());
  time(`engine ${JSON.stringify(q)}`, () => withQueryLimits(defaultQueryLimits, () => find(docs, q, { limit: 50000 })));
  time(`mingo Query.test ${JSON.stringify(q)}`, () => {
    const qq = new Query(q, opts);
    return docs.filter((d) => qq.test(d));
  });
  time(`engine compileQuery ${JSON.stringify(q)}`, () =>
    withQueryLimits(defaultQueryLimits, () => {
      const qq = compileQuery(q);
      return docs.filter((d) => qq.test(d));
    }),
  );
}
