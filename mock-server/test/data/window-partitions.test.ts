/**
 * `$setWindowFields` partitions, `$shift` and empty windows (window-stage.ts), with the answers of
 * MongoDB's setWindowFields tests (shift.js, integral.js, covariance.js) and its desugaring (a sort
 * by the partition key, then `sortBy`).
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON } from "../../src/data/documents.ts";
import { freezeTree } from "../../src/data/ejson-text.ts";
import { aggregate } from "../../src/data/query-engine.ts";
import { plainNumbers } from "../helpers/plain-numbers.ts";

const stored = (values: unknown[]) =>
  values.map((value) => {
    const doc = fromEJSON(value) as Document;
    freezeTree(doc);
    return doc;
  });
/** The pipeline's documents, numbers unwrapped. */
const run = (docs: unknown[], stage: Document): Document[] =>
  plainNumbers(aggregate(stored(docs), [{ $setWindowFields: stage }]));

describe("$setWindowFields", () => {
  it("answers partitions in the order of their keys, numerically equal keys as one", () => {
    const byLetter = run(
      [
        { _id: 1, p: "b", x: 1 },
        { _id: 2, p: "a", x: 2 },
        { _id: 3, p: "c", x: 0 },
      ],
      { partitionBy: "$p", sortBy: { x: 1 }, output: { w: { $documentNumber: {} } } },
    );
    expect(byLetter.map((doc) => doc._id)).toEqual([2, 1, 3]);
    const unsorted = run(
      [
        { _id: 1, p: 2 },
        { _id: 2, p: 1 },
        { _id: 3, p: 2 },
      ],
      { partitionBy: "$p", output: { w: { $sum: 1 } } },
    );
    expect(unsorted.map((doc) => [doc._id, doc.w])).toEqual([
      [2, 1],
      [1, 2],
      [3, 2],
    ]);
    const numbers = run(
      [
        { _id: 1, p: 1 },
        { _id: 2, p: { $numberLong: "1" } },
        { _id: 3, p: { $numberDecimal: "1.0" } },
        { _id: 4, p: 1.5 },
      ],
      { partitionBy: "$p", output: { w: { $sum: 1 }, ids: { $push: "$_id" }, all: { $push: "$$ROOT" } } },
    );
    expect(numbers.map((doc) => [doc._id, doc.w])).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
      [4, 1],
    ]);
    // (The stage's own fields never show, not even in a pushed $$ROOT.)
    expect(Object.keys((numbers[0]!.all as Document[])[0]!)).toEqual(["_id", "p"]);
    expect(() => run([{ _id: 1, p: [1] }], { partitionBy: "$p", output: { w: { $sum: 1 } } })).toThrow(
      "An expression used to partition cannot evaluate to value of type array",
    );
  });

  it("shifts to the default where the shifted document's output is missing, null without one", () => {
    expect(
      run([{ _id: 1 }, { _id: 2 }], {
        sortBy: { _id: 1 },
        output: {
          a: { $shift: { output: "$b", by: 1, default: "c" } },
          n: { $shift: { output: "$b", by: 1 } },
          v: { $shift: { output: "$_id", by: -1, default: 0 } },
        },
      }),
    ).toEqual([
      { _id: 1, a: "c", n: null, v: 0 },
      { _id: 2, a: "c", n: null, v: 1 },
    ]);
  });

  it("answers null, not 0, for $integral and $covariance… over too few documents", () => {
    const [first] = run(
      [
        { _id: 1, x: 1, y: 2 },
        { _id: 2, x: 2, y: 3 },
      ],
      {
        sortBy: { _id: 1 },
        output: {
          pop: { $covariancePop: ["$x", "$y"], window: { documents: [9, 10] } },
          samp: { $covarianceSamp: ["$x", "$y"], window: { documents: ["current", "current"] } },
          area: { $integral: { input: "$y" }, window: { range: [-0.5, -0.5] } },
          whole: { $covariancePop: ["$x", "$y"] },
        },
      },
    );
    expect(first).toMatchObject({ pop: null, samp: null, area: null });
    expect(first!.whole).toEqual({ $numberDouble: "0.25" });
  });
});
