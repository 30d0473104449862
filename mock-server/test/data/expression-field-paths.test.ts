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

// jstests/aggregation/expressions/let.js (decision 0051): `"$x"` is `"$$CURRENT.x"`, and `$let`
// (or `$map`'s and `$filter`'s `as`) may rebind CURRENT, which then changes what every field path
// in its scope reads; `$$ROOT` stays the document.
describe("CURRENT rebound", () => {
  const letDoc = fromEJSON({ _id: 1, zero: 0, one: 1, two: 2, three: 3, nested: { four: 4 } }) as Document;
  /** `expr` in a `$project` and summed in a `$group`, as let.js checks each; the two must agree. */
  function both(expr: unknown): unknown {
    const [projected] = aggregate([letDoc], [{ $project: { _id: 0, output: expr } }] as Document[]);
    const [grouped] = aggregate([letDoc], [{ $group: { _id: 0, res: { $sum: expr } } }] as Document[]);
    const output = projected && "output" in projected ? plainNumbers(projected.output) : "missing";
    expect(plainNumbers(grouped?.res)).toEqual(typeof output === "number" ? output : 0);
    return output;
  }

  it("changes what field paths and $$CURRENT read in $let's scope, as let.js has it", () => {
    expect(both({ $let: { vars: { CURRENT: "$$ROOT.nested" }, in: { $multiply: ["$four", "$$ROOT.two"] } } })).toBe(8);
    // The vars are read with the CURRENT from before.
    expect(both({ $let: { vars: { CURRENT: "$$CURRENT.nested" }, in: { $multiply: ["$four", "$$ROOT.two"] } } })).toBe(
      8,
    );
    expect(both({ $let: { vars: { CURRENT: "$nested" }, in: { $multiply: ["$four", "$$ROOT.two"] } } })).toBe(8);
    expect(
      both({ $let: { vars: { CURRENT: { $const: { ten: 10 } } }, in: { $multiply: ["$ten", "$$ROOT.two"] } } }),
    ).toBe(20);
    expect(both({ $let: { vars: { CURRENT: "$three" }, in: { $multiply: ["$$CURRENT", "$$ROOT.two"] } } })).toBe(6);
    expect(both({ $let: { vars: { CURRENT: "$three" }, in: "$four" } })).toBe("missing");
    expect(both({ $let: { vars: { CURRENT: "$absent" }, in: "$two" } })).toBe("missing");
  });

  it("holds in nested scopes until one rebinds it again, and not outside its own", () => {
    expect(both({ $let: { vars: { CURRENT: "$nested" }, in: { $let: { vars: { f: "$four" }, in: "$$f" } } } })).toBe(4);
    expect(
      both({
        $let: {
          vars: { CURRENT: "$nested" },
          in: { $let: { vars: { CURRENT: { $const: { four: 40 } } }, in: { $add: ["$four", "$$ROOT.one"] } } },
        },
      }),
    ).toBe(41);
    expect(both({ $add: [{ $let: { vars: { CURRENT: "$nested" }, in: "$four" } }, "$two"] })).toBe(6);
  });

  it("is each element in a $map or a $filter whose `as` is CURRENT", () => {
    const listDoc = fromEJSON({ _id: 1, x: 5, list: [{ x: 1 }, { x: 2 }, { y: 3 }] }) as Document;
    const [out] = aggregate([listDoc], [
      {
        $project: {
          _id: 0,
          mapped: { $map: { input: "$list", as: "CURRENT", in: { $ifNull: ["$x", "$$ROOT.x"] } } },
          kept: { $filter: { input: "$list", as: "CURRENT", cond: { $gt: ["$x", 1] } } },
          outside: "$x",
        },
      },
    ] as Document[]);
    expect(plainNumbers(out)).toEqual({ mapped: [1, 2, 5], kept: [{ x: 2 }], outside: 5 });
  });
});
