/**
 * `$linearFill` and `$fill`'s linear method (window-stage.ts): gaps between two numbers filled on
 * the sort field's value, gaps before the first or after the last number left null, each partition
 * on its own (MongoDB's fill.js and linear_fill.js).
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON, toEJSON } from "../../src/data/documents.ts";
import { freezeTree } from "../../src/data/ejson-text.ts";
import { aggregate } from "../../src/data/query-engine.ts";

const stored = (values: unknown[]) =>
  values.map((value) => {
    const doc = fromEJSON(value) as Document;
    freezeTree(doc);
    return doc;
  });
/** The pipeline's documents as Extended JSON, numbers as plain numbers. */
const run = (docs: unknown[], pipeline: Document[]) =>
  JSON.parse(JSON.stringify(toEJSON(aggregate(stored(docs), pipeline))), (_key, value) =>
    value?.$numberInt !== undefined
      ? Number(value.$numberInt)
      : value?.$numberDouble !== undefined
        ? Number(value.$numberDouble)
        : value,
  ) as Document[];

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
