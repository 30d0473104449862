/**
 * Conversions mingo does not make (data/bson-conversions.ts) and `$currentDate`'s timestamps: an
 * ObjectId to its hex string and back, to its date; values to Decimal128 (more in
 * decimal-arithmetic.test.ts).
 */
import { Timestamp } from "bson";
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON } from "../../src/data/documents.ts";
import { canonicalEJSONText } from "../../src/data/ejson-text.ts";
import { aggregate } from "../../src/data/query-engine.ts";
import { applyUpdate } from "../../src/data/updater.ts";

const id = "5f1d7a0a0000000000000000";
const doc = fromEJSON({ _id: { $oid: id }, s: id, short: "5f1d" }) as Document;
const value = (expr: unknown) =>
  JSON.parse(canonicalEJSONText(aggregate([doc], [{ $project: { _id: 0, v: expr } }])[0]!.v ?? null));

describe("ObjectId conversions", () => {
  it("turn an ObjectId into its hex string, its date or true, and a hex string into an ObjectId", () => {
    expect(value({ $toString: "$_id" })).toBe(id);
    expect(value({ $convert: { input: "$_id", to: "string" } })).toBe(id);
    expect(value({ $toDate: "$_id" })).toEqual({ $date: { $numberLong: String(0x5f1d7a0a * 1000) } });
    expect(value({ $toBool: "$_id" })).toBe(true);
    expect(value({ $toObjectId: "$s" })).toEqual({ $oid: id });
    expect(value({ $convert: { input: "$s", to: 7 } })).toEqual({ $oid: id });
    expect(value({ $eq: [{ $toObjectId: "$s" }, "$_id"] })).toBe(true);
    expect(value({ $toObjectId: "$missing" })).toBeNull();
  });

  it("refuses a string that is no ObjectId, or answers onError", () => {
    expect(() => value({ $toObjectId: "$short" })).toThrow(
      "Failed to parse objectId '5f1d' in $convert with no onError value: Invalid string length for parsing to OID, expected 24 but found 4",
    );
    expect(() => value({ $toObjectId: "zz1d7a0a0000000000000000" })).toThrow("Invalid character found in hex string");
    expect(value({ $convert: { input: "$short", to: "objectId", onError: "no" } })).toBe("no");
    expect(() => value({ $toObjectId: 5 })).toThrow("Unsupported conversion from int to objectId");
  });
});

describe("$currentDate", () => {
  it("sets a Timestamp when asked for one, a date otherwise, each increment new", () => {
    const target = fromEJSON({ _id: 1 }) as Document;
    const before = Date.now();
    applyUpdate(target, { $currentDate: { at: true, ts: { $type: "timestamp" }, day: { $type: "date" } } });
    expect(target.at).toBeInstanceOf(Date);
    expect(target.day).toBeInstanceOf(Date);
    const ts = target.ts as Timestamp;
    expect(ts).toBeInstanceOf(Timestamp);
    expect(ts.t).toBeGreaterThanOrEqual(Math.floor(before / 1000));
    const again = fromEJSON({ _id: 2 }) as Document;
    applyUpdate(again, { $currentDate: { ts: { $type: "timestamp" } } });
    expect((again.ts as Timestamp).greaterThan(ts)).toBe(true);
  });
});
