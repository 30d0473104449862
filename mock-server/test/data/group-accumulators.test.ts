/**
 * `$group` and its accumulators as MongoDB 8.0 computes them (group-stage.ts, accumulators.ts;
 * docs/decisions/0045-group-accumulators.md): the specification's refusals, the group keys, each
 * accumulator's treatment of missing, null and other values and its result's type, the expression
 * forms in a `$project`, and documents built by expressions without their missing fields.
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON, toEJSON } from "../../src/data/documents.ts";
import { aggregate } from "../../src/data/query-engine.ts";

/** The pipeline's result as Extended JSON, or the refusal's text. */
function run(docs: unknown[], pipeline: unknown[]): unknown {
  try {
    return toEJSON(aggregate(fromEJSON(docs) as Document[], fromEJSON(pipeline) as Document[]));
  } catch (error) {
    return `ERR ${(error as Error).message}`;
  }
}

/** One accumulator over `docs` in one group: its value as Extended JSON, or the refusal's text. */
function accumulate(docs: unknown[], accumulator: unknown): unknown {
  const out = run(docs, [{ $group: { _id: null, v: accumulator } }]);
  return Array.isArray(out) ? (out[0] as { v: unknown }).v : out;
}

/** An expression over one document, as Extended JSON ("missing" when it has no value), or the refusal. */
function evaluate(expr: unknown, doc: Document = {}): unknown {
  const out = run([{ _id: 1, ...doc }], [{ $project: { _id: 0, v: expr } }]);
  if (!Array.isArray(out)) return out;
  return "v" in (out[0] as Document) ? (out[0] as Document).v : "missing";
}

const int = (n: number) => ({ $numberInt: String(n) });
const long = (n: string) => ({ $numberLong: n });
const double = (n: string) => ({ $numberDouble: n });
const decimal = (n: string) => ({ $numberDecimal: n });

