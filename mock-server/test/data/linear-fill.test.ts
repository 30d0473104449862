/**
 * `$linearFill` and `$fill`'s linear method (window-stage.ts): gaps between two numbers filled on
 * the sort field's value, gaps before the first or after the last number left null, each partition
 * on its own (MongoDB's fill.js and linear_fill.js).
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON } from "../../src/data/documents.ts";
import { freezeTree } from "../../src/data/ejson-text.ts";
import { aggregate } from "../../src/data/query-engine.ts";
import { plainNumbers } from "../helpers/plain-numbers.ts";
import { stageRefusal } from "../helpers/stage-refusal.ts";

const stored = (values: unknown[]) =>
  values.map((value) => {
    const doc = fromEJSON(value) as Document;
    freezeTree(doc);
    return doc;
  });
/** The pipeline's documents as Extended JSON, numbers as plain numbers. */
const run = (docs: unknown[], pipeline: Document[]) =>
  plainNumbers(aggregate(stored(docs), pipeline), ["$numberInt", "$numberDouble"]) as Document[];

describe("$linearFill", () => {
  it("fills the gaps between numbers on the sort's values, leaving a partition's leading and trailing ones null", () => {
    const docs = [
      { _id: 1, v: null },
      { _id: 2, v: null },
      { _id: 3, v: 3 },
      { _id: 4 },
      { _id: 5, v: 5 },
      { _id: 8, v: 20 },
      { _id: 9, v: null },
    ];
    expect(run(docs, [{ $fill: { sortBy: { _id: 1 }, output: { v: { method: "linear" } } } }])).toEqual([
      { _id: 1, v: null },
      { _id: 2, v: null },
      { _id: 3, v: 3 },
      { _id: 4, v: 4 },
      { _id: 5, v: 5 },
      { _id: 8, v: 20 },
      { _id: 9, v: null },
    ]);
    // Interpolated on the sort field's value, not the documents' places: 5 → 20 over 5..8.
    const window = run(docs, [
      { $setWindowFields: { sortBy: { _id: 1 }, output: { w: { $linearFill: "$v" } } } },
      { $project: { w: 1 } },
    ]);
    expect(window.map((doc) => (doc as Document).w)).toEqual([null, null, 3, 4, 5, 20, null]);
  });

  it("fills each partition on its own, by dates too", () => {
    const day = (n: number) => ({ $date: `2024-01-0${n}T00:00:00Z` });
    const docs = [
      { _id: 1, part: "a", at: day(1), v: 0 },
      { _id: 2, part: "b", at: day(1), v: null },
      { _id: 3, part: "a", at: day(2), v: null },
      { _id: 4, part: "b", at: day(2), v: 7 },
      { _id: 5, part: "a", at: day(5), v: 8 },
    ];
    const filled = run(docs, [
      { $setWindowFields: { partitionBy: "$part", sortBy: { at: 1 }, output: { v: { $linearFill: "$v" } } } },
      { $project: { v: 1 } },
      { $sort: { _id: 1 } },
    ]);
    expect(filled.map((doc) => (doc as Document).v)).toEqual([0, null, 2, 7, 8]);
  });
});

describe("$fill", () => {
  const docs = [
    { _id: 1, a: { b: 1 }, k: "x" },
    { _id: 2, a: { b: null }, k: "x" },
    { _id: 3, a: { b: 3 }, k: "y" },
    { _id: 4, k: "y" },
  ];
  it("fills dotted fields, by a method and by a value, through the emulator's own stages", () => {
    // fill_parse.js: a value is $addFields of {$ifNull: ["$field", value]}; a method a window.
    expect(run(docs, [{ $fill: { output: { "a.b": { value: 0 } } } }]).map((doc) => doc.a)).toEqual([
      { b: 1 },
      { b: 0 },
      { b: 3 },
      { b: 0 },
    ]);
    expect(
      run(docs, [{ $fill: { sortBy: { _id: 1 }, output: { "a.b": { method: "locf" } } } }]).map((doc) => doc.a),
    ).toEqual([{ b: 1 }, { b: 1 }, { b: 3 }, { b: 3 }]);
    expect(
      run(docs, [
        { $fill: { sortBy: { _id: 1 }, partitionByFields: ["k"], output: { "a.b": { method: "locf" } } } },
      ]).map((doc) => [doc._id, doc.a]),
    ).toEqual([
      [1, { b: 1 }],
      [2, { b: 1 }],
      [3, { b: 3 }],
      [4, { b: 3 }],
    ]);
    expect(
      run(docs, [{ $setWindowFields: { sortBy: { _id: 1 }, output: { "a.c": { $sum: 1 } } } }]).map((doc) => doc.a),
    ).toEqual([{ b: 1, c: 4 }, { b: null, c: 4 }, { b: 3, c: 4 }, { c: 4 }]);
  });

  it("refuses specifications MongoDB refuses", () => {
    const refusal = (spec: unknown) => stageRefusal("$fill", spec);
    expect(refusal({ output: { v: { method: "locf" } } })).toBe("accepted");
    expect(refusal({})).toBe("BSON field '$fill.output' is missing but a required field");
    expect(refusal({ output: {} })).toBe("$fill 'output' must name at least one field to fill");
    expect(refusal({ output: { v: { method: "random" } } })).toBe("Method must be either locf or linear");
    expect(refusal({ output: { v: { method: "locf", value: 1 } } })).toBe(
      "Each fill output specification must have exactly one of 'method' or 'value' fields",
    );
    expect(refusal({ output: { v: { method: "locf" } }, partitionBy: "$k", partitionByFields: ["k"] })).toBe(
      "Maximum one of 'partitionBy' and 'partitionByFields can be specified in '$fill'",
    );
    expect(refusal({ output: { v: { method: "linear" } } })).toBe(
      "'sortBy' is required for a $fill with the 'linear' method",
    );
  });
});
