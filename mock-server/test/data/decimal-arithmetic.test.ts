/**
 * Arithmetic on MongoDB's numbers beyond JavaScript's (data/decimal.ts, data/numeric-operators.ts):
 * Decimal128 as IEEE 754 decimal128 computes it, exponents kept as MongoDB keeps them (the text a
 * client reads), Int64 past 2^53 exact; in aggregation expressions, accumulators and updates.
 */
import { Decimal128, Long } from "bson";
import { describe, expect, it } from "vitest";
import {
  add,
  divide,
  fromDecimal128,
  fromNumber,
  multiply,
  quantize,
  subtract,
  toDecimal128,
} from "../../src/data/decimal.ts";
import { type Document, fromEJSON } from "../../src/data/documents.ts";
import { canonicalEJSONText } from "../../src/data/ejson-text.ts";
import { aggregate } from "../../src/data/query-engine.ts";
import { applyUpdate } from "../../src/data/updater.ts";

const dec = (text: string) => fromDecimal128(Decimal128.fromString(text));
const text = (value: ReturnType<typeof dec>) => toDecimal128(value).toString();
const read = (ejson: unknown) => fromEJSON(ejson) as Document;
const decimal = (text: string) => ({ $numberDecimal: text });
/** One expression's value for a document, as canonical Extended JSON. */
const value = (doc: Document, expr: unknown) =>
  JSON.parse(canonicalEJSONText(aggregate([doc], [{ $project: { _id: 0, v: expr } }])[0]!.v ?? null));

describe("decimal128 arithmetic", () => {
  it("keeps the exponent IEEE prefers and rounds half to even to 34 digits", () => {
    expect(text(add(dec("1.10"), dec("2.20")))).toBe("3.30");
    expect(text(subtract(dec("1.10"), dec("1.10")))).toBe("0.00");
    expect(text(multiply(dec("1.10"), dec("2")))).toBe("2.20");
    expect(text(divide(dec("1"), dec("3")))).toBe("0.3333333333333333333333333333333333");
    expect(text(divide(dec("2"), dec("3")))).toBe("0.6666666666666666666666666666666667");
    expect(text(divide(dec("1.00"), dec("4")))).toBe("0.25");
    expect(text(divide(dec("10"), dec("4")))).toBe("2.5");
    expect(text(add(dec("9999999999999999999999999999999999"), dec("1")))).toBe(
      "1.000000000000000000000000000000000E+34",
    );
    expect(text(add(dec("1E+34"), dec("0.5")))).toBe("1.000000000000000000000000000000000E+34");
    expect(text(multiply(dec("9.999999999999999999999999999999999E+6144"), dec("10")))).toBe("Infinity");
    expect(text(add(dec("Infinity"), dec("-Infinity")))).toBe("NaN");
  });

  it("takes a double to 15 significant digits, an integer exactly", () => {
    expect(text(fromNumber(0.1))).toBe("0.100000000000000");
    expect(text(add(dec("1.10"), fromNumber(0.1)))).toBe("1.200000000000000");
    expect(text(fromNumber(2 ** 53 + 2))).toBe("9007199254740994");
    expect(text(fromNumber(9007199254740993n))).toBe("9007199254740993");
  });

  it("rounds to places half to even, truncates, floors and ceils", () => {
    expect(text(quantize(dec("2.345"), 2, "halfEven"))).toBe("2.34");
    expect(text(quantize(dec("2.355"), 2, "halfEven"))).toBe("2.36");
    expect(text(quantize(dec("-2.5"), 0, "halfEven"))).toBe("-2");
    expect(text(quantize(dec("2.349"), 2, "truncate"))).toBe("2.34");
    expect(text(quantize(dec("1234.5"), -2, "halfEven"))).toBe("1.2E+3");
    expect(text(quantize(dec("-1.2"), 0, "floor"))).toBe("-2");
    expect(text(quantize(dec("1.2"), 0, "ceil"))).toBe("2");
    expect(text(quantize(dec("1.2"), 3, "halfEven"))).toBe("1.2");
  });
});