describe("a $group specification", () => {
  const refusal = (spec: unknown) => run([], [{ $group: spec }]);

  it("is refused as MongoDB parses it, over no documents too", () => {
    expect(refusal([1])).toBe("ERR a group's fields must be specified in an object");
    expect(refusal({ n: { $sum: 1 } })).toBe("ERR a group specification must include an _id");
    expect(refusal({ _id: null, n: 1 })).toBe("ERR The field 'n' must be an accumulator object");
    expect(refusal({ _id: null, n: {} })).toBe("ERR The field 'n' must be an accumulator object");
    expect(refusal({ _id: null, n: { sum: 1 } })).toBe("ERR The field 'n' must be an accumulator object");
    expect(refusal({ _id: null, "a.b": { $sum: 1 } })).toBe("ERR The field name 'a.b' cannot contain '.'");
    expect(refusal({ _id: null, $a: { $sum: 1 } })).toBe("ERR The field name '$a' cannot be an operator name");
    expect(refusal({ _id: null, n: { $sum: 1, $avg: 1 } })).toBe("ERR The field 'n' must specify one accumulator");
    expect(refusal({ _id: null, n: { $sum: [1, 2] } })).toBe("ERR The $sum accumulator is a unary operator");
    expect(refusal({ _id: null, n: { $foo: 1 } })).toBe("ERR unknown group operator '$foo'");
    expect(refusal({ _id: null, n: { $count: { x: 1 } } })).toBe("ERR $count takes no arguments, i.e. $count:{}");
  });

  it("checks its fields in order, the missing _id last", () => {
    expect(refusal({ "a.b": 1, n: { $foo: 1 } })).toBe("ERR The field 'a.b' must be an accumulator object");
    expect(refusal({ n: { $foo: 1 } })).toBe("ERR unknown group operator '$foo'");
  });

  it("checks an accumulator's own arguments before reading documents", () => {
    expect(refusal({ _id: null, v: { $minN: 5 } })).toBe("ERR specification must be an object; found $minN: 5");
    expect(refusal({ _id: null, v: { $firstN: { n: 2, input: "$a", x: 1 } } })).toBe(
      "ERR Unknown argument for 'n' operator: x",
    );
    expect(refusal({ _id: null, v: { $maxN: { input: "$a" } } })).toBe("ERR Missing value for 'n'");
    expect(refusal({ _id: null, v: { $lastN: { n: 2 } } })).toBe("ERR Missing value for 'input'");
    expect(refusal({ _id: null, v: { $top: { n: 1, output: "$a", sortBy: { a: 1 } } } })).toBe(
      "ERR Unknown argument to $top 'n'",
    );
    expect(refusal({ _id: null, v: { $topN: { output: "$a", sortBy: { a: 1 } } } })).toBe("ERR Missing value for 'n'");
    expect(refusal({ _id: null, v: { $bottom: { sortBy: { a: 1 } } } })).toBe("ERR Missing value for 'output'");
    expect(refusal({ _id: null, v: { $bottom: { output: "$a" } } })).toBe("ERR Missing value for 'sortBy'");
    expect(refusal({ _id: null, v: { $top: { output: "$a", sortBy: 1 } } })).toBe(
      "ERR invalid parameter: expected an object (sortBy)",
    );
    expect(refusal({ _id: null, v: { $top: { output: "$a", sortBy: { a: "up" } } } })).toBe(
      'ERR Illegal key in $sort specification: a: "up"',
    );
    expect(refusal({ _id: null, v: { $top: { output: "$a", sortBy: { a: 2 } } } })).toBe(
      "ERR $sort key ordering must be 1 (for ascending) or -1 (for descending)",
    );
    expect(refusal({ _id: null, v: { $median: { input: "$a" } } })).toBe(
      "ERR BSON field '$median.method' is missing but a required field",
    );
    expect(refusal({ _id: null, v: { $median: { input: "$a", method: "approximate", p: [0.5] } } })).toBe(
      "ERR BSON field '$median.p' is an unknown field.",
    );
    expect(refusal({ _id: null, v: { $percentile: { input: "$a", p: [0.5], method: "exact" } } })).toBe(
      "ERR Currently only 'approximate' can be used as percentile 'method'.",
    );
    expect(refusal({ _id: null, v: { $percentile: { input: "$a", p: [1.5], method: "approximate" } } })).toBe(
      "ERR The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: 1.5",
    );
    expect(refusal({ _id: null, v: { $percentile: { input: "$a", p: "$ps", method: "approximate" } } })).toBe(
      `ERR The $percentile 'p' field must be an array of constant values, but found value: p: "$ps".`,
    );
  });

  it("refuses an _id document of inclusion-style values", () => {
    expect(refusal({ _id: { a: 1 }, n: { $sum: 1 } })).toBe("ERR $group does not support inclusion-style expressions");
    expect(refusal({ _id: { a: "$a", "b.c": "$b" }, n: { $sum: 1 } })).toBe(
      "ERR FieldPath field names may not contain '.'. Consider using $getField or $setField.",
    );
  });

  it("checks $bucket's outputs as a $group's", () => {
    expect(run([], [{ $bucket: { groupBy: "$a", boundaries: [0, 5], output: { n: { $sum: 1, $avg: 1 } } } }])).toBe(
      "ERR The field 'n' must specify one accumulator",
    );
  });
});

describe("group keys", () => {
  const docs = [
    { _id: 1, a: null, b: 1 },
    { _id: 2, b: 1 },
    { _id: 3, a: null, b: 1 },
    { _id: 4, a: { $numberLong: "5" }, b: 2 },
    { _id: 5, a: 5.0, b: 2 },
  ];
  const groups = (id: unknown) =>
    run(docs, [{ $group: { _id: id, ids: { $push: "$_id" } } }, { $project: { _id: 1, ids: 1 } }]);

  it("count a missing value as null for one expression, a one-field document included", () => {
    expect(groups("$a")).toEqual([
      { _id: null, ids: [int(1), int(2), int(3)] },
      { _id: int(5), ids: [int(4), int(5)] },
    ]);
    expect(groups({ a: "$a" })).toEqual([
      { _id: { a: null }, ids: [int(1), int(2), int(3)] },
      { _id: { a: int(5) }, ids: [int(4), int(5)] },
    ]);
  });

  it("keep a missing field of a document of several apart from null, and leave it out of _id", () => {
    expect(groups({ a: "$a", b: "$b" })).toEqual([
      { _id: { a: null, b: int(1) }, ids: [int(1), int(3)] },
      { _id: { b: int(1) }, ids: [int(2)] },
      { _id: { a: int(5), b: int(2) }, ids: [int(4), int(5)] },
    ]);
  });

  it("build nested documents without their missing fields, and take {} as one constant key", () => {
    expect(groups({ x: { y: "$a", z: "$nothing" }, b: "$b" })).toEqual([
      { _id: { x: { y: null }, b: int(1) }, ids: [int(1), int(3)] },
      { _id: { x: {}, b: int(1) }, ids: [int(2)] },
      { _id: { x: { y: int(5) }, b: int(2) }, ids: [int(4), int(5)] },
    ]);
    expect(groups({})).toEqual([{ _id: {}, ids: [int(1), int(2), int(3), int(4), int(5)] }]);
  });
});

