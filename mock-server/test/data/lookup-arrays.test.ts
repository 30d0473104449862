/**
 * `$lookup` by `localField`/`foreignField` over arrays as MongoDB joins them (grouping.ts; every
 * case of MongoDB's lookup_array_semantics.js): the local values are the path's values through
 * arrays of documents, a last array's elements (an array element whole), null when the path
 * reaches nothing; a foreign document joins when its field matches them as `$in` would.
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

/** The ids of the local documents that join the one foreign document. */
function joining(local: unknown[], localField: string, foreign: unknown, foreignField: string): unknown[] {
  const out = aggregate(stored(local), [{ $lookup: { from: "foreign", localField, foreignField, as: "matched" } }], {
    collectionResolver: () => stored([foreign]),
  });
  return out.filter((doc) => (doc.matched as unknown[]).length > 0).map((doc) => doc._id);
}

const cases: [string, unknown[], string, unknown, string, number[]][] = [
  [
    "a scalar in local matches elements of arrays in foreign",
    [
      { _id: 0, a: 1 },
      { _id: 1, a: [1] },
      { _id: 2, a: [1, 2, 3] },
      { _id: 3, a: [1, [2, 3]] },
      { _id: 4, a: [1, [1, 2]] },
      { _id: 5, a: [1, 2, 1] },
      { _id: 10, a: [[1]] },
      { _id: 11, a: [[1, 2], 3] },
      { _id: 12, a: 3 },
      { _id: 13, a: [2, 3] },
      { _id: 14, a: { b: 1 } },
    ],
    "a",
    { _id: 0, b: 1 },
    "b",
    [0, 1, 2, 3, 4, 5],
  ],
  [
    "elements of an array in foreign match scalars in local",
    [
      { _id: 0, a: 1 },
      { _id: 1, a: 2 },
      { _id: 2, a: [1] },
      { _id: 3, a: [1, 3] },
      { _id: 4, a: [3, 2] },
      { _id: 10, a: 3 },
      { _id: 11, a: [[1]] },
      { _id: 12, a: [3, 4] },
    ],
    "a",
    { _id: 0, b: [1, 2] },
    "b",
    [0, 1, 2, 3, 4],
  ],
  [
    "an array in foreign matches as a whole value",
    [
      { _id: 0, a: [[1, 2], 4] },
      { _id: 1, a: [[1, 2]] },
      { _id: 10, a: [1, 2] },
      { _id: 11, a: [[[1, 2]]] },
      { _id: 12, a: [[1, 2, 3]] },
    ],
    "a",
    { _id: 0, b: [[1, 2], 3] },
    "b",
    [0, 1],
  ],
  [
    "a scalar in foreign matches dotted paths in local",
    [
      { _id: 0, a: [{ x: 1 }, { x: 2 }] },
      { _id: 1, a: [{ x: [1, 2] }] },
      { _id: 2, a: { x: 1 } },
      { _id: 3, a: { x: [1, 2] } },
      { _id: 10, a: [{ x: 2 }, { x: 3 }] },
      { _id: 11, a: 1 },
      { _id: 12, a: [1] },
      { _id: 13, a: [[1]] },
      { _id: 14, a: [{ y: 1 }] },
    ],
    "a.x",
    { _id: 0, b: 1 },
    "b",
    [0, 1, 2, 3],
  ],
  [
    "elements of an array in foreign match dotted paths in local",
    [
      { _id: 0, a: [{ x: 1 }, { x: 3 }] },
      { _id: 1, a: [{ x: [1, 3] }] },
      { _id: 2, a: { x: 1 } },
      { _id: 3, a: { x: [1, 2] } },
      { _id: 10, a: 1 },
      { _id: 11, a: [1] },
      { _id: 12, a: [{ x: 3 }] },
      { _id: 13, a: [{ y: 1 }] },
    ],
    "a.x",
    { _id: 0, b: [1, 2] },
    "b",
    [0, 1, 2, 3],
  ],
  [
    "an array in foreign does not match dotted paths as a whole",
    [
      { _id: 10, a: [{ x: 1 }, { x: 2 }] },
      { _id: 11, a: [{ x: [1, 2] }] },
      { _id: 12, a: { x: [1, 2] } },
      { _id: 13, a: [1, 2] },
    ],
    "a.x",
    { _id: 0, b: [[1, 2], 3] },
    "b",
    [],
  ],
  [
    "an array of documents in foreign matches on a subfield",
    [
      { _id: 0, a: 1 },
      { _id: 1, a: 2 },
      { _id: 2, a: [1] },
      { _id: 3, a: [1, 3] },
      { _id: 4, a: [3, 2] },
      { _id: 5, a: [[1, 2], 3] },
      { _id: 10, a: 4 },
      { _id: 11, a: [[1]] },
      { _id: 12, a: [3, 4] },
    ],
    "a",
    { _id: 0, b: [{ x: 1 }, { x: 2 }] },
    "b.x",
    [0, 1, 2, 3, 4],
  ],
  [
    "an empty array in foreign matches only empty nested arrays",
    [
      { _id: 0, a: [[]] },
      { _id: 1, a: [[], 1] },
      { _id: 10 },
      { _id: 11, a: null },
      { _id: 12, a: [] },
      { _id: 13, a: [null] },
      { _id: 14, a: [null, 1] },
      { _id: 15, a: 1 },
      { _id: 16, a: [[[]]] },
      { _id: 17, a: [1, 2] },
    ],
    "a",
    { _id: 0, b: [] },
    "b",
    [0, 1],
  ],
  [
    "an empty array in local matches null in foreign",
    [
      { _id: 0, a: [] },
      { _id: 10, a: [[]] },
      { _id: 11, a: [[], 1] },
      { _id: 12, a: [1] },
    ],
    "a",
    { _id: 0, b: null },
    "b",
    [0],
  ],
  [
    "an empty array in local matches missing in foreign",
    [
      { _id: 0, a: [] },
      { _id: 10, a: [[]] },
      { _id: 11, a: [[], 1] },
      { _id: 12, a: [1] },
    ],
    "a",
    { _id: 0, no_b: true },
    "b",
    [0],
  ],
  [
    "a path through arrays in local matches an empty array",
    [
      { _id: 0, a: [{ x: [[]] }] },
      { _id: 10, a: [{ y: 1 }, { y: 2 }] },
      { _id: 11, a: [[]] },
      { _id: 12, a: [{ x: [] }] },
      { _id: 13, a: [] },
    ],
    "a.x",
    { _id: 0, b: [] },
    "b",
    [0],
  ],
  [
    "a path through arrays in local matches null",
    [
      { _id: 0, a: [{ y: 1 }, { y: 2 }] },
      { _id: 1, a: [{ x: [] }] },
      { _id: 2, a: [] },
      { _id: 3, a: [[]] },
      { _id: 4, a: { x: [] } },
      { _id: 5, x: [1, 2] },
      { _id: 10, a: [{ x: 1 }, { y: 2 }] },
      { _id: 11, a: [{ x: [] }, { x: 1 }] },
      { _id: 12, a: [{ x: [[]] }] },
    ],
    "a.x",
    { _id: 0, b: null },
    "b",
    [0, 1, 2, 3, 4, 5],
  ],
  [
    "paths with numbers in local match a scalar",
    [
      { _id: 0, a: [{ x: 1 }, { x: 2 }] },
      { _id: 1, a: [{ x: [2, 3, 1] }] },
      { _id: 10, a: [{ x: 2 }, { x: 1 }] },
      { _id: 11, a: [{ x: [2, 3] }] },
      { _id: 12, a: { x: 1 } },
      { _id: 13, a: { x: [1, 2] } },
      { _id: 14, a: [{ y: 1 }, { x: 1 }] },
    ],
    "a.0.x",
    { _id: 0, b: 1 },
    "b",
    [0, 1],
  ],
  [
    "paths with numbers in local match null",
    [
      { _id: 0, a: { x: 1 } },
      { _id: 1, a: { x: [1, 2] } },
      { _id: 2, a: [{ y: 1 }, { x: 1 }] },
      { _id: 3, a: [] },
      { _id: 4, a: [[]] },
      { _id: 5, x: [1, 2] },
      { _id: 10, a: [{ x: 1 }, { x: 2 }] },
      { _id: 11, a: [{ x: [1, 2] }] },
    ],
    "a.0.x",
    { _id: 0, b: null },
    "b",
    [0, 1, 2, 3, 4, 5],
  ],
];

describe("$lookup over arrays", () => {
  it.each(cases)("%s", (_name, local, localField, foreign, foreignField, expected) => {
    expect(joining(local, localField, foreign, foreignField)).toEqual(expected);
  });

  it("joins numbers of any type by value, in the foreign collection's order", () => {
    const out = aggregate(
      stored([{ _id: 1, k: { $numberDecimal: "5.0" } }]),
      [{ $lookup: { from: "f", localField: "k", foreignField: "k", as: "m" } }],
      {
        collectionResolver: () =>
          stored([
            { _id: "b", k: 5 },
            { _id: "a", k: { $numberLong: "5" } },
            { _id: "c", k: 6 },
          ]),
      },
    );
    expect((out[0]!.m as Document[]).map((doc) => doc._id)).toEqual(["b", "a"]);
  });
});
