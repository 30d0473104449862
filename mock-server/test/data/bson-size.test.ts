/**
 * The logical-size meter (bson-size.ts) and the capped reply writer (ejson-text.ts `replyText`):
 * sizes are exactly the BSON library's, measured through shared references once each, and a value
 * doubled through shared references is measured (and refused) in as many steps as it has parts.
 */
import { Binary, BSON, BSONRegExp, Decimal128, Int32, Long, ObjectId, Timestamp } from "bson";
import { describe, expect, it } from "vitest";
import { bsonSize } from "../../src/data/bson-size.ts";
import { toEJSONText } from "../../src/data/documents.ts";
import { maxReplyBytes, replyText } from "../../src/data/ejson-text.ts";
import { defaultQueryLimits, NeedsWorker, withQueryLimits } from "../../src/data/query-limits.ts";

const doubled = (n: number): unknown => {
  let value: unknown = "x";
  for (let i = 0; i < n; i++) value = [value, value];
  return value;
};

describe("bsonSize", () => {
  it("is the BSON library's size, for every type the emulator keeps", () => {
    const values: Record<string, unknown>[] = [
      {
        a: 1,
        b: "hé",
        c: [1, 2.5, -0, 2 ** 40, -(2 ** 31), 2 ** 31, null, true, undefined, "x".repeat(100)],
        d: { e: new Date(0), f: new ObjectId() },
      },
      { arr: Array.from({ length: 12_345 }, (_, i) => i) },
      {
        l: Long.fromString("1152921504606846976"),
        dec: Decimal128.fromString("1.5"),
        bin: new Binary(Buffer.from("abc")),
        old: new Binary(Buffer.from("abc"), 2),
        ts: new Timestamp({ t: 1, i: 2 }),
        re: new BSONRegExp("a+", "i"),
        i32: new Int32(5),
      },
      { nested: [[[]], {}, [{ x: [1, [2, [3]]] }]] },
      { ключ: "значение", emoji: "😀", "": "" },
    ];
    for (const value of values) expect(bsonSize(value, new WeakMap())).toBe(BSON.calculateObjectSize(value as never));
  });

  it("measures a value doubled through shared references in as many steps as it has parts", () => {
    const value = doubled(60);
    const started = performance.now();
    const size = bsonSize(value, new WeakMap());
    expect(performance.now() - started).toBeLessThan(50);
    // 2^60 leaves of "x": far past anything that could be walked.
    expect(size).toBeGreaterThan(2 ** 60);
    expect(bsonSize(doubled(10), new WeakMap())).toBe(BSON.calculateObjectSize({ v: doubled(10) } as never) - 8);
  });

  it("stops at its limit (Infinity), and refuses a long array without walking it", () => {
    expect(bsonSize(doubled(30), new WeakMap(), 1_000)).toBe(Number.POSITIVE_INFINITY);
    const long = new Array(50_000_000);
    expect(bsonSize(long, new WeakMap(), 100 * 1024 * 1024)).toBe(Number.POSITIVE_INFINITY);
  });

  it("refuses nesting deeper than MongoDB's", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 300; i++) deep = [deep];
    expect(() => bsonSize(deep, new WeakMap())).toThrow(/nested too deeply/);
  });
});

describe("replyText", () => {
  const limits = {
    capBytes: maxReplyBytes,
    onTooLarge: (bytes: number) => new Error(`too large: ${bytes}`),
  };

  it("writes what toEJSONText writes", () => {
    const value = [
      { _id: new ObjectId(), n: 1, d: 2.5, s: "a\u0000b", at: new Date(5), l: Long.fromString("9007199254740993") },
    ];
    expect(replyText(value, limits)).toBe(toEJSONText(value));
    expect(replyText(undefined, limits)).toBe(toEJSONText(undefined));
  });

  it("refuses a reply past the cap with its whole size, after writing at most the cap", () => {
    const value = doubled(40);
    const started = performance.now();
    expect(() => replyText(value, limits)).toThrow(`too large: ${bsonSize(value, new WeakMap())}`);
    expect(() => replyText(value, { ...limits, measureFirst: true })).toThrow(/^too large: \d+$/);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it("is part of the query budget: on the main thread a long write moves to a worker", () => {
    const write = () =>
      withQueryLimits(defaultQueryLimits, () => replyText(doubled(23), { ...limits, capBytes: 1e12 }), {
        mainThread: true,
      });
    expect(write).toThrow(NeedsWorker);
  });
});