describe("accumulators", () => {
  it("$sum adds doubles without their rounding errors, widens ints, leaves out what is no number", () => {
    expect(accumulate([{ p: 0.1 }, { p: 0.2 }, { p: 0.3 }], { $sum: "$p" })).toEqual(double("0.6"));
    expect(accumulate([{ p: 2147483647 }, { p: 1 }], { $sum: "$p" })).toEqual(long("2147483648"));
    expect(
      accumulate([{ p: long("9223372036854775807") }, { p: long("9223372036854775807") }], { $sum: "$p" }),
    ).toEqual(double("18446744073709552000"));
    expect(accumulate([{ p: "7" }, { p: [1, 2] }, { p: null }, {}], { $sum: "$p" })).toEqual(int(0));
    expect(accumulate([{ p: decimal("1.10") }, { p: 0.1 }], { $sum: "$p" })).toEqual(
      decimal("1.200000000000000005551115123125783"),
    );
    expect(accumulate([{ p: decimal("1.10") }, { p: 2.5 }, { p: 3 }], { $sum: "$p" })).toEqual(decimal("6.60"));
    expect(accumulate([{}, {}], { $count: {} })).toEqual(int(2));
  });

  it("$avg answers a double of the numbers alone, a Decimal128 with one, null without numbers", () => {
    expect(accumulate([{ p: 1 }, { p: 2 }, { p: "x" }, {}], { $avg: "$p" })).toEqual(double("1.5"));
    expect(accumulate([{ p: 0.1 }, { p: 0.2 }, { p: 0.3 }], { $avg: "$p" })).toEqual(double("0.19999999999999998"));
    expect(accumulate([{ p: "x" }, {}], { $avg: "$p" })).toBeNull();
    expect(accumulate([{ p: decimal("1") }, { p: 2 }], { $avg: "$p" })).toEqual(decimal("1.5"));
  });

  it("$stdDevPop and $stdDevSamp take Decimal128s as doubles, and answer null without enough values", () => {
    expect(accumulate([{ p: 2.5 }, { p: decimal("1.1") }], { $stdDevPop: "$p" })).toEqual(double("0.7"));
    expect(accumulate([{ p: 2.5 }, { p: decimal("1.1") }], { $stdDevSamp: "$p" })).toEqual(
      double("0.9899494936611665"),
    );
    expect(accumulate([{ p: 4 }], { $stdDevSamp: "$p" })).toBeNull();
    expect(accumulate([{ p: "x" }], { $stdDevPop: "$p" })).toBeNull();
  });

  it("$first and $last keep a missing value as null; $max and $min pass over null", () => {
    expect(accumulate([{}, { p: 1 }], { $first: "$p" })).toBeNull();
    expect(accumulate([{ p: 1 }, {}], { $last: "$p" })).toBeNull();
    expect(accumulate([{ p: null }, { p: 3 }, {}, { p: "a" }], { $max: "$p" })).toBe("a");
    expect(accumulate([{ p: null }, { p: 3 }, {}, { p: "a" }], { $min: "$p" })).toEqual(int(3));
    expect(accumulate([{ p: null }, {}], { $min: "$p" })).toBeNull();
  });

  it("$push and $addToSet leave out missing values only; $addToSet holds values MongoDB holds equal once", () => {
    expect(accumulate([{ p: null }, {}, { p: 1 }], { $push: "$p" })).toEqual([null, int(1)]);
    expect(accumulate([{ p: 1 }, { p: long("1") }, { p: null }, {}, { p: 1.5 }], { $addToSet: "$p" })).toEqual([
      int(1),
      null,
      double("1.5"),
    ]);
    expect(accumulate([{ a: 1 }, {}, { a: 1 }], { $addToSet: { k: "$a" } })).toEqual([{ k: int(1) }, {}]);
  });

  it("$mergeObjects passes over null and missing values and refuses others", () => {
    expect(accumulate([{ o: { a: 1, b: 1 } }, { o: null }, {}, { o: { b: 2 } }], { $mergeObjects: "$o" })).toEqual({
      a: int(1),
      b: int(2),
    });
    expect(accumulate([{}], { $mergeObjects: "$o" })).toEqual({});
    expect(accumulate([{ o: "abc" }], { $mergeObjects: "$o" })).toBe(
      'ERR $mergeObjects requires object inputs, but input "abc" is of type string',
    );
    expect(accumulate([{ o: [1, 2] }], { $mergeObjects: "$o" })).toBe(
      "ERR $mergeObjects requires object inputs, but input [1, 2] is of type array",
    );
  });

  const n = [{ p: 3 }, {}, { p: null }, { p: 1 }, { p: 2 }];
  it("$firstN and $lastN keep missing values as null; $minN and $maxN pass over null, in their order", () => {
    expect(accumulate(n, { $firstN: { n: 2, input: "$p" } })).toEqual([int(3), null]);
    expect(accumulate(n, { $lastN: { n: 3, input: "$p" } })).toEqual([null, int(1), int(2)]);
    expect(accumulate(n, { $minN: { n: 2, input: "$p" } })).toEqual([int(1), int(2)]);
    expect(accumulate(n, { $maxN: { n: 5, input: "$p" } })).toEqual([int(3), int(2), int(1)]);
  });

  it("take n from the group's _id fields, refused when it is no positive integer", () => {
    const docs = [
      { g: "a", k: 1, p: 1 },
      { g: "a", k: 1, p: 2 },
      { g: "b", k: 2, p: 3 },
      { g: "b", k: 2, p: 4 },
    ];
    expect(run(docs, [{ $group: { _id: { g: "$g", k: "$k" }, v: { $firstN: { n: "$k", input: "$p" } } } }])).toEqual([
      { _id: { g: "a", k: int(1) }, v: [int(1)] },
      { _id: { g: "b", k: int(2) }, v: [int(3), int(4)] },
    ]);
    expect(accumulate(docs, { $firstN: { n: "$p", input: "$p" } })).toBe(
      "ERR Value for 'n' must be of integral type, but found MISSING",
    );
    expect(accumulate(docs, { $firstN: { n: 1.5, input: "$p" } })).toBe(
      "ERR Value for 'n' must be of integral type, but found 1.5",
    );
    expect(accumulate(docs, { $lastN: { n: 0, input: "$p" } })).toBe("ERR 'n' must be greater than 0, found 0");
  });

  const ranked = [
    { name: "a", score: 2 },
    { name: "b", score: 1 },
    { name: "c", score: 2 },
    { name: "d" },
    { name: "e", score: 3 },
  ];
  it("$top and $bottom keep the document met first among equal keys, missing keys sorting as null", () => {
    expect(accumulate(ranked, { $top: { sortBy: { score: -1 }, output: "$name" } })).toBe("e");
    expect(accumulate(ranked, { $top: { sortBy: { score: 1 }, output: "$name" } })).toBe("d");
    expect(accumulate(ranked, { $bottom: { sortBy: { score: 1 }, output: ["$name", "$score"] } })).toEqual([
      "e",
      int(3),
    ]);
    expect(accumulate(ranked, { $bottom: { sortBy: { score: -1 }, output: "$score" } })).toBeNull();
    expect(accumulate(ranked.slice(0, 3), { $bottom: { sortBy: { score: 1 }, output: "$name" } })).toBe("a");
  });

  it("$topN and $bottomN answer in the order of sortBy", () => {
    expect(accumulate(ranked, { $topN: { n: 3, sortBy: { score: -1 }, output: "$name" } })).toEqual(["e", "a", "c"]);
    expect(accumulate(ranked, { $bottomN: { n: 2, sortBy: { score: 1 }, output: "$name" } })).toEqual(["a", "e"]);
    expect(accumulate(ranked, { $bottomN: { n: 3, sortBy: { score: 1 }, output: "$name" } })).toEqual(["a", "c", "e"]);
  });

  // (An integral double is written as an int: the number model of docs/decisions/0040-bson-numbers.md.)
  it("$median and $percentile answer the numbers at MongoDB's ranks, as doubles", () => {
    const values = [{ p: 2 }, { p: 1 }, { p: "x" }, {}, { p: decimal("3.5") }, { p: 10 }];
    expect(accumulate(values, { $median: { input: "$p", method: "approximate" } })).toEqual(int(2));
    expect(accumulate(values, { $percentile: { input: "$p", p: [0, 0.5, 0.7, 1], method: "approximate" } })).toEqual([
      int(1),
      int(2),
      double("3.5"),
      int(10),
    ]);
    expect(accumulate([{ p: "x" }], { $percentile: { input: "$p", p: [0.1, 0.2], method: "approximate" } })).toEqual([
      null,
      null,
    ]);
  });

  it("answer null for a value that is missing, and documents built without missing fields", () => {
    const docs = [{ g: 1, a: 1 }, { g: 2 }];
    expect(
      run(docs, [
        { $group: { _id: "$g", f: { $first: { k: "$a", j: "$g" } }, t: { $top: { sortBy: {}, output: "$a" } } } },
      ]),
    ).toEqual([
      { _id: int(1), f: { k: int(1), j: int(1) }, t: int(1) },
      { _id: int(2), f: { j: int(2) }, t: null },
    ]);
  });
});

