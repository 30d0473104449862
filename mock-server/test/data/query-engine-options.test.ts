/**
 * Queries and aggregations start from one shared set of mingo options (data/query-engine.ts
 * `sharedOptions`): no copy of the operator tables per query, and nothing of one query's state —
 * its root document, its `$$NOW` — seen by the next.
 */
import { Context } from "mingo/core";
import { afterEach, describe, expect, it, vi } from "vitest";
import { aggregate, compileQuery, find } from "../../src/data/query-engine.ts";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the engine's shared options", () => {
  it("copy no operator tables per query or aggregation", () => {
    const docs = [
      { _id: 1, n: 2, tags: ["a"] },
      { _id: 2, n: 1, tags: ["b"] },
    ];
    const copies = vi.spyOn(Context, "from");
    expect(find(docs, { n: { $gte: 1 } }, { sort: { n: 1 } }).map((d) => d._id)).toEqual([2, 1]);
    expect(compileQuery({ tags: "a" }).test(docs[0])).toBe(true);
    expect(aggregate(docs, [{ $match: { n: 2 } }, { $project: { _id: 0, twice: { $multiply: ["$n", 2] } } }])).toEqual([
      { twice: 4 },
    ]);
    expect(copies).not.toHaveBeenCalled();
  });

  it("keep each query's root document and time to itself", async () => {
    const docs = [{ _id: 1, a: 1 }];
    const first = aggregate(docs, [{ $project: { root: "$$ROOT", now: "$$NOW" } }]);
    await new Promise<void>((resolve) => {
      const started = Date.now();
      const wait = () => (Date.now() > started + 5 ? resolve() : setImmediate(wait));
      wait();
    });
    const second = aggregate([{ _id: 2, b: 2 }], [{ $project: { root: "$$ROOT", now: "$$NOW" } }]);
    expect(first[0]!.root).toEqual({ _id: 1, a: 1 });
    expect(second[0]!.root).toEqual({ _id: 2, b: 2 });
    expect((second[0]!.now as Date).getTime()).toBeGreaterThan((first[0]!.now as Date).getTime());
    expect(find(docs, { $expr: { $eq: ["$$ROOT.a", 1] } })).toHaveLength(1);
    expect(find([{ _id: 3, a: 2 }], { $expr: { $eq: ["$$ROOT.a", 1] } })).toHaveLength(0);
  });
});
