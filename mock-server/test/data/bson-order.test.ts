/**
 * MongoDB's order and types of BSON values in queries, sorts, aggregations and updates
 * (data/bson-order.ts): every BSON type in its place, numbers of every kind by value, and `$type`
 * by MongoDB's names. Documents are read from Extended JSON, as the emulator reads them.
 */
import { Binary, Decimal128, Long, MaxKey, MinKey, ObjectId, Timestamp } from "bson";
import { describe, expect, it } from "vitest";
import { compareBson, equalBson } from "../../src/data/bson-order.ts";
import { type Document, fromEJSON, fromEJSONText } from "../../src/data/documents.ts";
import { canonicalEJSONText } from "../../src/data/ejson-text.ts";
import { aggregate, find, sortedPlaces } from "../../src/data/query-engine.ts";
import { typesOf } from "../../src/data/schemas.ts";
import { applyUpdate } from "../../src/data/updater.ts";
import { onSliceByWork } from "../helpers/main-thread.ts";

const read = (ejson: unknown) => fromEJSON(ejson) as Document;

/** One value of each BSON type, in MongoDB's ascending order. */
const ordered = [
  { _id: "minKey", v: { $minKey: 1 } },
  { _id: "null", v: null },
  { _id: "number", v: { $numberInt: "5" } },
  { _id: "string", v: "s" },
  { _id: "object", v: { a: 1 } },
  { _id: "array", v: [{ b: 1 }] },
  { _id: "binData", v: { $binary: { base64: "AQ==", subType: "00" } } },
  { _id: "objectId", v: { $oid: "5f1d7a0a0000000000000000" } },
  { _id: "bool", v: true },
  { _id: "date", v: { $date: { $numberLong: "0" } } },
  { _id: "timestamp", v: { $timestamp: { t: 1, i: 2 } } },
  { _id: "regex", v: { $regularExpression: { pattern: "a", options: "i" } } },
  { _id: "maxKey", v: { $maxKey: 1 } },
];
const mixed = ordered.map(read);
const ids = (docs: Document[]) => docs.map((d) => d._id);
/** Under the limits every query of the emulator runs under, on the main thread's slice. */
const run = onSliceByWork;

