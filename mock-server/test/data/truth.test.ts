/**
 * MongoDB's truth in expressions (truth.ts): zero of every numeric type — a Decimal128 `0.00`, an
 * Int64 `0` — is false wherever an expression is tested, as null, missing and false are
 * (the manual's $and/$or/$cond: "evaluates as false … null, 0, and undefined").
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON } from "../../src/data/documents.ts";
import { freezeTree } from "../../src/data/ejson-text.ts";
import { aggregate, find } from "../../src/data/query-engine.ts";

const stored = (values: unknown[]) =>
  values.map((value) => {
    const doc = fromEJSON(value) as Document;
    freezeTree(doc);
    return doc;
  });

const docs = stored([
  { _id: 1, v: { $numberDecimal: "0.00" } },
  { _id: 2, v: { $numberLong: "0" } },
  { _id: 3, v: { $numberDouble: "0.0" } },
  { _id: 4, v: { $numberDecimal: "0.5" } },
  { _id: 5, v: { $numberLong: "7" } },
]);
const values = (expression: unknown) => aggregate(docs, [{ $project: { _id: 0, r: expression } }]).map((doc) => doc.r);

describe("MongoDB's truth", () => {
  it("holds zero of every numeric type false in $cond, $and, $or and $not", () => {
    expect(values({ $cond: ["$v", "yes", "no"] })).toEqual(["no", "no", "no", "yes", "yes"]);
    // biome-ignore lint/suspicious/noThenProperty: $cond names its result `then`
    expect(values({ $cond: { if: "$v", then: 1, else: 0 } })).toEqual([0, 0, 0, 1, 1]);
    expect(values({ $and: ["$v", true] })).toEqual([false, false, false, true, true]);
    expect(values({ $or: ["$v", false] })).toEqual([false, false, false, true, true]);
    expect(values({ $not: ["$v"] })).toEqual([true, true, true, false, false]);
    // One argument need not be a list.
    expect(values({ $and: "$v" })).toEqual([false, false, false, true, true]);
  });

  it("filters, and tests elements, by the same truth", () => {
    const [out] = aggregate(
      stored([{ list: [{ $numberDecimal: "0" }, { $numberLong: "0" }, 1, { $numberDecimal: "2" }] }]),
      [
        {
          $project: {
            _id: 0,
            kept: { $filter: { input: "$list", cond: "$$this" } },
            all: { $allElementsTrue: ["$list"] },
            any: { $anyElementTrue: [{ $literal: fromEJSON([{ $numberDecimal: "0" }, null, false]) }] },
          },
        },
      ],
    );
    expect(out).toEqual({ kept: [1, fromEJSON({ $numberDecimal: "2" })], all: false, any: false });
  });

  it("matches a query's $expr by it", () => {
    expect(find(docs, { $expr: "$v" }).map((doc) => doc._id)).toEqual([4, 5]);
    expect(aggregate(docs, [{ $match: { $expr: { $not: ["$v"] } } }]).map((doc) => doc._id)).toEqual([1, 2, 3]);
  });

  it("refuses $cond and $not as MongoDB parses them", () => {
    // biome-ignore lint/suspicious/noThenProperty: $cond names its result `then`
    expect(() => values({ $cond: { if: true, then: 1 } })).toThrow("Missing 'else' parameter to $cond");
    // biome-ignore lint/suspicious/noThenProperty: $cond names its result `then`
    expect(() => values({ $cond: { if: true, then: 1, else: 2, other: 3 } })).toThrow(
      "Unrecognized parameter to $cond: other",
    );
    expect(() => values({ $cond: [true, 1] })).toThrow("Expression $cond takes exactly 3 arguments. 2 were passed in.");
    expect(() => values({ $not: [1, 2] })).toThrow("Expression $not takes exactly 1 arguments. 2 were passed in.");
    expect(() => values({ $allElementsTrue: ["$missing"] })).toThrow(
      "$allElementsTrue's argument must be an array, but is missing",
    );
  });
});
