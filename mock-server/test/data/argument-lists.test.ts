/**
 * Operators of one argument take it as a list of one, as MongoDB parses every fixed-arity
 * expression (operator-fixes.ts `withArgumentLists`; log_pow_exp.js `{$log10: [10]}`, the
 * manual's `$reverseArray: [[1, 2, 3]]`), and refuse lists of any other length.
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON } from "../../src/data/documents.ts";
import { aggregate } from "../../src/data/query-engine.ts";

const doc = fromEJSON({ _id: 1, arr: [1, 2, 3], o: { a: 1 }, s: "héllo" }) as Document;
const value = (expression: unknown) => aggregate([doc], [{ $project: { _id: 0, r: expression } }])[0]?.r;

describe("one argument as a list", () => {
  it("is the argument itself", () => {
    expect(value({ $sqrt: [4] })).toBe(2);
    expect(value({ $log10: [10] })).toBe(1);
    expect(value({ $exp: [0] })).toBe(1);
    expect(value({ $strLenCP: ["$s"] })).toBe(5);
    expect(value({ $strLenBytes: ["$s"] })).toBe(6);
    expect(value({ $reverseArray: [[1, 2, 3]] })).toEqual([3, 2, 1]);
    expect(value({ $reverseArray: ["$arr"] })).toEqual([3, 2, 1]);
    expect(value({ $objectToArray: ["$o"] })).toEqual([{ k: "a", v: 1 }]);
    expect(value({ $bsonSize: ["$o"] })).toBe(12);
    expect(value({ $size: [[1, 2]] })).toBe(2);
    expect(value({ $sin: [0] })).toBe(0);
  });

  it("of any other length is refused as MongoDB refuses it", () => {
    expect(() => value({ $reverseArray: [1, 2, 3] })).toThrow(
      "Expression $reverseArray takes exactly 1 arguments. 3 were passed in.",
    );
    expect(() => value({ $size: [1, 2] })).toThrow("Expression $size takes exactly 1 arguments. 2 were passed in.");
    expect(() => value({ $isArray: [1, 2] })).toThrow(
      "Expression $isArray takes exactly 1 arguments. 2 were passed in.",
    );
    expect(() => value({ $sqrt: [] })).toThrow("Expression $sqrt takes exactly 1 arguments. 0 were passed in.");
  });
});
