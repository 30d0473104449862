/**
 * `$bitsAllSet`, `$bitsAllClear`, `$bitsAnySet`, `$bitsAnyClear` (bit-operators.ts), with the
 * answers of MongoDB's bittest.js: masks as numbers, lists of positions and BinData; values as
 * 64-bit two's complement whole numbers of any type or BinData; anything else never matches.
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON } from "../../src/data/documents.ts";
import { freezeTree } from "../../src/data/ejson-text.ts";
import { find } from "../../src/data/query-engine.ts";

const stored = (values: unknown[]) =>
  values.map((value) => {
    const doc = fromEJSON(value) as Document;
    freezeTree(doc);
    return doc;
  });
/** How many of `docs` match `{a: test}` (or the refusal's text). */
const count = (docs: Document[], test: unknown): number | string => {
  try {
    return find(docs, { a: fromEJSON(test) as Document }).length;
  } catch (error) {
    return (error as Error).message;
  }
};
const L = (digits: string) => ({ $numberLong: digits });
const all = Array.from({ length: 64 }, (_, i) => i);

describe("the query's bit tests", () => {
  it("test whole numbers of every type by a number, a list of positions or a BinData", () => {
    const numbers = stored([{ a: 0 }, { a: 1 }, { a: 54 }, { a: 88 }, { a: 255 }, { a: { $numberDouble: "1e18" } }]);
    const cases: [unknown, number][] = [
      [{ $bitsAllSet: 54 }, 2],
      [{ $bitsAllSet: [1, 2, 4, 5] }, 2],
      [{ $bitsAllSet: [0, 1, 2, 3, 4, 5, 6, 7] }, 1],
      [{ $bitsAllClear: 129 }, 4],
      [{ $bitsAnySet: 9 }, 3],
      [{ $bitsAnyClear: 255 }, 5],
      [{ $bitsAllSet: { $binary: { base64: "Ng==", subType: "00" } } }, 2],
      [{ $bitsAllSet: 54, $bitsAllClear: 201 }, 1],
    ];
    for (const [test, n] of cases) expect(count(numbers, test), JSON.stringify(test)).toBe(n);
    const longs = stored([{ a: 0 }, { a: 1 }, { a: L("9223372036854775807") }, { a: L("6917529027641081856") }]);
    expect(count(longs, { $bitsAllSet: L("6917529027641081856") })).toBe(2);
    expect(count(longs, { $bitsAnyClear: L("9223372036854775807") })).toBe(3);
    const binary = stored([{ a: { $binary: { base64: "AAAAAAAAAAAAAAAAAAAAAAAAAAAA", subType: "00" } } }]);
    expect(count(binary, { $bitsAllClear: [0, 100, 500] })).toBe(1);
  });

  it("read negative numbers in two's complement, their bits past the 64th set", () => {
    const negatives = stored([
      { a: { $numberDouble: "-0" } },
      { a: -1 },
      { a: -54 },
      { a: { $numberDouble: "-1e18" } },
    ]);
    const cases: [unknown, number][] = [
      [{ $bitsAllSet: 74 }, 2],
      [{ $bitsAllSet: all }, 1],
      [{ $bitsAllSet: [1, 7, 6, 3, 100] }, 2],
      [{ $bitsAllClear: all }, 1],
      [{ $bitsAnySet: all }, 3],
      [{ $bitsAnyClear: [0, 2, 4, 5, 100] }, 3],
    ];
    for (const [test, n] of cases) expect(count(negatives, test), JSON.stringify(test)).toBe(n);
  });

  it("never match a fraction, NaN, an infinity, a value past 64 bits or a value of another type", () => {
    const others = stored([
      { a: 1.1 },
      { a: { $numberDouble: "NaN" } },
      { a: { $numberDouble: "Infinity" } },
      { a: { $numberDecimal: "1.1" } },
      { a: { $numberDecimal: "9223372036854775808" } },
      { a: "1" },
      { a: true },
      { a: null },
      { a: { $date: "1970-01-01T00:00:00.001Z" } },
      {},
    ]);
    expect(count(others, { $bitsAnySet: 1 })).toBe(0);
    expect(count(others, { $bitsAllClear: 1 })).toBe(0);
    // (A whole Decimal128 is tested; an array by its elements.)
    expect(count(stored([{ a: { $numberDecimal: "3.0" } }, { a: [1.1, 54] }]), { $bitsAllSet: 2 })).toBe(2);
  });

  it("refuse the masks MongoDB refuses, with its texts", () => {
    const docs = stored([{ a: 1 }]);
    expect(count(docs, { $bitsAllSet: -1 })).toBe("Expected a non-negative number in: $bitsAllSet: -1");
    expect(count(docs, { $bitsAllSet: 1.5 })).toBe("Expected an integer: $bitsAllSet: 1.5");
    expect(count(docs, { $bitsAllSet: "1" })).toBe(
      '$bitsAllSet takes an Array, a number, or a BinData but received: $bitsAllSet: "1"',
    );
    expect(count(docs, { $bitsAnySet: [1, -1] })).toBe(
      "Failed to parse bit position. Expected a non-negative number in: 1: -1",
    );
    expect(count(docs, { $bitsAnySet: [1e10] })).toBe(
      "Failed to parse bit position. Cannot represent as a 32-bit integer: 0: 10000000000",
    );
    expect(count(docs, { $bitsAllSet: 2 ** 31 })).toBe(0);
  });
});
