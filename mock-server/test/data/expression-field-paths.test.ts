/**
 * What an expression's field path (`"$a.b"`, `"$$v.a"`, `"$$ROOT.a"`) reaches, as MongoDB's
 * ExpressionFieldPath walks it: each component names a field, never an array index; an array on
 * the way takes the rest of the path from each of its documents, passing over its other elements
 * (scalars, nested arrays) and the documents where the rest is missing. A query's own paths differ
 * (an index names an element there: query-paths.test.ts). mingo read expression paths as query
 * paths; patches/mingo+7.2.7.patch, applied at install, makes them MongoDB's (decision 0053).
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON } from "../../src/data/documents.ts";
import { aggregate, find } from "../../src/data/query-engine.ts";
import { plainNumbers } from "../helpers/plain-numbers.ts";

const doc = fromEJSON({
  _id: 1,
  a: [{ b: 1 }, [{ b: 2 }], 3, { b: [4, [5]] }, { c: 6 }, { b: null }],
  arr: [10, 20],
  c: { "0": "zero", "1": { x: "one" } },
  o: { x: { y: 1 } },
  deep: { list: [{ in: [{ v: 1 }, { v: 2 }] }, { in: { v: 3 } }, { in: [[{ v: 4 }]] }] },
  n: null,
  id: { $oid: "65a000000000000000000001" },
}) as Document;

/** `expr` over the document, with plain int32s; `"missing"` when it evaluates to nothing. */
function value(expr: unknown): unknown {
  const [out] = aggregate([doc], [{ $project: { _id: 0, v: expr } }] as Document[]);
  return out && "v" in out ? plainNumbers(out.v) : "missing";
}

describe("expression field paths", () => {
  it("take the rest of the path from an array's documents only, passing over nested arrays and scalars", () => {
    expect(value("$a.b")).toEqual([1, [4, [5]], null]);
    expect(value("$deep.list.in.v")).toEqual([[1, 2], 3, []]);
  });

  it("read a numeric component as a field name, never as an array index", () => {
    expect(value("$arr.0")).toEqual([]);
    expect(value("$a.0.b")).toEqual([]);
    expect(value("$$ROOT.arr.1")).toEqual([]);
    expect(value({ $arrayElemAt: ["$arr", 0] })).toBe(10);
    expect(value("$c.0")).toBe("zero");
    expect(value("$c.1.x")).toBe("one");
  });

  it("reach nothing through a scalar, null or a BSON value", () => {
    expect(value("$n.x")).toBe("missing");
    expect(value("$id.id")).toBe("missing");
    expect(value("$o.x.y.z")).toBe("missing");
    expect(value({ $let: { vars: { s: "$o.x.y" }, in: "$$s.length" } })).toBe("missing");
  });

  it("walk a variable's value alike", () => {
    expect(value({ $let: { vars: { v: "$arr" }, in: "$$v.0" } })).toEqual([]);
    expect(value({ $let: { vars: { v: "$a" }, in: "$$v.b" } })).toEqual([1, [4, [5]], null]);
    expect(value({ $map: { input: "$a", as: "e", in: "$$e.b" } })).toEqual([1, [2], null, [4, [5]], null, null]);
  });

  it("are read so in $group keys, accumulators and $expr too", () => {
    const [group] = aggregate([doc], [{ $group: { _id: "$arr.0", b: { $push: "$a.b" } } }] as Document[]);
    expect(plainNumbers(group)).toEqual({ _id: [], b: [[1, [4, [5]], null]] });
    expect(find([doc], { $expr: { $eq: ["$arr.0", 10] } })).toEqual([]);
    expect(find([doc], { $expr: { $eq: ["$arr.0", []] } })).toHaveLength(1);
    // A query's own path does index the array.
    expect(find([doc], { "arr.0": 10 })).toHaveLength(1);
  });
});
