/**
 * The queries inside an update (`$pull`'s conditions, the array filters) run on the whole query
 * engine: every expression operator of a `$expr` is known and the engine's refusals hold
 * (updater.ts).
 */
import { describe, expect, it } from "vitest";
import { applyUpdate } from "../../src/data/updater.ts";

describe("applyUpdate", () => {
  it("evaluates `$expr` in `$pull`'s conditions with the whole engine: every expression operator is known", () => {
    const doc = { _id: 1, items: [{ a: 1, b: 2 }] };
    // (Without the engine's expression operators: "accumulator '$add' is not registered".)
    expect(() => applyUpdate(doc, { $pull: { items: { $expr: { $gt: [{ $add: ["$a", "$b"] }, 8] } } } })).not.toThrow();
  });

  it("applies plain operators, array filters and `$pull` conditions with the engine's query operators", () => {
    const doc = { _id: 1, n: 1, tags: ["red", "Blue", "green"], grades: [{ g: 1 }, { g: 9 }] };
    applyUpdate(
      doc,
      { $inc: { n: 2 }, $set: { "grades.$[high].top": true }, $pull: { tags: { $regex: "^b", $options: "i" } } },
      { arrayFilters: [{ "high.g": { $gt: 5 } }] },
    );
    expect(doc).toEqual({ _id: 1, n: 3, tags: ["red", "green"], grades: [{ g: 1 }, { g: 9, top: true }] });
  });

  it("keeps the engine's refusals in `$pull` conditions: a pattern MongoDB refuses", () => {
    expect(() => applyUpdate({ _id: 1, tags: ["a"] }, { $pull: { tags: { $regex: "(" } } })).toThrow(
      /regular expression|Regular expression|missing \)/,
    );
  });
});
