/**
 * Numeric `_id`s are one value whatever their BSON type, as MongoDB's `_id` index compares them:
 * 5, 5.0, Int64 5 and Decimal128 "5.00" are the same `_id` (a second insert is a duplicate key, a
 * query by either finds the document), while Decimal128 "0.1" and the double 0.1 are not (the
 * double is 0.1000000000000000055…). On both stores (PostgreSQL keys its rows by them).
 */
import { describe, expect, it } from "vitest";
import { openDataActions } from "../helpers/app.ts";

const { action, collection } = openDataActions("numeric-ids");
const decimal = (text: string) => ({ $numberDecimal: text });
const long = (text: string) => ({ $numberLong: text });
const double = (text: string) => ({ $numberDouble: text });

async function inserted(ns: Record<string, unknown>, _id: unknown): Promise<string> {
  const { response, body } = await action("insertOne", { ...ns, document: { _id, tag: JSON.stringify(_id) } });
  return response.statusCode === 200 ? "stored" : body.error;
}

const tags = async (ns: Record<string, unknown>, query: Record<string, unknown>) =>
  ((await action("find", { ...ns, query, sort: { tag: 1 } })).body as { tag: string }[]).map((doc) => doc.tag);

describe("a numeric _id", () => {
  it("is one value across int, double, Int64 and Decimal128: found by any, stored once", async () => {
    const ns = collection();
    expect(await inserted(ns, decimal("5.00"))).toBe("stored");
    for (const query of [{ _id: 5 }, { _id: double("5.0") }, { _id: long("5") }, { _id: { $in: [4, 5] } }])
      expect(await tags(ns, query), JSON.stringify(query)).toEqual(['{"$numberDecimal":"5.00"}']);
    for (const again of [5, double("5"), long("5"), decimal("5"), decimal("0.5E1")])
      expect(await inserted(ns, again), JSON.stringify(again)).toMatch(
        /^Duplicate key error collection: .* index: _id_/,
      );
    // Past 2^53: an Int64 and the double of the same value; a Decimal128 of it too.
    expect(await inserted(ns, long("1152921504606846976"))).toBe("stored");
    expect(await tags(ns, { _id: double("1152921504606846976") })).toEqual(['{"$numberLong":"1152921504606846976"}']);
    expect(await tags(ns, { _id: decimal("1.152921504606846976E+18") })).toEqual([
      '{"$numberLong":"1152921504606846976"}',
    ]);
    expect(await inserted(ns, double("1152921504606846976"))).toMatch(/^Duplicate key error/);
    // 2^53 + 1 is no double: the Int64 and the Decimal128 of it are one value, the nearest double another.
    expect(await inserted(ns, long("9007199254740993"))).toBe("stored");
    expect(await inserted(ns, decimal("9007199254740993"))).toMatch(/^Duplicate key error/);
    expect(await tags(ns, { _id: decimal("9007199254740993.0") })).toEqual(['{"$numberLong":"9007199254740993"}']);
    expect(await inserted(ns, double("9007199254740992"))).toBe("stored");
  });

  it("keeps a fraction's double and decimal apart unless the double is exactly that decimal", async () => {
    const ns = collection();
    expect(await inserted(ns, decimal("0.1"))).toBe("stored");
    expect(await inserted(ns, 0.1)).toBe("stored");
    expect(await tags(ns, { _id: 0.1 })).toEqual(["0.1"]);
    expect(await tags(ns, { _id: decimal("0.10") })).toEqual(['{"$numberDecimal":"0.1"}']);
    // 1.5 is a double exactly.
    expect(await inserted(ns, decimal("1.50"))).toBe("stored");
    expect(await inserted(ns, 1.5)).toMatch(/^Duplicate key error/);
    expect(await tags(ns, { _id: 1.5 })).toEqual(['{"$numberDecimal":"1.50"}']);
    // Zero is zero, whatever its sign or exponent.
    expect(await inserted(ns, decimal("-0E+3"))).toBe("stored");
    expect(await inserted(ns, double("-0.0"))).toMatch(/^Duplicate key error/);
    expect(await tags(ns, { _id: 0 })).toEqual(['{"$numberDecimal":"-0E+3"}']);
  });
});
