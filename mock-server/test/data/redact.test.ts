/** `$redact` (redact-stage.ts) with the answers of MongoDB's redact.js. */
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
/** The stage's documents, numbers unwrapped. */
const redact = (docs: Document[], expr: unknown) => plainNumbers(aggregate(docs, [{ $redact: expr }]));
const upTo = (level: number, action = "$$DESCEND") => ({ $cond: [{ $lte: ["$level", level] }, action, "$$PRUNE"] });

const docs = stored([
  {
    _id: 1,
    level: 1,
    b: {
      level: 3,
      c: 5,
      d: [
        { level: 1, e: 4 },
        { f: 6 },
        { level: 5, g: 9 },
        "NOT AN OBJECT!!11!",
        [2, 3, 4, { level: 1, r: 11 }, { level: 5, s: 99 }],
      ],
    },
    h: { level: 2, i: { level: 4, j: { level: 1, k: 8 } } },
    l: { m: { level: 3, n: 12 } },
    o: [{ level: 5, p: 19 }],
    q: 14,
  },
  { _id: 2, level: 4 },
]);

describe("$redact", () => {
  it("descends into embedded documents and arrays, arrays in arrays too, pruning what the expression prunes", () => {
    expect(redact(docs, upTo(1))).toEqual([{ _id: 1, level: 1, l: {}, o: [], q: 14 }]);
    expect(redact(docs, upTo(2))).toEqual([{ _id: 1, level: 1, h: { level: 2 }, l: {}, o: [], q: 14 }]);
    const d3 = [{ level: 1, e: 4 }, { f: 6 }, "NOT AN OBJECT!!11!", [2, 3, 4, { level: 1, r: 11 }]];
    expect(redact(docs, upTo(3))).toEqual([
      { _id: 1, level: 1, b: { level: 3, c: 5, d: d3 }, h: { level: 2 }, l: { m: { level: 3, n: 12 } }, o: [], q: 14 },
    ]);
    expect(redact(docs, upTo(4))).toEqual([
      {
        _id: 1,
        level: 1,
        b: { level: 3, c: 5, d: d3 },
        h: { level: 2, i: { level: 4, j: { level: 1, k: 8 } } },
        l: { m: { level: 3, n: 12 } },
        o: [],
        q: 14,
      },
      { _id: 2, level: 4 },
    ]);
    expect(redact(docs, upTo(5))).toEqual(redact(docs, "$$KEEP"));
  });

  it("keeps or prunes whole documents, and refuses any other answer", () => {
    const kept = stored([{ _id: 1, level: 2, b: { level: 3, c: 2 }, d: { level: 1, e: 8 }, f: 9 }]);
    expect(redact(kept, upTo(1, "$$KEEP"))).toEqual([]);
    expect(redact(kept, upTo(2, "$$KEEP"))).toEqual([
      { _id: 1, level: 2, b: { level: 3, c: 2 }, d: { level: 1, e: 8 }, f: 9 },
    ]);
    expect(redact(docs, "$$PRUNE")).toEqual([]);
    expect(redact(docs, "$$DESCEND")).toEqual(redact(docs, "$$KEEP"));
    expect(() => redact(docs, "yes")).toThrow(
      `$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, and $$PRUNE, but returned "yes"`,
    );
  });
});
