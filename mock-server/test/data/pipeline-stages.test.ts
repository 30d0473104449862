/**
 * Pipeline stages mingo runs with help: `$setWindowFields` (mingo computes its outputs through an
 * internal `$function`, which a request's pipeline may not hold), and joins whose `as` is a dotted
 * path.
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON } from "../../src/data/documents.ts";
import { freezeTree } from "../../src/data/ejson-text.ts";
import { aggregate } from "../../src/data/query-engine.ts";

const stored = (values: unknown[]) =>
  values.map((value) => {
    const doc = fromEJSON(value) as Document;
    freezeTree(doc);
    return doc;
  });

describe("$setWindowFields", () => {
  const docs = stored([1, 2, 2, 3].map((n, i) => ({ _id: i, n, g: i % 2 })));
  const windows = (output: Document) =>
    aggregate(docs, [
      { $setWindowFields: { partitionBy: "$g", sortBy: { n: 1 }, output } },
      { $sort: { _id: 1 } },
      { $project: { _id: 0, w: 1 } },
    ]).map((doc) => doc.w);

  it("numbers, ranks, shifts and sums over windows of each partition", () => {
    expect(windows({ w: { $documentNumber: {} } })).toEqual([1, 1, 2, 2]);
    expect(windows({ w: { $rank: {} } })).toEqual([1, 1, 2, 2]);
    expect(windows({ w: { $shift: { output: "$n", by: 1, default: 0 } } })).toEqual([2, 3, 0, 0]);
    expect(windows({ w: { $sum: "$n", window: { documents: ["unbounded", "current"] } } })).toEqual([1, 2, 3, 5]);
    expect(windows({ w: { $push: "$n" } })).toEqual([
      [1, 2],
      [2, 3],
      [1, 2],
      [2, 3],
    ]);
  });

  it("still refuses a request's $function", () => {
    expect(() =>
      aggregate(docs, [{ $project: { x: { $function: { body: "function () { return 1 }", args: [], lang: "js" } } } }]),
    ).toThrow("$function is not allowed in this context");
  });
});

describe("joins", () => {
  it("write a dotted `as` into the embedded document", () => {
    const [doc] = stored([{ _id: 1, o: { p: 1 }, k: 2 }]);
    const others = stored([{ _id: 9, k: 2 }]);
    const [joined] = aggregate(
      [doc!],
      [{ $lookup: { from: "others", localField: "k", foreignField: "k", as: "o.matches" } }],
      { collectionResolver: () => others },
    );
    expect(JSON.stringify(joined)).toBe('{"_id":1,"o":{"p":1,"matches":[{"_id":9,"k":2}]},"k":2}');
  });
});
