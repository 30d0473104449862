/**
 * `$graphLookup` as MongoDB searches (graph-lookup.ts): breadth first, each document once by its
 * `_id`, values matched as a query's equality matches them, a null never matching a missing field;
 * with the answers of MongoDB's graphLookup tests (basic.js, missing_fields.js, error.js).
 */
import { Long } from "bson";
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON, toEJSON } from "../../src/data/documents.ts";
import { freezeTree } from "../../src/data/ejson-text.ts";
import { aggregate } from "../../src/data/query-engine.ts";
import { stageRefusal } from "../helpers/stage-refusal.ts";

const stored = (values: unknown[]) =>
  values.map((value) => {
    const doc = fromEJSON(value) as Document;
    freezeTree(doc);
    return doc;
  });

/** Each input document's `_id` and the `_id`s it found, sorted (MongoDB's order is unspecified). */
function found(input: unknown[], from: unknown[], spec: Document): [unknown, unknown[]][] {
  const out = aggregate(stored(input), [{ $graphLookup: { from: "from", as: "found", ...spec } }], {
    collectionResolver: () => stored(from),
  });
  return out.map((doc) => [
    doc._id,
    (doc.found as Document[]).map((hit) => hit._id).sort((a, b) => String(a).localeCompare(String(b))),
  ]);
}

describe("$graphLookup", () => {
  it("finds every node of a graph once, a search of 100 linked both ways at once", () => {
    // basic.js: each of 100 documents names its neighbours, including -1 and 100, which are none.
    const nodes = Array.from({ length: 100 }, (_, i) => ({ _id: i, neighbors: [i - 1, i + 1] }));
    const [[, ids]] = found([{ _id: "start", starting: 50 }], nodes, {
      startWith: "$starting",
      connectFromField: "neighbors",
      connectToField: "_id",
    }) as [[unknown, unknown[]]];
    expect(ids).toHaveLength(100);
    const limited = aggregate(
      stored([{ _id: "start", starting: 50 }]),
      [
        {
          $graphLookup: {
            from: "nodes",
            startWith: "$starting",
            connectFromField: "neighbors",
            connectToField: "_id",
            as: "found",
            maxDepth: 2,
            depthField: "depth",
          },
        },
      ],
      { collectionResolver: () => stored(nodes) },
    );
    const depths = (limited[0]!.found as Document[]).map((doc) => [doc._id, toEJSON(doc.depth)]);
    expect(depths).toEqual([
      [50, { $numberLong: "0" }],
      [49, { $numberLong: "1" }],
      [51, { $numberLong: "1" }],
      [48, { $numberLong: "2" }],
      [52, { $numberLong: "2" }],
    ]);
  });

  it("goes on past a value that matches nothing (a dangling reference)", () => {
    const tree = [
      { _id: "x", kids: [] },
      { _id: "y", kids: ["z"] },
      { _id: "z", kids: [] },
    ];
    expect(
      found([{ _id: "root", kids: ["x", "gone", "y"] }], tree, {
        startWith: "$kids",
        connectFromField: "kids",
        connectToField: "_id",
      }),
    ).toEqual([["root", ["x", "y", "z"]]]);
  });

  it("matches a null with a null only, never a missing field, and recurses on no missing value", () => {
    // missing_fields.js.
    const docs = [
      { _id: 0, x: 1, y: 1 },
      { _id: 1, x: 1, y: null },
      { _id: 2, x: 1, y: 1 },
      { _id: 3, x: 1 },
    ];
    const spec = { startWith: "$y", connectFromField: "x", connectToField: "y", maxDepth: 0 };
    expect(found(docs, docs, spec)).toEqual([
      [0, [0, 2]],
      [1, [1]],
      [2, [0, 2]],
      [3, []],
    ]);
    expect(found(docs, docs, { ...spec, startWith: null })).toEqual(docs.map((doc) => [doc._id, [1]]));
    // A missing connectFromField adds nothing to the search (it is no null).
    const chain = [{ _id: 1, n: 2 }, { _id: 2 }, { _id: null, n: 3 }, { _id: 3 }];
    expect(found([{ _id: "s" }], chain, { startWith: 1, connectFromField: "n", connectToField: "_id" })).toEqual([
      ["s", [1, 2]],
    ]);
  });

  it("matches numbers of every type as one value, and writes depthField as MongoDB sets it", () => {
    const mixed = [
      { _id: { $numberLong: "1" }, to: { $numberDecimal: "2" } },
      { _id: 2.0, to: 3 },
      { _id: { $numberDecimal: "3.0" } },
    ];
    expect(
      found([{ _id: "s" }], mixed, {
        startWith: 1,
        connectFromField: "to",
        connectToField: "_id",
        maxDepth: Long.fromNumber(2),
      })[0]![1],
    ).toHaveLength(3);
    const [out] = aggregate(
      stored([{ _id: "s" }]),
      [
        {
          $graphLookup: {
            from: "f",
            startWith: 1,
            connectFromField: "to",
            connectToField: "_id",
            as: "found",
            depthField: "d",
          },
        },
        { $project: { _id: 0, found: 1 } },
      ],
      {
        collectionResolver: () =>
          stored([
            { _id: 1, d: "old", to: 2 },
            { _id: 2, to: 3 },
          ]),
      },
    );
    // In place over a field of that name, appended otherwise; a long.
    expect(JSON.stringify(toEJSON(out!.found))).toBe(
      '[{"_id":{"$numberInt":"1"},"d":{"$numberLong":"0"},"to":{"$numberInt":"2"}},' +
        '{"_id":{"$numberInt":"2"},"to":{"$numberInt":"3"},"d":{"$numberLong":"1"}}]',
    );
  });

  it("refuses the specifications MongoDB refuses, with its texts", () => {
    const base = { from: "f", startWith: "$a", connectFromField: "a", connectToField: "b", as: "g" };
    const refusal = (spec: unknown) => stageRefusal("$graphLookup", spec);
    expect(refusal(base)).toBe("accepted");
    expect(refusal(5)).toBe("the $graphLookup stage specification must be an object, but found int");
    expect(refusal({ ...base, zz: 1 })).toBe("Unknown argument to $graphLookup: zz");
    expect(refusal({ ...base, maxDepth: -1 })).toBe("maxDepth requires a nonnegative argument, found: -1");
    expect(refusal({ ...base, maxDepth: 1.5 })).toBe("maxDepth could not be represented as a long long: 1");
    expect(refusal({ ...base, maxDepth: "1" })).toBe("maxDepth must be numeric, found type: string");
    expect(refusal({ ...base, as: 1 })).toBe("expected string as argument for as, found: int");
    expect(refusal({ ...base, restrictSearchWithMatch: 1 })).toBe(
      "restrictSearchWithMatch must be an object, found int",
    );
    const { as: _, ...withoutAs } = base;
    expect(refusal(withoutAs)).toBe(
      "$graphLookup requires 'from', 'as', 'startWith', 'connectFromField', and 'connectToField' to be specified.",
    );
  });
});
