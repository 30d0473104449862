/**
 * What a query's dotted path reaches, as MongoDB's matcher walks it (path-walk.ts): a missing
 * field met in an array's documents compares as null, elements that are no documents and nested
 * arrays are passed over, an index names one element; and the operators built on it (`$eq` …,
 * `$in`, `$exists`, `$elemMatch`, `$mod`, regular expressions). The null cases are those of
 * MongoDB's own null-query-semantics suite as MongoDB 5.0–8.0 answers them.
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON } from "../../src/data/documents.ts";
import { freezeTree } from "../../src/data/ejson-text.ts";
import { find } from "../../src/data/query-engine.ts";

const docs = [
  { _id: "a_empty_subobject", a: {} },
  { _id: "a_null", a: null },
  { _id: "a_number", a: 4 },
  { _id: "a_subobject_b_not_null", a: { b: "hi" } },
  { _id: "a_subobject_b_null", a: { b: null } },
  { _id: "no_a" },
  { _id: "a_double_array", a: [[]] },
  { _id: "a_empty_array", a: [] },
  { _id: "a_object_array_all_b_nulls", a: [{ b: null }, { b: null }, {}] },
  { _id: "a_object_array_no_b_nulls", a: [{ b: 1 }, { b: 3 }, { b: "string" }] },
  { _id: "a_object_array_some_b_nulls", a: [{ b: null }, { b: 3 }, { b: null }] },
  { _id: "a_object_array_some_b_missing", a: [{ b: 3 }, {}] },
  { _id: "a_value_array_all_nulls", a: [null, null] },
  { _id: "a_value_array_no_nulls", a: [1, "string", 4] },
  { _id: "a_value_array_with_null", a: [1, "string", null, 4] },
].map((doc) => {
  const stored = fromEJSON(doc) as Document;
  freezeTree(stored);
  return stored;
});

const ids = (query: Document, from = docs) => find(from, query).map((doc) => doc._id);
const all = docs.map((doc) => doc._id);
const except = (excluded: string[]) => all.filter((id) => !excluded.includes(id as string));

describe("null and missing fields through paths", () => {
  const dottedNull = [
    "a_empty_subobject",
    "a_null",
    "a_number",
    "a_subobject_b_null",
    "no_a",
    "a_object_array_all_b_nulls",
    "a_object_array_some_b_nulls",
    "a_object_array_some_b_missing",
  ];

  it("{'a.b': null} matches a document element without b, not arrays of values or empty arrays", () => {
    expect(ids({ "a.b": null })).toEqual(dottedNull);
    expect(ids({ "a.b": { $eq: null } })).toEqual(dottedNull);
    expect(ids({ "a.b": { $in: [null, 75] } })).toEqual(dottedNull);
    expect(ids({ $or: [{ "a.b": null }, { "a.b": 75 }] })).toEqual(dottedNull);
  });

  it("{'a.b': {$ne: null}} and $nin are their complements", () => {
    expect(ids({ "a.b": { $ne: null } })).toEqual(except(dottedNull));
    expect(ids({ "a.b": { $nin: [null, 75] } })).toEqual(except(dottedNull));
  });

  it("{a: null} matches null, missing, and arrays holding null", () => {
    expect(ids({ a: null })).toEqual(["a_null", "no_a", "a_value_array_all_nulls", "a_value_array_with_null"]);
  });

  it("$elemMatch of fields tests documents and arrays among the elements, of operators each value", () => {
    expect(ids({ a: { $elemMatch: { b: { $eq: null } } } })).toEqual([
      "a_double_array",
      "a_object_array_all_b_nulls",
      "a_object_array_some_b_nulls",
      "a_object_array_some_b_missing",
    ]);
    expect(ids({ a: { $elemMatch: { b: { $ne: null } } } })).toEqual([
      "a_object_array_no_b_nulls",
      "a_object_array_some_b_nulls",
      "a_object_array_some_b_missing",
    ]);
    expect(ids({ a: { $elemMatch: { $eq: null } } })).toEqual(["a_value_array_all_nulls", "a_value_array_with_null"]);
    expect(ids({ "a.b": { $elemMatch: { $eq: null } } })).toEqual([]);
  });

  it("$exists follows the same walk", () => {
    expect(ids({ "a.b": { $exists: false } })).toEqual([
      "a_empty_subobject",
      "a_null",
      "a_number",
      "no_a",
      "a_double_array",
      "a_empty_array",
      "a_value_array_all_nulls",
      "a_value_array_no_nulls",
      "a_value_array_with_null",
    ]);
  });
});

describe("nested arrays and indexes", () => {
  const nested = [
    { _id: 1, a: [[1, 2], 3] },
    { _id: 2, a: [[{ b: 7 }], { b: 1 }] },
    { _id: 3, a: [{ b: [1, 2] }] },
    { _id: 4, a: [{ b: 5 }, { c: 1 }] },
  ].map((doc) => {
    const stored = fromEJSON(doc) as Document;
    freezeTree(stored);
    return stored;
  });

  it("a field's path passes over arrays nested in arrays", () => {
    expect(ids({ "a.b": 7 }, nested)).toEqual([]);
    expect(ids({ "a.b": { $gt: 0 } }, nested)).toEqual([2, 3, 4]);
    expect(ids({ "a.b": { $exists: true } }, nested)).toEqual([2, 3, 4]);
  });

  it("an index names one element, walked into when it is a document or an array", () => {
    expect(ids({ "a.0.b": 7 }, nested)).toEqual([2]);
    expect(ids({ "a.1.b": 1 }, nested)).toEqual([2]);
    expect(ids({ "a.0": 1 }, nested)).toEqual([]);
    expect(ids({ "a.0": [1, 2] }, nested)).toEqual([1]);
  });

  it("$size counts an array the path reaches, never an element's; $all's $elemMatch tests documents", () => {
    expect(ids({ a: { $size: 2 } }, nested)).toEqual([1, 2, 4]);
    expect(ids({ "a.b": { $size: 2 } }, nested)).toEqual([3]);
    expect(() => ids({ a: { $size: 1.5 } }, nested)).toThrow("$size must be a whole number");
    expect(() => ids({ a: { $size: -1 } }, nested)).toThrow("$size may not be negative");
    expect(ids({ a: { $all: [{ $elemMatch: { b: 5 } }] } }, nested)).toEqual([4]);
  });

  it("a value at the path's end is compared whole and element by element, one level deep", () => {
    expect(ids({ a: [1, 2] }, nested)).toEqual([1]);
    expect(ids({ a: { $all: [[1, 2]] } }, nested)).toEqual([1]);
    expect(ids({ a: { $elemMatch: { $gt: 1, $lt: 3 } } }, nested)).toEqual([]);
    expect(ids({ "a.b": { $elemMatch: { $gt: 1, $lt: 3 } } }, nested)).toEqual([3]);
  });
});

describe("$mod", () => {
  const numbers = [
    { _id: 1, n: null },
    { _id: 2, n: 8.5 },
    { _id: 3, n: { $numberLong: "9007199254740993" } },
    { _id: 4, n: { $numberDecimal: "12.9" } },
    { _id: 5, n: "8" },
    { _id: 6, n: -9 },
  ].map((doc) => {
    const stored = fromEJSON(doc) as Document;
    freezeTree(stored);
    return stored;
  });

  it("matches numbers of every type by their integer part, nothing else", () => {
    expect(ids({ n: { $mod: [4, 0] } }, numbers)).toEqual([2, 4]);
    expect(ids({ n: { $mod: [2, 1] } }, numbers)).toEqual([3]);
    expect(ids({ n: { $mod: [4, -1] } }, numbers)).toEqual([6]);
  });

  it("refuses a malformed operand as MongoDB does", () => {
    expect(() => ids({ n: { $mod: [0, 1] } }, numbers)).toThrow("divisor cannot be 0");
    expect(() => ids({ n: { $mod: [4] } }, numbers)).toThrow("malformed mod, not enough elements");
    expect(() => ids({ n: { $mod: ["4", 0] } }, numbers)).toThrow("malformed mod, divisor not a number");
  });
});
