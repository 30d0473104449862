/**
 * `$slice`, `$range`, `$first`/`$last` of an array, `$getField` and `$meta` as MongoDB evaluates
 * and refuses them (operator-fixes.ts): mingo's texts were its own, `$slice` took a count of 0,
 * and `$meta` named mingo's accumulator table.
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON, toEJSON } from "../../src/data/documents.ts";
import { aggregate } from "../../src/data/query-engine.ts";

const fields = { arr: [1, 2, 3, 4], n: null, o: { a: 1, "b.c": 2, $price: 3 }, s: "x" };

/** `expr` over one document, as Extended JSON; `"missing"` when it evaluates to nothing; or the refusal. */
function value(expr: unknown, doc: Document = fields): unknown {
  try {
    const [out] = aggregate([fromEJSON({ _id: 1, ...doc }) as Document], [{ $project: { _id: 0, v: expr } }]);
    return out && "v" in out ? toEJSON(out.v) : "missing";
  } catch (error) {
    return `ERR ${(error as Error).message}`;
  }
}
const ints = (...values: number[]) => values.map((v) => ({ $numberInt: String(v) }));

describe("$slice", () => {
  it("takes n from the front or the back, or n from a position", () => {
    expect(value({ $slice: ["$arr", 2] })).toEqual(ints(1, 2));
    expect(value({ $slice: ["$arr", -2] })).toEqual(ints(3, 4));
    expect(value({ $slice: ["$arr", -9] })).toEqual(ints(1, 2, 3, 4));
    expect(value({ $slice: ["$arr", 1, 2] })).toEqual(ints(2, 3));
    expect(value({ $slice: ["$arr", -3, 9] })).toEqual(ints(2, 3, 4));
    expect(value({ $slice: ["$n", 1] })).toBeNull();
    expect(value({ $slice: ["$arr", null] })).toBeNull();
  });

  it("refuses what MongoDB refuses, in its words", () => {
    expect(value({ $slice: ["$arr", 1, 0] })).toBe("ERR Third argument to $slice must be positive: 0");
    expect(value({ $slice: ["$s", 1] })).toBe("ERR First argument to $slice must be an array, but is of type: string");
    expect(value({ $slice: ["$arr", "1"] })).toBe(
      "ERR Second argument to $slice must be a numeric value, but is of type: string",
    );
    expect(value({ $slice: ["$arr", 1.5] })).toBe(
      "ERR Second argument to $slice can't be represented as a 32-bit integer: 1.5",
    );
    expect(value({ $slice: ["$arr", 0, 2.5] })).toBe(
      "ERR Third argument to $slice can't be represented as a 32-bit integer: 2.5",
    );
    expect(value({ $slice: ["$arr"] })).toBe(
      "ERR Expression $slice takes at least 2 arguments, and at most 3, but 1 were passed in.",
    );
  });
});

describe("$range", () => {
  it("counts by a step either way", () => {
    expect(value({ $range: [0, 10, 3] })).toEqual(ints(0, 3, 6, 9));
    expect(value({ $range: [5, 0, -2] })).toEqual(ints(5, 3, 1));
    expect(value({ $range: [0, 5, -1] })).toEqual([]);
  });

  it("refuses a zero step and values that are no 32-bit integers, in MongoDB's words", () => {
    expect(value({ $range: [0, 5, 0] })).toBe("ERR $range requires a non-zero step value");
    expect(value({ $range: ["$n", 5] })).toBe(
      "ERR $range requires a numeric starting value, found value of type: null",
    );
    expect(value({ $range: [0, 1.5] })).toBe(
      "ERR $range requires an ending value that can be represented as a 32-bit integer, found value: 1.5",
    );
    expect(value({ $range: [0, 5, "x"] })).toBe(
      "ERR $range requires a numeric step value, found value of type: string",
    );
  });
});

describe("$first and $last of an array", () => {
  it("answer an end, null for null, nothing for an empty array, and refuse what is no array", () => {
    expect(value({ $first: "$arr" })).toEqual({ $numberInt: "1" });
    expect(value({ $last: "$arr" })).toEqual({ $numberInt: "4" });
    expect(value({ $first: "$n" })).toBeNull();
    expect(value({ $last: [[]] })).toBe("missing");
    expect(value({ $first: "$s" })).toBe("ERR $first's argument must be an array, but is string");
    expect(value({ $last: 5 })).toBe("ERR $last's argument must be an array, but is int");
  });
});

describe("$getField", () => {
  it("reads the field of that very name, dots and dollars included", () => {
    expect(value({ $getField: { field: "b.c", input: "$o" } })).toEqual({ $numberInt: "2" });
    expect(value({ $getField: { field: { $literal: "$price" }, input: "$o" } })).toEqual({ $numberInt: "3" });
    expect(value({ $getField: "s" })).toBe("x");
    expect(value({ $getField: { field: "a", input: "$missing" } })).toBe("missing");
    expect(value({ $getField: { field: "a", input: "$n" } })).toBeNull();
    expect(value({ $getField: { field: "a", input: "$arr" } })).toBe("missing");
    // $const is $literal's other name (expression_get_field.js, let.js).
    expect(value({ $getField: { field: { $const: "$price" }, input: "$o" } })).toEqual({ $numberInt: "3" });
    expect(value({ $add: [{ $const: 5 }, 1] })).toEqual({ $numberInt: "6" });
    expect(value({ $let: { vars: { x: { $const: "$s" } }, in: "$$x" } })).toBe("$s");
  });

  it("refuses a field that is no constant string", () => {
    expect(value({ $getField: "$s" })).toBe(
      "ERR $getField requires 'field' to evaluate to a constant, but got a non-constant argument",
    );
    expect(value({ $getField: { field: 5, input: "$o" } })).toBe(
      "ERR $getField requires 'field' to evaluate to type String, but got int",
    );
  });
});

describe("$meta", () => {
  it("has no text score to give: no text search runs here", () => {
    expect(value({ $meta: "textScore" })).toBe("ERR query requires text score metadata, but it is not available");
    expect(value({ $meta: "bogus" })).toBe("ERR Unsupported argument to $meta: bogus");
  });
});