describe("the order of values", () => {
  it("puts every BSON type in MongoDB's place", () => {
    const values = mixed.map((d) => d.v);
    for (let i = 0; i < values.length; i++)
      for (let j = 0; j < values.length; j++)
        expect(compareBson(values[i], values[j]), `${ordered[i]!._id} vs ${ordered[j]!._id}`).toBe(Math.sign(i - j));
  });

  it("compares numbers of every kind by their exact value", () => {
    const d = (text: string) => Decimal128.fromString(text);
    expect(compareBson(d("10"), d("9"))).toBe(1);
    expect(compareBson(d("-10"), d("-9"))).toBe(-1);
    expect(compareBson(d("5.50"), 5.5)).toBe(0);
    expect(compareBson(d("1E+2"), 99)).toBe(1);
    // The double nearest 0.1 is a little above it.
    expect(compareBson(0.1, d("0.1"))).toBe(1);
    expect(compareBson(Long.fromString("9007199254740993"), 2 ** 53)).toBe(1);
    expect(compareBson(Long.fromString("-9223372036854775808"), -Number.MAX_VALUE)).toBe(1);
    expect(compareBson(Number.NaN, Number.NEGATIVE_INFINITY)).toBe(-1);
    expect(compareBson(d("NaN"), Number.NaN)).toBe(0);
    expect(compareBson(d("-Infinity"), -1e308)).toBe(-1);
    expect(compareBson(-0, 0)).toBe(0);
    expect(compareBson(d("-0"), 0)).toBe(0);
    expect(compareBson(5e-324, 0)).toBe(1);
    expect(equalBson(d("2"), 2)).toBe(true);
  });

  it("orders strings by code point, documents and arrays field by field", () => {
    expect(compareBson("\uFFFF", "😀")).toBe(-1);
    expect(compareBson("a", "ab")).toBe(-1);
    expect(compareBson({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(-1);
    expect(equalBson({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false);
    expect(compareBson({ a: "x" }, { a: 1 })).toBe(1);
    expect(compareBson({ a: 1 }, { a: 1, b: 0 })).toBe(-1);
    expect(compareBson([2, 1], [1, 2])).toBe(1);
    expect(compareBson([1], [1, 0])).toBe(-1);
    expect(compareBson(new Binary(new Uint8Array([9])), new Binary(new Uint8Array([0, 0])))).toBe(-1);
    expect(compareBson(new Binary(new Uint8Array([1]), 4), new Binary(new Uint8Array([2]), 0))).toBe(1);
    expect(compareBson(new Date(-1), new Date(0))).toBe(-1);
    expect(compareBson(new Timestamp({ t: 2, i: 0 }), new Timestamp({ t: 1, i: 9 }))).toBe(1);
    expect(compareBson(new ObjectId("000000000000000000000002"), new ObjectId("000000000000000000000010"))).toBe(-1);
    expect(compareBson(new MinKey(), new MinKey())).toBe(0);
  });
});

describe("queries", () => {
  const prices = ["9", "10", "100.5", "-3"].map((p, i) => read({ _id: i, price: { $numberDecimal: p } }));

  it("compare Decimal128 values by value", () => {
    run(() => {
      expect(ids(find(prices, { price: { $gt: read({ $numberDecimal: "9.5" }) } }))).toEqual([1, 2]);
      expect(ids(find(prices, { price: { $lt: 10 } }))).toEqual([0, 3]);
      expect(ids(find(prices, { price: { $eq: 10 } }))).toEqual([1]);
      expect(ids(find(prices, { price: 9 }))).toEqual([0]);
      expect(ids(find(prices, { price: { $in: [100.5, "9"] } }))).toEqual([2]);
      expect(ids(find(prices, { price: { $nin: [9, 10] } }))).toEqual([2, 3]);
    });
  });

  it("bracket comparisons by type but for MinKey and MaxKey", () => {
    const docs = [...mixed, read({ _id: "missing" })];
    run(() => {
      expect(ids(find(docs, { v: { $gt: 1 } }))).toEqual(["number"]);
      expect(ids(find(docs, { v: { $lt: "z" } }))).toEqual(["string"]);
      expect(ids(find(docs, { v: { $lt: new MaxKey() } }))).toEqual(ids(docs).filter((id) => id !== "maxKey"));
      expect(ids(find(docs, { v: { $lte: new MaxKey() } }))).toEqual(ids(docs));
      expect(ids(find(docs, { v: { $gt: new MinKey() } }))).toEqual(ids(docs).filter((id) => id !== "minKey"));
      expect(ids(find(docs, { v: { $eq: new MinKey() } }))).toEqual(["minKey"]);
      expect(ids(find(docs, { v: { $lte: null } }))).toEqual(["null", "missing"]);
      expect(ids(find(docs, { v: { $gte: new Date(-5) } }))).toEqual(["date"]);
      expect(ids(find(docs, { v: { $gt: new Timestamp({ t: 1, i: 1 }) } }))).toEqual(["timestamp"]);
    });
  });

  it("compare arrays as a whole and by element, documents in field order", () => {
    const docs = [read({ _id: 1, a: [1, 5] }), read({ _id: 2, a: [] }), read({ _id: 3, a: { x: 1, y: 2 } })];
    run(() => {
      expect(ids(find(docs, { a: { $gt: 4 } }))).toEqual([1]);
      expect(ids(find(docs, { a: { $gt: [1] } }))).toEqual([1]);
      expect(ids(find(docs, { a: { $lt: [1] } }))).toEqual([2]);
      expect(ids(find(docs, { a: { $eq: [] } }))).toEqual([2]);
      expect(ids(find(docs, { a: { x: 1, y: 2 } }))).toEqual([3]);
      expect(ids(find(docs, { a: { y: 2, x: 1 } }))).toEqual([]);
      expect(ids(find(docs, { a: { $all: [5, 1] } }))).toEqual([1]);
      expect(ids(find([read({ _id: 4, a: 5 })], { a: { $all: [5] } }))).toEqual([4]);
      expect(ids(find(docs, { a: { $all: [] } }))).toEqual([]);
    });
  });

  it("match $type by MongoDB's names and numbers", () => {
    const docs = [
      ...mixed,
      read({ _id: "decimal", v: { $numberDecimal: "1.5" } }),
      read({ _id: "long", v: { $numberLong: "9007199254740993" } }),
      read({ _id: "int64", v: { $numberLong: "4294967296" } }),
      read({ _id: "double", v: { $numberDouble: "2.5" } }),
      read({ _id: "javascript", v: { $code: "x" } }),
      read({ _id: "missing" }),
    ];
    const typed = (type: unknown) => run(() => ids(find(docs, { v: { $type: type } })));
    expect(typed("objectId")).toEqual(["objectId"]);
    expect(typed(7)).toEqual(["objectId"]);
    expect(typed("decimal")).toEqual(["decimal"]);
    expect(typed("long")).toEqual(["long", "int64"]);
    expect(typed("int")).toEqual(["number"]);
    expect(typed("double")).toEqual(["double"]);
    expect(typed("number")).toEqual(["number", "decimal", "long", "int64", "double"]);
    expect(typed("binData")).toEqual(["binData"]);
    expect(typed("timestamp")).toEqual(["timestamp"]);
    expect(typed("minKey")).toEqual(["minKey"]);
    expect(typed(127)).toEqual(["maxKey"]);
    expect(typed("regex")).toEqual(["regex"]);
    expect(typed("javascript")).toEqual(["javascript"]);
    expect(typed("array")).toEqual(["array"]);
    expect(typed("object")).toEqual(["object", "array"]);
    expect(typed(["bool", "date"])).toEqual(["bool", "date"]);
    expect(() => typed("float")).toThrow("Unknown type name alias: float");
    expect(() => typed(99)).toThrow("Invalid numerical type code: 99");
  });
});

describe("sorts", () => {
  it("order every BSON type as MongoDB does, both ways", () => {
    const shuffled = [...mixed].reverse();
    shuffled.push(read({ _id: "missing" }));
    const ascending = ["minKey", "null", "missing", ...ordered.slice(2).map((d) => d._id)];
    run(() => {
      expect(ids(find(shuffled, {}, { sort: { v: 1 } }))).toEqual(ascending);
      // Missing sorts as null; the two keep their order either way.
      expect(ids(find(shuffled, {}, { sort: { v: -1 } }))).toEqual([
        ...ordered
          .slice(2)
          .map((d) => d._id)
          .reverse(),
        "null",
        "missing",
        "minKey",
      ]);
      expect(sortedPlaces(shuffled, { v: 1 }, 3).map((i) => shuffled[i]!._id)).toEqual(ascending.slice(0, 3));
      expect(ids(aggregate(shuffled, [{ $sort: { v: -1 } }, { $limit: 2 }]))).toEqual(["maxKey", "regex"]);
    });
  });

  it("order Decimal128 and other numbers by value", () => {
    const docs = ["9", "10", "-3", "100.5"].map((p, i) => read({ _id: i, n: { $numberDecimal: p } }));
    docs.push(read({ _id: 4, n: 9.5 }), read({ _id: 5, n: { $numberLong: "9223372036854775807" } }));
    run(() => {
      expect(ids(find(docs, {}, { sort: { n: 1 } }))).toEqual([2, 0, 4, 1, 3, 5]);
      expect(sortedPlaces(docs, { n: -1 }, 6)).toEqual([5, 3, 1, 4, 0, 2]);
    });
  });

  it("sort an array by its least element ascending, its greatest descending", () => {
    const docs = [read({ _id: 1, a: [5, 1] }), read({ _id: 2, a: 3 }), read({ _id: 3, a: [] }), read({ _id: 4 })];
    run(() => {
      expect(ids(find(docs, {}, { sort: { a: 1 } }))).toEqual([3, 4, 1, 2]);
      expect(ids(find(docs, {}, { sort: { a: -1 } }))).toEqual([1, 2, 4, 3]);
    });
  });

  it("keep the store's order for $natural, reversed for -1", () => {
    const docs = [3, 1, 2].map((n) => read({ _id: n }));
    run(() => {
      expect(ids(find(docs, {}, { sort: { $natural: -1 } }))).toEqual([2, 1, 3]);
      expect(ids(find(docs, {}, { sort: { $natural: 1 }, limit: 2 }))).toEqual([3, 1]);
      expect(() => find(docs, {}, { sort: { $natural: 1, _id: 1 } })).toThrow("$natural sort cannot be set");
    });
  });

  it("order strings by code point, on the fast path too", () => {
    const docs = [read({ _id: 1, s: "😀" }), read({ _id: 2, s: "\uFFFF" }), read({ _id: 3, s: "a" })];
    run(() => {
      expect(ids(find(docs, {}, { sort: { s: 1 } }))).toEqual([3, 2, 1]);
      expect(sortedPlaces(docs, { s: 1 }, 3)).toEqual([2, 1, 0]);
    });
  });
});

describe("aggregation expressions", () => {
  it("compare across types in MongoDB's order, missing below null", () => {
    const out = run(() =>
      aggregate(mixed.concat(read({ _id: "missing" })), [
        {
          $project: {
            cmp: { $cmp: ["$v", read({ $numberDecimal: "5" })] },
            gtNull: { $gt: ["$v", null] },
            eqNull: { $eq: ["$v", null] },
            type: { $type: "$v" },
            isNumber: { $isNumber: "$v" },
          },
        },
      ]),
    );
    const by = (id: string) => out.find((d) => d._id === id)!;
    expect(by("number")).toMatchObject({ cmp: 0, gtNull: true, eqNull: false, type: "int", isNumber: true });
    expect(by("minKey")).toMatchObject({ cmp: -1, gtNull: false, type: "minKey", isNumber: false });
    expect(by("maxKey")).toMatchObject({ cmp: 1, type: "maxKey" });
    expect(by("objectId")).toMatchObject({ cmp: 1, type: "objectId" });
    expect(by("binData")).toMatchObject({ type: "binData" });
    expect(by("missing")).toMatchObject({ cmp: -1, gtNull: false, eqNull: false, type: "missing" });
    expect(by("null")).toMatchObject({ eqNull: true, type: "null" });
    expect(
      run(() =>
        aggregate(
          [read({ d: { $numberDecimal: "1" } })],
          [{ $project: { t: { $type: "$d" }, n: { $isNumber: "$d" } } }],
        ),
      ),
    ).toEqual([{ t: "decimal", n: true }]);
    expect(run(() => aggregate([{ a: [1, 2] }], [{ $project: { _id: 0, e: { $eq: ["$a", 1] } } }]))).toEqual([
      { e: false },
    ]);
    expect(() => run(() => aggregate([{}], [{ $project: { e: { $eq: [1] } } }]))).toThrow(
      "Expression $eq takes exactly 2 arguments. 1 were passed in.",
    );
  });

  it("take $min and $max in MongoDB's order, leaving out null and missing", () => {
    const [group] = run(() =>
      aggregate(mixed.concat(read({ _id: "missing" })), [
        { $group: { _id: null, max: { $max: "$v" }, min: { $min: "$v" } } },
      ]),
    );
    expect(group!.max).toBeInstanceOf(MaxKey);
    expect(group!.min).toBeInstanceOf(MinKey);
    const prices = ["9", "10"].map((p) => read({ p: { $numberDecimal: p } }));
    const [money] = run(() => aggregate(prices, [{ $group: { _id: null, max: { $max: "$p" }, min: { $min: "$p" } } }]));
    expect(String(money!.max)).toBe("10");
    expect(String(money!.min)).toBe("9");
    const [listed] = run(() =>
      aggregate([{}], [{ $project: { _id: 0, m: { $max: [1, read({ $numberDecimal: "2" }), null] } } }]),
    );
    expect(String(listed!.m)).toBe("2");
    const [none] = run(() => aggregate([{}], [{ $group: { _id: null, m: { $min: "$nothing" } } }]));
    expect(none!.m).toBeNull();
  });
});

describe("updates", () => {
  it("$max and $min compare Decimal128 values by value", () => {
    const doc = read({ _id: 1, high: { $numberDecimal: "9" }, low: { $numberDecimal: "9" } });
    const changed = run(() =>
      applyUpdate(doc, {
        $max: { high: read({ $numberDecimal: "10" }) },
        $min: { low: read({ $numberDecimal: "10" }) },
      }),
    );
    expect(String(doc.high)).toBe("10");
    expect(String(doc.low)).toBe("9");
    expect(changed).toEqual(["high"]);
    run(() => applyUpdate(doc, { $min: { low: 2, fresh: new MaxKey() } }));
    expect(doc.low).toBe(2);
    expect(doc.fresh).toBeInstanceOf(MaxKey);
  });
});

describe("stored timestamps", () => {
  it("stay timestamps, not the numbers the library's Long makes of them", () => {
    const doc = read({ t: { $timestamp: { t: 1, i: 2 } } });
    expect(doc.t).toBeInstanceOf(Timestamp);
    expect(canonicalEJSONText(doc)).toBe('{"t":{"$timestamp":{"t":1,"i":2}}}');
    expect(fromEJSONText('{"t":{"$timestamp":{"t":1,"i":2}}}')).toEqual(doc);
    expect(typesOf(doc.t)).toEqual(["timestamp", "mixed"]);
  });
});

describe("ordered accumulators and arrays", () => {
  it("$topN, $bottomN, $top, $bottom and $sortArray sort in MongoDB's order", () => {
    const docs = ["9", "10", "100.5", "-3"].map((p, i) => read({ _id: i, p: { $numberDecimal: p } }));
    const [group] = run(() =>
      aggregate(docs, [
        {
          $group: {
            _id: null,
            top: { $topN: { n: 2, sortBy: { p: -1 }, output: "$_id" } },
            bottom: { $bottomN: { n: 2, sortBy: { p: -1 }, output: "$_id" } },
            first: { $top: { sortBy: { p: 1 }, output: "$_id" } },
            last: { $bottom: { sortBy: { p: 1 }, output: "$_id" } },
          },
        },
      ]),
    );
    expect(group).toMatchObject({ top: [2, 1], bottom: [0, 3], first: 3, last: 2 });
    const [sorted] = run(() =>
      aggregate(
        [read({ a: [{ $numberDecimal: "10" }, { $numberDecimal: "9" }, { $minKey: 1 }, "x"] })],
        [
          {
            $project: {
              _id: 0,
              up: { $sortArray: { input: "$a", sortBy: 1 } },
              byP: { $sortArray: { input: { $literal: docs }, sortBy: { p: 1 } } },
            },
          },
        ],
      ),
    );
    expect((sorted!.up as unknown[]).map(String)).toEqual(["[object Object]", "9", "10", "x"]);
    expect((sorted!.up as unknown[])[0]).toBeInstanceOf(MinKey);
    expect((sorted!.byP as Document[]).map((d) => d._id)).toEqual([3, 0, 1, 2]);
  });
});

describe("$push", () => {
  const board = () => read({ _id: "b", scores: [{ $numberDecimal: "10" }, 7], name: "n" });
  const after = (update: Document) => {
    const doc = board();
    const changed = run(() => applyUpdate(doc, update));
    return { doc: JSON.parse(canonicalEJSONText(doc)), changed };
  };

  it("sorts in MongoDB's order, then slices, on a new field too", () => {
    expect(
      after({ $push: { scores: { $each: [9, { $numberDecimal: "9.5" }].map(read), $sort: -1, $slice: 3 } } }).doc
        .scores,
    ).toEqual([{ $numberDecimal: "10" }, { $numberDecimal: "9.5" }, { $numberInt: "9" }]);
    expect(after({ $push: { fresh: { $each: [3, 1, 2], $sort: 1, $slice: 2 } } }).doc.fresh).toEqual([
      { $numberInt: "1" },
      { $numberInt: "2" },
    ]);
    expect(
      after({
        $push: {
          people: {
            $each: [
              { n: "b", a: 2 },
              { n: "a", a: 2 },
              { n: "c", a: 1 },
            ],
            $sort: { a: -1, n: 1 },
          },
        },
      }).doc.people,
    ).toEqual([
      { n: "a", a: { $numberInt: "2" } },
      { n: "b", a: { $numberInt: "2" } },
      { n: "c", a: { $numberInt: "1" } },
    ]);
    expect(after({ $push: { scores: { $each: [1], $position: -1 } } }).doc.scores).toEqual([
      { $numberDecimal: "10" },
      { $numberInt: "1" },
      { $numberInt: "7" },
    ]);
    expect(after({ $push: { scores: { $each: [], $slice: 2 } } }).changed).toEqual([]);
  });

  it("refuses a field that holds no array, and bad modifiers", () => {
    expect(() => after({ $push: { name: 1 } })).toThrow(
      `The field 'name' must be an array but is of type string in document {_id: "b"}`,
    );
    expect(() => after({ $push: { scores: { $each: 1 } } })).toThrow("The argument to $each in $push must be an array");
    expect(() => after({ $push: { scores: { $each: [1], $sort: 2 } } })).toThrow(
      "The $sort element value must be either 1 or -1",
    );
    expect(() => after({ $push: { scores: { $each: [1], $sort: "up" } } })).toThrow("The $sort is invalid");
    expect(() => after({ $push: { scores: { $each: [1], $also: 1 } } })).toThrow("Unrecognized clause in $push: $also");
  });
});

describe("$addToSet", () => {
  const tagged = () => read({ _id: "t", tags: [5, { k: 1, j: 2 }], name: "n" });
  const after = (update: Document) => {
    const doc = tagged();
    const changed = run(() => applyUpdate(doc, update));
    return { doc: JSON.parse(canonicalEJSONText(doc)), changed };
  };

  it("adds what the array does not hold by MongoDB's equality", () => {
    expect(after({ $addToSet: { tags: read({ $numberDecimal: "5.0" }) } }).changed).toEqual([]);
    expect(after({ $addToSet: { tags: { j: 2, k: 1 } } }).doc.tags).toHaveLength(3);
    expect(after({ $addToSet: { tags: { $each: [6, 6, 5, "x"] } } }).doc.tags).toEqual([
      { $numberInt: "5" },
      { k: { $numberInt: "1" }, j: { $numberInt: "2" } },
      { $numberInt: "6" },
      "x",
    ]);
    expect(after({ $addToSet: { fresh: { $each: [1, 1] } } }).doc.fresh).toEqual([{ $numberInt: "1" }]);
    expect(() => after({ $addToSet: { name: 1 } })).toThrow(
      "Cannot apply $addToSet to non-array field. Field named 'name' has non-array type string",
    );
  });
});
