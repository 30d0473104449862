/**
 * String, array and arithmetic expressions where mingo answered otherwise than MongoDB
 * (string-operators.ts, numeric-operators.ts), and `$project`'s computed fields that evaluate to
 * nothing (projections.ts): MongoDB's results and refusal texts.
 */
import { describe, expect, it } from "vitest";
import { type Document, toEJSON } from "../../src/data/documents.ts";
import { aggregate } from "../../src/data/query-engine.ts";

const fields = { s: "héllo", arr: [1, 2, 3, 4, 5], n: null };
/** `expr` over one document, as Extended JSON; `"missing"` when it evaluates to nothing; or the refusal. */
function value(expr: unknown, doc: Document = fields): unknown {
  try {
    const [out] = aggregate([{ _id: 1, ...doc }], [{ $project: { _id: 0, v: expr } }]);
    return out && "v" in out ? toEJSON(out.v) : "missing";
  } catch (error) {
    return `ERR ${(error as Error).message}`;
  }
}

describe("strings", () => {
  it("folds ASCII letters only, and takes null as the empty string", () => {
    expect(value({ $toUpper: "$s" })).toBe("HéLLO");
    expect(value({ $toLower: "ÀBC" })).toBe("Àbc");
    expect(value({ $toUpper: "$n" })).toBe("");
    expect(value({ $toUpper: 2.5 })).toBe("2.5");
    expect(value({ $strcasecmp: ["É", "é"] })).toEqual({ $numberInt: "-1" });
    expect(value({ $strcasecmp: ["abc", "ABC"] })).toEqual({ $numberInt: "0" });
    expect(value({ $toUpper: [[1]] })).toBe("ERR can't convert from BSON type array to String");
  });

  it("counts bytes where the operator says bytes", () => {
    expect(value({ $indexOfBytes: ["$s", "l"] })).toEqual({ $numberInt: "3" });
    expect(value({ $indexOfBytes: ["$s", "l", 4] })).toEqual({ $numberInt: "4" });
    expect(value({ $indexOfBytes: ["$s", "l", 0, 3] })).toEqual({ $numberInt: "-1" });
    expect(value({ $indexOfCP: ["$s", "l"] })).toEqual({ $numberInt: "2" });
    expect(value({ $indexOfBytes: ["$s", "l", 1.5] })).toBe(
      "ERR $indexOfBytesrequires an integral starting index, found a value of type: double, with value: 1.5",
    );
    expect(value({ $substrBytes: ["$s", 0, 3] })).toBe("hé");
    expect(value({ $substrBytes: ["$s", 0, 2] })).toBe(
      "ERR $substrBytes:  Invalid range, ending index is in the middle of a UTF-8 character.",
    );
    expect(value({ $substrBytes: ["$s", 2, 1] })).toBe(
      "ERR $substrBytes:  Invalid range, starting index is a UTF-8 continuation byte.",
    );
  });

  it("cuts code points with $substrCP, refusing negative bounds as MongoDB does (substrCP.js)", () => {
    expect(value({ $substrCP: ["$s", 1, 3] })).toBe("éll");
    expect(value({ $substrCP: ["$s", 3, 100] })).toBe("lo");
    expect(value({ $substrCP: ["$n", 0, 1] })).toBe("");
    expect(value({ $substrCP: [123, 0, 2] })).toBe("12");
    expect(value({ $substrCP: ["abc", -1, 3] })).toBe("ERR $substrCP: the starting index must be nonnegative integer.");
    expect(value({ $substrCP: ["abc", 1, -3] })).toBe("ERR $substrCP: length must be a nonnegative integer.");
    expect(value({ $substrCP: ["abc", "1", 1] })).toBe(
      "ERR $substrCP: starting index must be a numeric type (is BSON type string)",
    );
    expect(value({ $substrCP: ["abc", 1.5, 1] })).toBe(
      "ERR $substrCP: starting index cannot be represented as a 32-bit integral value: 1.5",
    );
  });

  it("replaces as MongoDB does: an empty find everywhere, a wrong type before a null (replace_all.js)", () => {
    expect(value({ $replaceAll: { input: "albatross", find: "", replacement: "one " } })).toBe(
      "one aone lone bone aone tone rone oone sone sone ",
    );
    expect(value({ $replaceAll: { input: "", find: "", replacement: "foo" } })).toBe("foo");
    expect(value({ $replaceAll: { input: "a$b$", find: { $literal: "$" }, replacement: { $literal: "$$" } } })).toBe(
      "a$$b$$",
    );
    expect(value({ $replaceOne: { input: "héllo", find: "", replacement: "x" } })).toBe("xhéllo");
    expect(value({ $replaceOne: { input: "a.b.c", find: ".", replacement: { $literal: "$&" } } })).toBe("a$&b.c");
    expect(value({ $replaceAll: { input: "$n", find: "a", replacement: "b" } })).toBeNull();
    expect(value({ $replaceOne: { input: null, find: { $literal: { a: 1 } }, replacement: "x" } })).toBe(
      "ERR $replaceOne requires that 'find' be a string, found: { a: 1 }",
    );
    expect(value({ $replaceAll: { input: { $literal: { a: 1 } }, find: null, replacement: "x" } })).toBe(
      "ERR $replaceAll requires that 'input' be a string, found: { a: 1 }",
    );
  });

  it("finds no empty match past the last character ($regexFindAll, regex.js)", () => {
    const indexes = (input: string, regex: string) =>
      (value({ $regexFindAll: { input, regex } }) as { idx: unknown }[]).map((m) => m.idx);
    expect(indexes("bbbb", "()")).toHaveLength(4);
    expect(indexes("aaa aa", "(a*?)")).toHaveLength(6);
  });

  it("refuses an empty separator and what is no string", () => {
    expect(value({ $split: ["a,b,,c", ","] })).toEqual(["a", "b", "", "c"]);
    expect(value({ $split: ["abc", ""] })).toBe("ERR $split requires a non-empty separator");
    expect(value({ $split: [5, ","] })).toBe(
      "ERR $split requires an expression that evaluates to a string as a first argument, found: int",
    );
    expect(value({ $concat: ["a", "$n"] })).toBeNull();
    expect(value({ $concat: ["a", 1] })).toBe("ERR $concat only supports strings, not int");
  });
});