describe("aggregation", () => {
  const prices = [read({ p: decimal("1.10") }), read({ p: decimal("2.20") }), read({ p: 3 }), read({ p: "n/a" })];

  it("sums and averages Decimal128 values as decimals", () => {
    const [group] = aggregate(prices, [{ $group: { _id: null, sum: { $sum: "$p" }, avg: { $avg: "$p" } } }]);
    expect(JSON.parse(canonicalEJSONText(group))).toEqual({
      _id: null,
      sum: decimal("6.30"),
      avg: decimal("2.10"),
    });
    expect(value(prices[0]!, { $sum: ["$p", 1] })).toEqual(decimal("2.10"));
    const big = [read({ n: { $numberLong: "9007199254740993" } }), read({ n: 1 })];
    const [longs] = aggregate(big, [{ $group: { _id: null, sum: { $sum: "$n" } } }]);
    expect(longs!.sum).toEqual(Long.fromString("9007199254740994"));
  });

  it("adds, subtracts, multiplies, divides and rounds Decimal128 and Int64 values", () => {
    const doc = read({ p: decimal("1.10"), m: decimal("-1.10"), l: { $numberLong: "9007199254740993" } });
    expect(value(doc, { $add: ["$p", 1] })).toEqual(decimal("2.10"));
    expect(value(doc, { $add: ["$p", 0.1] })).toEqual(decimal("1.200000000000000"));
    expect(value(doc, { $subtract: ["$p", 1] })).toEqual(decimal("0.10"));
    expect(value(doc, { $multiply: ["$p", "$p"] })).toEqual(decimal("1.2100"));
    expect(value(doc, { $divide: ["$p", 4] })).toEqual(decimal("0.275"));
    expect(value(doc, { $abs: "$m" })).toEqual(decimal("1.10"));
    expect(value(doc, { $round: ["$p", 0] })).toEqual(decimal("1"));
    expect(value(doc, { $trunc: ["$m", 1] })).toEqual(decimal("-1.1"));
    expect(value(doc, { $floor: "$m" })).toEqual(decimal("-2"));
    expect(value(doc, { $add: ["$l", 1] })).toEqual({ $numberLong: "9007199254740994" });
    expect(value(doc, { $multiply: ["$l", 2] })).toEqual({ $numberLong: "18014398509481986" });
    // Past 64 bits a double, as MongoDB's long overflows; and the fold stays a double from there.
    expect(value(doc, { $multiply: ["$l", 2048] })).toEqual({ $numberDouble: "18446744073709552000" });
    expect(value(doc, { $multiply: ["$l", ...Array.from({ length: 2000 }, () => 1e18)] })).toEqual({
      $numberDouble: "Infinity",
    });
    expect(value(doc, { $add: ["$p", null] })).toBeNull();
    expect(value(doc, { $mod: [{ $multiply: ["$p", 7] }, 2] })).toEqual(decimal("1.70"));
    expect(value(doc, { $mod: ["$m", 1] })).toEqual(decimal("-0.10"));
    expect(value(doc, { $mod: ["$l", 10] })).toEqual({ $numberInt: "3" });
    expect(() => value(doc, { $mod: ["$p", 0] })).toThrow("can't $mod by zero");
    expect(() => value(doc, { $divide: ["$p", 0] })).toThrow("can't $divide by zero");
    expect(() => value(doc, { $add: ["$p", "x"] })).toThrow("$add only supports numeric or date types, not string");
    // Numbers of JavaScript's types alone are as before.
    expect(value(doc, { $add: [1, 2.5] })).toEqual({ $numberDouble: "3.5" });
  });

  it("converts to and from Decimal128 and Int64", () => {
    const doc = read({ p: decimal("1.10"), l: { $numberLong: "9007199254740993" }, huge: decimal("1E+20") });
    expect(value(doc, { $toString: "$p" })).toBe("1.10");
    expect(value(doc, { $toString: "$l" })).toBe("9007199254740993");
    expect(value(doc, { $toDecimal: 2.5 })).toEqual(decimal("2.50000000000000"));
    expect(value(doc, { $toDecimal: "2.50" })).toEqual(decimal("2.50"));
    expect(value(doc, { $toDecimal: 7 })).toEqual(decimal("7"));
    expect(value(doc, { $toDecimal: "$l" })).toEqual(decimal("9007199254740993"));
    expect(value(doc, { $toDouble: "$p" })).toEqual({ $numberDouble: "1.1" });
    expect(value(doc, { $toInt: "$p" })).toEqual({ $numberInt: "1" });
    expect(value(doc, { $toLong: { $divide: ["$huge", 100000] } })).toEqual({ $numberLong: "1000000000000000" });
    expect(() => value(doc, { $toLong: "$huge" })).toThrow("Conversion would overflow target type");
    expect(value(doc, { $convert: { input: "$p", to: "string" } })).toBe("1.10");
    expect(value(doc, { $convert: { input: "abc", to: "decimal", onError: "bad" } })).toBe("bad");
    expect(value(doc, { $convert: { input: 5, to: 19 } })).toEqual(decimal("5"));
    expect(value(doc, { $convert: { input: "$missing", to: "decimal", onNull: "none" } })).toBe("none");
  });
});

