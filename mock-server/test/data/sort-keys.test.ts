/**
 * Sorts by dotted paths and arrays as MongoDB sorts (sort-keys.ts): compound keys per array
 * element, the least under the pattern's directions, empty arrays below null, parallel arrays
 * refused. The cases are those of MongoDB's own dotted-path sort suite (its documents holding
 * `undefined` left out: Extended JSON documents cannot hold it).
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON } from "../../src/data/documents.ts";
import { freezeTree } from "../../src/data/ejson-text.ts";
import { find } from "../../src/data/query-engine.ts";

const stored = (values: Document[]) =>
  values.map((value) => {
    const doc = fromEJSON(value) as Document;
    freezeTree(doc);
    return doc;
  });
const order = (docs: Document[], sort: Document) => find(docs, {}, { sort }).map((doc) => doc._id);

describe("sorting by one field", () => {
  // biome-ignore format: the suite\'s documents, one a line
  const docs = stored([
    { _id: 1, a: 1 },
    { _id: 3, a: null },
    { _id: 4, a: {} },
    { _id: 5, a: [] },
    { _id: 6, a: [1] },
    { _id: 7, a: [[1]] },
    { _id: 8 },
  ]);

  it("ranks an empty array below null and missing, an array by its least or greatest element", () => {
    expect(order(docs, { a: 1, _id: 1 })).toEqual([5, 3, 8, 1, 6, 4, 7]);
    expect(order(docs, { a: -1, _id: 1 })).toEqual([7, 4, 1, 6, 3, 8, 5]);
  });

  it("an index names one element; an array found that way counts whole too", () => {
    expect(order(docs, { "a.0": 1, _id: 1 })).toEqual([1, 3, 4, 5, 8, 6, 7]);
    expect(order(docs, { "a.0": -1, _id: 1 })).toEqual([7, 6, 1, 3, 4, 5, 8]);
  });
});

describe("sorting by several fields", () => {
  it("takes each document's least compound key, arrays in different documents", () => {
    // biome-ignore format: the suite\'s documents, one a line
    const docs = stored([
      { _id: 1, a: 1, b: [2] },
      { _id: 2, a: 2, b: [] },
      { _id: 3, a: [], b: 4 },
      { _id: 4, a: [1], b: 4 },
      { _id: 5, a: [2, 3], b: 2 },
      { _id: 6, a: 2, b: [3, 5] },
      { _id: 7, a: 1, b: [1, 3] },
      { _id: 8, a: [1, 2], b: 3 },
      { _id: 9, a: 2, b: 3 },
    ]);
    expect(order(docs, { a: 1, b: 1, _id: 1 })).toEqual([3, 7, 1, 8, 4, 2, 5, 6, 9]);
    expect(order(docs, { a: 1, b: -1, _id: 1 })).toEqual([3, 4, 7, 8, 1, 6, 9, 5, 2]);
    expect(order(docs, { a: -1, b: 1, _id: 1 })).toEqual([5, 2, 6, 8, 9, 7, 1, 4, 3]);
    expect(order(docs, { a: -1, b: -1, _id: 1 })).toEqual([5, 6, 8, 9, 2, 4, 7, 1, 3]);
  });

  it("refuses a document whose two sort fields are arrays", () => {
    // biome-ignore format: the suite\'s documents, one a line
    const docs = stored([
      { _id: 1, a: [], b: 1 },
      { _id: 3, a: [], b: [] },
    ]);
    expect(() => order(docs, { a: 1, b: 1 })).toThrow("cannot sort with keys that are parallel arrays");
    expect(() => order(stored([{ _id: 1, a: { b: [1, 2], c: [3, 4] } }]), { "a.b": 1, "a.c": 1 })).toThrow(
      "cannot sort with keys that are parallel arrays",
    );
  });

  it("keys fields under one array by element", () => {
    // biome-ignore format: the suite\'s documents, one a line
    const docs = stored([
      { _id: 1, a: [{ b: 4, c: 1 }, { b: 1, c: 2 }] },
      { _id: 2, a: [{ b: 2, c: 1 }, { b: 4, c: 2 }] },
      { _id: 3, a: [{ b: 6, c: 1 }, { b: 9, c: 2 }] },
      { _id: 4, a: [{ b: 4, c: 1 }, { b: 5, c: 3 }] },
      { _id: 5, a: [{ b: 2, c: 1 }, { b: 7, c: 3 }] },
      { _id: 6, a: [{ b: 5, c: 1 }, { b: 3, c: 3 }] },
      { _id: 7, a: [{ b: 7, c: 2 }, { b: 2, c: 3 }] },
      { _id: 8, a: [{ b: 3, c: 2 }, { b: 8, c: 3 }] },
      { _id: 9, a: [{ b: 8, c: 2 }, { b: 6, c: 3 }] },
    ]);
    expect(order(docs, { "a.c": 1, "a.b": 1, _id: 1 })).toEqual([2, 5, 1, 4, 6, 3, 8, 7, 9]);
    expect(order(docs, { "a.c": 1, "a.b": -1, _id: 1 })).toEqual([3, 6, 1, 4, 2, 5, 9, 7, 8]);
    expect(order(docs, { "a.c": -1, "a.b": 1, _id: 1 })).toEqual([7, 6, 4, 9, 5, 8, 1, 2, 3]);
    expect(order(docs, { "a.c": -1, "a.b": -1, _id: 1 })).toEqual([8, 5, 9, 4, 6, 7, 3, 2, 1]);
    expect(order(docs, { "a.c": 1, a: 1, _id: 1 })).toEqual([2, 5, 1, 4, 6, 3, 8, 7, 9]);
    expect(order(docs, { "a.c": -1, a: -1, _id: 1 })).toEqual([8, 5, 9, 4, 6, 7, 3, 2, 1]);
  });

  it("expands arrays nested under the array, and sorts by an index through both", () => {
    // biome-ignore format: the suite\'s documents, one a line
    const docs = stored([
      { _id: 1, a: [{ b: [4, 1], c: 1 }, { b: [1, 5], c: 2 }] },
      { _id: 2, a: [{ b: 2, c: [1, 3] }, { b: 4, c: [2, 4] }] },
      { _id: 3, a: [{ b: [6, 4], c: 1 }, { b: [9, 7], c: 2 }] },
      { _id: 4, a: [{ b: 4, c: [1, 2] }, { b: 5, c: [3, 2] }] },
      { _id: 5, a: [{ b: [2, 3], c: 1 }, { b: [7, 6], c: 3 }] },
      { _id: 6, a: [{ b: 5, c: [] }, { b: 3, c: 3 }] },
      { _id: 7, a: [{ b: [], c: 2 }, { b: 2, c: 3 }] },
      { _id: 8, a: [{ b: 3, c: [2] }, { b: 8, c: [3] }] },
      { _id: 9, a: [{ b: [8], c: 2 }, { b: [6], c: 3 }] },
    ]);
    expect(order(docs, { "a.c": 1, "a.b": 1, _id: 1 })).toEqual([6, 1, 2, 5, 3, 4, 7, 8, 9]);
    expect(order(docs, { "a.c": -1, "a.b": -1, _id: 1 })).toEqual([2, 8, 5, 9, 4, 6, 7, 3, 1]);
    expect(order(docs, { "a.b": 1, a: 1, _id: 1 })).toEqual([7, 1, 2, 5, 6, 8, 4, 3, 9]);
    expect(order(docs, { "a.b": -1, a: -1, _id: 1 })).toEqual([3, 9, 8, 5, 1, 4, 6, 2, 7]);
    expect(order(docs, { "a.0.b": 1, _id: 1 })).toEqual([7, 1, 2, 5, 8, 3, 4, 6, 9]);
    expect(order(docs, { "a.0.b": -1, _id: 1 })).toEqual([9, 3, 6, 1, 4, 5, 8, 2, 7]);
  });

  it("keys paths of two lengths and three levels", () => {
    // biome-ignore format: the suite\'s documents, one a line
    const two = stored([
      { _id: 1, a: { b: 2 } },
      { _id: 2, a: { b: [] } },
      { _id: 3, a: { b: [2, 3] } },
      { _id: 4, a: { c: 1 } },
      { _id: 5, a: [] },
      { _id: 6, a: [{ b: [5] }] },
      { _id: 7, a: [{ b: [4, 5] }, { b: 7 }] },
      { _id: 8, a: [{ b: [1, 3] }, { b: [2, 5] }] },
      { _id: 9, a: [{ b: [] }, { b: [1, 3] }] },
    ]);
    expect(order(two, { "a.b": 1, _id: 1 })).toEqual([2, 9, 4, 5, 8, 1, 3, 7, 6]);
    expect(order(two, { "a.b": -1, _id: -1 })).toEqual([7, 8, 6, 9, 3, 1, 5, 4, 2]);
    // biome-ignore format: the suite\'s documents, one a line
    const three = stored([
      { _id: 1, a: { b: { c: 2 } } },
      { _id: 2, a: { b: { c: [] } } },
      { _id: 3, a: [{ b: [] }, { b: { c: [] } }] },
      { _id: 4, a: [{ b: { c: 1 } }] },
      { _id: 5, a: { b: [{ c: 3 }, { d: 1 }] } },
      { _id: 6, a: { b: [{ c: [5] }] } },
      { _id: 7, a: [] },
      { _id: 8, a: { b: [{ c: [1, 3] }, { c: [2, 5] }] } },
      { _id: 9, a: [{ b: [{ c: [] }, { c: [1, 3] }] }] },
    ]);
    expect(order(three, { "a.b.c": 1, _id: 1 })).toEqual([2, 3, 9, 5, 7, 4, 8, 1, 6]);
    expect(order(three, { "a.b.c": -1, _id: -1 })).toEqual([8, 6, 9, 5, 1, 4, 7, 3, 2]);
  });
});
