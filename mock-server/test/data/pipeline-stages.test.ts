/**
 * Pipeline stages mingo runs with help: `$setWindowFields` (mingo computes its outputs through an
 * internal `$function`, which a request's pipeline may not hold), and joins whose `as` is a dotted
 * path.
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON, toEJSON } from "../../src/data/documents.ts";
import { freezeTree } from "../../src/data/ejson-text.ts";
import { aggregate } from "../../src/data/query-engine.ts";
import { referencedCollections } from "../../src/data/query-jobs.ts";

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

  it("orders by MongoDB's sort: Decimal128 prices among numbers, ties ranked alike", () => {
    const prices = stored([
      { _id: 1, p: { $numberDecimal: "10.5" } },
      { _id: 2, p: { $numberDecimal: "9" } },
      { _id: 3, p: 100 },
      { _id: 4, p: { $numberDecimal: "99.99" } },
      { _id: 5, p: 9 },
    ]);
    const ranked = aggregate(prices, [
      { $setWindowFields: { sortBy: { p: 1 }, output: { r: { $rank: {} }, all: { $push: "$$ROOT._id" } } } },
    ]);
    expect(ranked.map((doc) => [doc._id, doc.r])).toEqual([
      [2, 1],
      [5, 1],
      [1, 3],
      [4, 4],
      [3, 5],
    ]);
    expect(Object.keys(ranked[0]!)).toEqual(["_id", "p", "r", "all"]);
  });

  it("still refuses a request's $function", () => {
    expect(() =>
      aggregate(docs, [{ $project: { x: { $function: { body: "function () { return 1 }", args: [], lang: "js" } } } }]),
    ).toThrow("$function is not allowed in this context");
  });
});

describe("joins", () => {
  it("join fields by MongoDB's equality, arrays by element, missing as null", () => {
    const orders = stored([{ _id: 1, item: 5 }, { _id: 2, items: ["a", { $numberDecimal: "5.00" }] }, { _id: 3 }]);
    const items = stored([
      { _id: "a", code: { $numberDecimal: "5.0" } },
      { _id: "b", code: 6 },
      { _id: "c" },
      { _id: "d", code: [7, 5] },
    ]);
    const joined = (localField: string, foreignField: string) =>
      aggregate(orders, [{ $lookup: { from: "items", localField, foreignField, as: "j" } }], {
        collectionResolver: () => items,
      }).map((doc) => [doc._id, (doc.j as Document[]).map((item) => item._id)]);
    expect(joined("item", "code")).toEqual([
      [1, ["a", "d"]],
      [2, ["c"]],
      [3, ["c"]],
    ]);
    expect(joined("items", "_id")).toEqual([
      [1, []],
      [2, ["a"]],
      [3, []],
    ]);
    expect(joined("items", "code")).toEqual([
      [1, ["c"]],
      [2, ["a", "d"]],
      [3, ["c"]],
    ]);
  });

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

describe("the collections a pipeline reads", () => {
  it("are its joins' and unions', within sub-pipelines too, read from the stages only", () => {
    const pipeline = [
      { $match: { $expr: { $eq: ["$a", 1] } }, ignored: { $lookup: { from: "not-a-stage" } } },
      { $lookup: { from: "a", localField: "x", foreignField: "y", as: "j" } },
      { $graphLookup: { from: "b", startWith: "$x", connectFromField: "x", connectToField: "y", as: "g" } },
      { $unionWith: "c" },
      { $unionWith: { coll: "d", pipeline: [{ $lookup: { from: "e", as: "k", pipeline: [{ $unionWith: "f" }] } }] } },
      { $facet: { one: [{ $lookup: { from: "g", as: "m", pipeline: [] } }], two: [{ $unionWith: { coll: "h" } }] } },
      { $project: { v: { $literal: { $lookup: { from: "not-a-stage-either" } } } } },
      { $group: { _id: null, ...Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`f${i}`, { $sum: 1 }])) } },
    ];
    expect([...referencedCollections(pipeline)].sort()).toEqual(["a", "b", "c", "d", "e", "f", "g", "h"]);
    expect([...referencedCollections([{ $match: {} }])]).toEqual([]);
  });
});

describe("operators mingo lacks or answers otherwise", () => {
  const docs = stored([
    { _id: 1, s: "héllo wörld", d: { $date: "2024-03-10T15:30:00Z" }, o: { k: "v" }, n: 7 },
    { _id: 2, s: "x", d: { $date: "2023-01-01T00:00:00Z" }, o: {}, n: 2 },
  ]);
  const values = (expr: unknown) => aggregate(docs, [{ $project: { _id: 0, v: expr } }]).map((doc) => doc.v);

  it("finds code points, sizes documents and strings, numbers Sunday weeks", () => {
    expect(values({ $indexOfCP: ["$s", "ö"] })).toEqual([7, -1]);
    expect(values({ $indexOfCP: ["$s", "l", 3] })).toEqual([3, -1]);
    expect(values({ $indexOfCP: ["$s", "l", 0, 2] })).toEqual([-1, -1]);
    expect(values({ $bsonSize: "$o" })).toEqual([14, 5]);
    expect(values({ $binarySize: "$s" })).toEqual([13, 1]);
    expect(values({ $week: "$d" })).toEqual([10, 1]);
    expect(values({ $week: { date: "$d", timezone: "America/New_York" } })).toEqual([10, 52]);
    expect(() => values({ $bsonSize: "$s" })).toThrow("$bsonSize requires a document input, found: string");
    const [stamped] = aggregate(stored([{ t: { $timestamp: { t: 100, i: 3 } } }]), [
      { $project: { _id: 0, s: { $tsSecond: "$t" }, i: { $tsIncrement: "$t" }, d: { $toDate: "$t" } } },
    ]);
    expect(stamped).toEqual({ s: 100, i: 3, d: new Date(100_000) });
  });

  it("writes a date's parts year first, a bucket's _id first, and drops what $redact prunes", () => {
    expect(JSON.stringify(values({ $dateToParts: { date: "$d" } })[0])).toBe(
      '{"year":2024,"month":3,"day":10,"hour":15,"minute":30,"second":0,"millisecond":0}',
    );
    const buckets = aggregate(docs, [{ $bucket: { groupBy: "$n", boundaries: [0, 5, 10] } }]);
    expect(JSON.stringify(buckets)).toBe('[{"_id":0,"count":1},{"_id":5,"count":1}]');
    const auto = aggregate(docs, [{ $bucketAuto: { groupBy: "$n", buckets: 1 } }]);
    expect(JSON.stringify(auto)).toBe('[{"_id":{"min":2,"max":7},"count":2}]');
    const kept = aggregate(docs, [{ $redact: { $cond: [{ $gt: ["$n", 5] }, "$$KEEP", "$$PRUNE"] } }]);
    expect(kept.map((doc) => doc._id)).toEqual([1]);
  });

  it("buckets values in MongoDB's order, Decimal128 prices among numbers, empty buckets left out", () => {
    const prices = stored([
      { _id: 1, p: { $numberDecimal: "10.5" } },
      { _id: 2, p: { $numberDecimal: "9" } },
      { _id: 3, p: 100 },
      { _id: 4, p: { $numberDecimal: "99.99" } },
      { _id: 5, p: "x" },
    ]);
    const buckets = aggregate(prices, [
      {
        $bucket: {
          groupBy: "$p",
          boundaries: [0, 10, 100, 1000, 5000],
          default: "other",
          output: { ids: { $push: "$_id" } },
        },
      },
    ]);
    expect(buckets.map((b) => [String(b._id), b.ids])).toEqual([
      ["0", [2]],
      ["10", [1, 4]],
      ["100", [3]],
      ["other", [5]],
    ]);
    expect(() => aggregate(prices, [{ $bucket: { groupBy: "$p", boundaries: [0, 10] } }])).toThrow(
      "$switch could not find a matching branch for an input, and no default was specified.",
    );
    expect(() => aggregate(prices, [{ $bucket: { groupBy: "p", boundaries: [0, 10] } }])).toThrow(
      "The $bucket 'groupBy' field must be defined as a $-prefixed path or an expression, but found: \"p\"",
    );
    expect(() => aggregate(prices, [{ $bucket: { groupBy: "$p", boundaries: [10, 0] } }])).toThrow(
      "The 'boundaries' option to $bucket must be sorted, but elements 0 and 1 are not in ascending order (10 is not less than 0).",
    );
    const auto = aggregate(prices.slice(0, 4), [{ $bucketAuto: { groupBy: "$p", buckets: 2 } }]);
    expect(auto.map((b) => [String((b._id as Document).min), String((b._id as Document).max), b.count])).toEqual([
      ["9", "99.99", 2],
      ["99.99", "100", 2],
    ]);
  });

  it("unwinds as MongoDB's documentation shows: indexes as longs, null for what is no array", () => {
    const inventory = stored([
      { _id: 1, item: "ABC", sizes: ["S", "M"] },
      { _id: 2, item: "EFG", sizes: [] },
      { _id: 3, item: "IJK", sizes: "M" },
      { _id: 4, item: "LMN" },
      { _id: 5, item: "XYZ", sizes: null },
    ]);
    const unwound = aggregate(inventory, [
      { $unwind: { path: "$sizes", includeArrayIndex: "arrayIndex", preserveNullAndEmptyArrays: true } },
    ]);
    expect(JSON.stringify(toEJSON(unwound))).toBe(
      JSON.stringify([
        { _id: { $numberInt: "1" }, item: "ABC", sizes: "S", arrayIndex: { $numberLong: "0" } },
        { _id: { $numberInt: "1" }, item: "ABC", sizes: "M", arrayIndex: { $numberLong: "1" } },
        { _id: { $numberInt: "2" }, item: "EFG", arrayIndex: null },
        { _id: { $numberInt: "3" }, item: "IJK", sizes: "M", arrayIndex: null },
        { _id: { $numberInt: "4" }, item: "LMN", arrayIndex: null },
        { _id: { $numberInt: "5" }, item: "XYZ", sizes: null, arrayIndex: null },
      ]),
    );
    expect(aggregate(inventory, [{ $unwind: "$sizes" }]).map((doc) => doc._id)).toEqual([1, 1, 3]);
    expect(() => aggregate(inventory, [{ $unwind: "sizes" }])).toThrow(
      "path option to $unwind stage should be prefixed with a '$': sizes",
    );
  });

  it("accumulates $firstN, $lastN, $maxN and $minN in a $group", () => {
    const [group] = aggregate(docs, [
      {
        $group: {
          _id: null,
          first: { $firstN: { n: 1, input: "$n" } },
          last: { $lastN: { n: 1, input: "$n" } },
          most: { $maxN: { n: 2, input: "$n" } },
          least: { $minN: { n: 1, input: "$n" } },
        },
      },
    ]);
    expect(group).toEqual({ _id: null, first: [7], last: [2], most: [7, 2], least: [2] });
  });
});

describe("groups and sets", () => {
  const docs = stored([
    { _id: 1, c: 5, v: "a" },
    { _id: 2, c: { $numberDecimal: "5.0" }, v: "b" },
    { _id: 3, c: { x: 1, y: 2 } },
    { _id: 4, c: { y: 2, x: 1 }, v: "c" },
    { _id: 5, c: null, v: "d" },
    { _id: 6, v: "e" },
  ]);

  it("group values MongoDB holds equal, by the first one's form; missing with null", () => {
    const groups = aggregate(docs, [{ $group: { _id: "$c", ids: { $push: "$_id" }, first: { $first: "$v" } } }]);
    expect(JSON.stringify(groups)).toBe(
      '[{"_id":5,"ids":[1,2],"first":"a"},{"_id":{"x":1,"y":2},"ids":[3],"first":null},' +
        '{"_id":{"y":2,"x":1},"ids":[4],"first":"c"},{"_id":null,"ids":[5,6],"first":"d"}]',
    );
  });

  it("leave missing values out of $push and $addToSet, and add each equal value once", () => {
    const [all] = aggregate(docs, [{ $group: { _id: null, pushed: { $push: "$v" }, set: { $addToSet: "$c" } } }]);
    expect(all!.pushed).toEqual(["a", "b", "c", "d", "e"]);
    expect(JSON.stringify(all!.set)).toBe('[5,{"x":1,"y":2},{"y":2,"x":1},null]');
  });

  it("give accumulators the group's key as MongoDB does", () => {
    const [first, second] = aggregate(
      stored([
        { k: "a", n: 1 },
        { k: "a", n: 2 },
        { k: "b", n: 3 },
        { k: "b", n: 4 },
      ]),
      [
        {
          $group: {
            _id: { k: "$k" },
            top: { $topN: { n: { $cond: [{ $eq: ["$k", "a"] }, 1, 2] }, sortBy: { n: -1 }, output: "$n" } },
          },
        },
      ],
    );
    expect(first).toEqual({ _id: { k: "a" }, top: [2] });
    expect(second).toEqual({ _id: { k: "b" }, top: [4, 3] });
  });
});

describe("set expressions", () => {
  const [doc] = stored([
    {
      a: [5, { $numberDecimal: "5.0" }, "x", { k: 1, j: 2 }],
      b: [{ $numberDecimal: "5.00" }, { j: 2, k: 1 }],
      n: null,
    },
  ]);
  const value = (expr: unknown) => JSON.stringify(aggregate([doc!], [{ $project: { _id: 0, v: expr } }])[0]!.v);

  it("treat values MongoDB holds equal as one member, documents in field order", () => {
    expect(value({ $setUnion: ["$a", "$b"] })).toBe('[5,"x",{"k":1,"j":2},{"j":2,"k":1}]');
    expect(value({ $setIntersection: ["$a", "$b"] })).toBe("[5]");
    expect(value({ $setDifference: ["$a", "$b"] })).toBe('["x",{"k":1,"j":2}]');
    expect(
      value({
        $setEquals: [
          [1, 1, 2],
          [{ $toDecimal: 2 }, 1],
        ],
      }),
    ).toBe("true");
    expect(value({ $setIsSubset: ["$b", "$a"] })).toBe("false");
    expect(value({ $in: [{ $toDecimal: "5.000" }, "$a"] })).toBe("true");
    expect(value({ $indexOfArray: ["$a", { j: 2, k: 1 }] })).toBe("-1");
    expect(value({ $indexOfArray: ["$a", { $toDecimal: "5.00" }, 1] })).toBe("1");
    expect(value({ $indexOfArray: ["$a", "x", 0, 2] })).toBe("-1");
    expect(value({ $setUnion: ["$a", "$n"] })).toBe("null");
    expect(() => value({ $setUnion: ["$a", "text"] })).toThrow(
      "All operands of $setUnion must be arrays. One argument is of type: string",
    );
  });
});