describe("updates", () => {
  const account = () =>
    read({ _id: "a1", balance: decimal("1.10"), n: 1, big: { $numberLong: "9007199254740993" }, name: "x" });
  const after = (update: Document) => {
    const doc = account();
    const changed = applyUpdate(doc, update);
    return { doc: JSON.parse(canonicalEJSONText(doc)), changed };
  };

  it("$inc and $mul Decimal128 and Int64 fields exactly", () => {
    expect(after({ $inc: { balance: Decimal128.fromString("0.20") } }).doc.balance).toEqual(decimal("1.30"));
    expect(after({ $inc: { balance: -1 } }).doc.balance).toEqual(decimal("0.10"));
    expect(after({ $inc: { n: Decimal128.fromString("0.5") } }).doc.n).toEqual(decimal("1.5"));
    expect(after({ $mul: { balance: 2 } }).doc.balance).toEqual(decimal("2.20"));
    expect(after({ $inc: { big: 1 } }).doc.big).toEqual({ $numberLong: "9007199254740994" });
    expect(after({ $inc: { fresh: Decimal128.fromString("2.5") } }).doc.fresh).toEqual(decimal("2.5"));
    expect(after({ $inc: { balance: Decimal128.fromString("0.00") } }).changed).toEqual([]);
    // An Int64 past 2^53 (how a double there is written, and read back from a stored text) plus a
    // half: the double it comes to is that value again, written the same — no change, as a double's
    // $inc there is none (the PostgreSQL store reads it as an Int64 where memory keeps the double).
    const atTwo53 = read({ _id: "b", x: { $numberLong: "9007199254740992" } });
    expect(applyUpdate(atTwo53, { $inc: { x: 0.5 } })).toEqual([]);
    expect(applyUpdate(read({ _id: "c", x: 2 ** 53 }), { $inc: { x: 0.5 } })).toEqual([]);
    expect(applyUpdate(atTwo53, { $inc: { x: 2 } })).toEqual(["x"]);
    expect(after({ $inc: { balance: 1, n: 1 } })).toMatchObject({
      doc: { balance: decimal("2.10"), n: { $numberInt: "2" } },
    });
  });

  it("refuses to $inc or $mul a field that holds no number", () => {
    expect(() => after({ $inc: { name: 1 } })).toThrow(
      `Cannot apply $inc to a value of non-numeric type. {_id: "a1"} has the field 'name' of non-numeric type string`,
    );
    expect(() => after({ $mul: { name: Decimal128.fromString("2") } })).toThrow("Cannot apply $mul");
  });
});