describe("arrays and branches", () => {
  it("$arrayElemAt past either end is missing; $size of no array is refused", () => {
    expect(value({ $arrayElemAt: ["$arr", -1] })).toEqual({ $numberInt: "5" });
    expect(value({ $arrayElemAt: ["$arr", 9] })).toBe("missing");
    expect(value({ $arrayElemAt: ["$arr", -9] })).toBe("missing");
    expect(value({ $arrayElemAt: ["$s", 0] })).toBe(
      "ERR $arrayElemAt's first argument must be an array, but is string",
    );
    expect(value({ $size: "$nothing" })).toBe("ERR The argument to $size must be an array, but was of type: missing");
  });

  it("$switch without a matching branch or default is refused; $arrayToObject keeps the last value", () => {
    // biome-ignore lint/suspicious/noThenProperty: $switch's branches name their result `then`
    expect(value({ $switch: { branches: [{ case: { $eq: [1, 2] }, then: 1 }] } })).toBe(
      "ERR $switch could not find a matching branch for an input, and no default was specified.",
    );
    // biome-ignore lint/suspicious/noThenProperty: $switch's branches name their result `then`
    expect(value({ $switch: { branches: [{ case: "", then: "empty strings are true" }], default: 0 } })).toBe(
      "empty strings are true",
    );
    expect(
      value({
        $arrayToObject: [
          [
            ["a", 1],
            ["b", 2],
            ["a", 3],
          ],
        ],
      }),
    ).toEqual({ a: { $numberInt: "3" }, b: { $numberInt: "2" } });
  });
});

describe("arithmetic", () => {
  it("refuses division by zero and arguments outside a function's domain in MongoDB's words", () => {
    expect(value({ $divide: [1, 0] })).toBe("ERR can't $divide by zero");
    expect(value({ $mod: [1, 0] })).toBe("ERR can't $mod by zero");
    expect(value({ $mod: [5.5, 0] })).toBe("ERR can't $mod by zero");
    expect(value({ $divide: ["a", null] })).toBeNull();
    expect(value({ $sqrt: -1 })).toBe("ERR $sqrt's argument must be greater than or equal to 0");
    expect(value({ $ln: 0 })).toBe("ERR $ln's argument must be a positive number, but is 0");
    expect(value({ $log: [8, 1] })).toBe("ERR $log's base must be a positive number not equal to 1, but is 1");
    expect(value({ $pow: [0, -1] })).toBe("ERR $pow cannot take a base of 0 and a negative exponent");
    expect(value({ $add: [new Date(0), new Date(0)] })).toBe("ERR only one date allowed in an $add expression");
    expect(value({ $add: [new Date(0), null, new Date(0)] })).toBeNull();
  });

  it("rounds a double through its exact value, and ints to the tens, hundreds… half to even", () => {
    const n = (v: number) => ({ $numberInt: String(v) });
    expect(value({ $round: [783.4, -2] })).toEqual(n(800));
    expect(value({ $round: [1251, -2] })).toEqual(n(1300));
    expect(value({ $round: [15, -1] })).toEqual(n(20));
    expect(value({ $round: [25, -1] })).toEqual(n(20));
    expect(value({ $trunc: [783, -2] })).toEqual(n(700));
    // 2.675 is 2.67499999999999982236431605997495353221893310546875 as a double.
    expect(value({ $round: [2.675, 2] })).toEqual({ $numberDouble: "2.67" });
    expect(value({ $round: ["$n", 2] })).toBeNull();
    expect(value({ $round: ["x"] })).toBe("ERR $round only supports numeric types, not string");
    expect(value({ $round: [1, 1.5] })).toBe("ERR precision argument to  $round must be a integral value");
    expect(value({ $trunc: [1, 101] })).toBe(
      "ERR cannot apply $trunc with precision value 101 value must be in [-20, 100]",
    );
  });
});

describe("$project", () => {
  it("leaves out a computed field that evaluates to nothing", () => {
    const doc = { _id: 1, a: 1 };
    const project = (spec: Document) => toEJSON(aggregate([doc], [{ $project: spec }]));
    expect(project({ v: "$nothing" })).toEqual([{ _id: { $numberInt: "1" } }]);
    expect(project({ _id: 0, n: { x: "$nothing", y: "$a" } })).toEqual([{ n: { y: { $numberInt: "1" } } }]);
    expect(project({ _id: 0, v: null, w: ["$nothing"] })).toEqual([{ v: null, w: [null] }]);
  });
});