describe("the expression forms", () => {
  const doc = { arr: [1, 2, "x", 2.5], n: null, one: [4], docs: [{ a: 1 }, null, { b: 2 }] };

  it("take one array's elements, or each of several arguments whole", () => {
    expect(evaluate({ $sum: "$arr" }, doc)).toEqual(double("5.5"));
    expect(evaluate({ $sum: ["$arr"] }, doc)).toEqual(double("5.5"));
    expect(evaluate({ $sum: ["$arr", 1] }, doc)).toEqual(int(1));
    expect(evaluate({ $max: "$arr" }, doc)).toBe("x");
    expect(evaluate({ $max: ["$arr", 5] }, doc)).toEqual([int(1), int(2), "x", double("2.5")]);
    expect(evaluate({ $avg: "$arr" }, doc)).toEqual(double("1.8333333333333333"));
    expect(evaluate({ $mergeObjects: "$docs" }, doc)).toEqual({ a: int(1), b: int(2) });
  });

  it("answer 0, null or {} of nothing rather than refusing", () => {
    expect(evaluate({ $sum: "$missing" }, doc)).toEqual(int(0));
    expect(evaluate({ $sum: [] }, doc)).toEqual(int(0));
    expect(evaluate({ $avg: "$missing" }, doc)).toBeNull();
    expect(evaluate({ $max: [] }, doc)).toBeNull();
    expect(evaluate({ $min: "$n" }, doc)).toBeNull();
    expect(evaluate({ $stdDevSamp: "$one" }, doc)).toBeNull();
    expect(evaluate({ $stdDevPop: "$one" }, doc)).toEqual(int(0));
    expect(evaluate({ $mergeObjects: "$missing" }, doc)).toEqual({});
  });

  it("$firstN … $maxN take an array, n of the document; $median of one value or an array", () => {
    expect(evaluate({ $maxN: { n: 2, input: "$arr" } }, doc)).toEqual(["x", double("2.5")]);
    expect(evaluate({ $firstN: { n: "$one.0", input: "$arr" } }, { ...doc, one: 3 })).toBe(
      "ERR Value for 'n' must be of integral type, but found MISSING",
    );
    expect(evaluate({ $lastN: { n: 1, input: "$n" } }, doc)).toBe("ERR Input must be an array");
    expect(evaluate({ $median: { input: "$arr", method: "approximate" } }, doc)).toEqual(int(2));
    expect(evaluate({ $median: { input: 7.5, method: "approximate" } }, doc)).toEqual(double("7.5"));
    expect(evaluate({ $percentile: { input: "$n", p: [0.5], method: "approximate" } }, doc)).toEqual([null]);
  });
});

describe("documents built by expressions", () => {
  it("leave out fields whose expression has no value, wherever the document is built", () => {
    expect(run([{ _id: 1, a: 1 }], [{ $replaceRoot: { newRoot: { k: "$missing", a: "$a" } } }])).toEqual([
      { a: int(1) },
    ]);
    expect(
      run([{ _id: 1, a: 1 }], [{ $project: { _id: 0, v: { $cond: [true, { k: "$missing", l: ["$missing"] }, 0] } } }]),
    ).toEqual([{ v: { l: [null] } }]);
  });
});
