/**
 * The one-pass canonical Extended JSON writer answers exactly what the bson library's
 * `EJSON.stringify(value, { relaxed: false })` answers, for values of every BSON type, nested
 * anyhow — the text the service sends back for every function result and MongoDB action.
 */
import {
  Binary,
  BSONRegExp,
  BSONSymbol,
  Code,
  DBRef,
  Decimal128,
  Double,
  EJSON,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  Timestamp,
  UUID,
} from "bson";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bsonSize, sizeBoundOfText } from "../../src/data/bson-size.ts";
import {
  badNumberString,
  fromEJSON,
  fromEJSONText,
  fromStoredText,
  longNumberString,
  numbersToJs,
  scalarFromStoredText,
  toEJSONText,
} from "../../src/data/documents.ts";
import { canonicalEJSONText, keepText, storeDocument } from "../../src/data/ejson-text.ts";
import { strictFormProblem } from "../../src/data/strict-forms.ts";

/**
 * The library's text, but for integers past 2^53 below 2^63, which the writer gives their exact
 * digits (the library writes JavaScript's shortest): as the library writes them as Longs; and
 * 2^63, past Int64's range, a double.
 */
const library = (value: unknown) =>
  EJSON.stringify(exactIntegers(value) as never, { relaxed: false })?.replaceAll(
    '{"$numberLong":"9223372036854776000"}',
    '{"$numberDouble":"9223372036854776000"}',
  );

function exactIntegers(value: unknown): unknown {
  if (typeof value === "number")
    return Number.isInteger(value) && !Number.isSafeInteger(value) && value >= -(2 ** 63) && value < 2 ** 63
      ? Long.fromBigInt(BigInt(value))
      : value;
  if (Array.isArray(value)) {
    const items = value.map(exactIntegers);
    return items.every((item, i) => item === value[i]) ? value : items;
  }
  const proto = value !== null && typeof value === "object" ? Object.getPrototypeOf(value) : undefined;
  if (proto !== Object.prototype && proto !== null) return value;
  // (A copy only where a number changed, its keys defined as they are: `__proto__` among them.)
  const record = value as Record<string, unknown>;
  const members = Object.keys(record).map((key) => [key, exactIntegers(record[key])] as const);
  if (members.every(([key, member]) => member === record[key])) return value;
  const out = Object.create(proto);
  for (const [key, member] of members)
    Object.defineProperty(out, key, { value: member, enumerable: true, writable: true, configurable: true });
  return out;
}

/** The text, or the error's message: both writers must agree on refusals too. */
function outcome(write: (value: unknown) => string, value: unknown): string {
  try {
    return write(value);
  } catch (error) {
    return `threw ${(error as Error).message}`;
  }
}

/** A reader's value, or what it threw: both readers must agree on refusals too. */
function outcomeOf(read: () => unknown): unknown {
  try {
    return read();
  } catch (error) {
    return `threw ${(error as Error).message}`;
  }
}

const numbers = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, 2 ** 31 - 1, 2 ** 31, -(2 ** 31), -(2 ** 31) - 1, 2 ** 53, 2 ** 63, -(2 ** 63), 2 ** 64, 1e21),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.MIN_VALUE, 0.1, 1.5),
);

const leaves = fc.oneof(
  numbers,
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
  fc.integer({ min: -1e13, max: 1e13 }).map((ms) => new Date(ms)),
  fc.constant(new Date(Number.NaN)),
  fc
    .uint8Array({ maxLength: 12 })
    .map((bytes) => new ObjectId(Buffer.from([...bytes, ...new Array(12).fill(0)].slice(0, 12)))),
  fc.integer().map((n) => new Int32(n)),
  numbers.map((n) => new Double(n)),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((n) => Long.fromBigInt(n)),
  fc.constantFrom("0", "-1.5E+10", "1234567890.123456789", "NaN", "-Infinity").map((s) => Decimal128.fromString(s)),
  fc.uint8Array({ maxLength: 8 }).map((bytes) => new Binary(bytes, 0)),
  fc.constant(new UUID("0f8fad5b-d9cb-469f-a165-70867728950e")),
  fc.tuple(fc.nat(), fc.nat()).map(([t, i]) => new Timestamp({ t, i })),
  fc.constantFrom(new MinKey(), new MaxKey()),
  fc.constantFrom(new BSONRegExp("^a.*b$", "im"), new BSONRegExp("x", "")),
  fc.constant(new BSONSymbol("sym")),
  fc.constant(new Code("function () { return 1; }")),
  fc.constant(new Code("x", { a: 1, when: new Date(0) })),
  fc.constant(new DBRef("things", new ObjectId("6b0000000000000000000001"), "db", { extra: 2 })),
  fc.constantFrom(/ab+c/i, /ab+c/gi),
);

const keys = fc.oneof(
  fc.string({ unit: "binary", maxLength: 8 }),
  fc.constantFrom("_id", "__proto__", "$x", "a.b", ""),
);

const values = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: "small" }, leaves, tie("array"), tie("object")),
  array: fc.array(tie("value"), { maxLength: 5 }),
  object: fc.dictionary(keys, tie("value"), { maxKeys: 5 }),
})).value;

/** Documents of the values actions store (numbers as JavaScript numbers, valid dates, …). */
// (Field names as MongoDB takes them: no U+0000.)
const fieldNames = keys.filter((k) => !k.includes("\u0000"));
const { stored } = fc.letrec((tie) => ({
  leaf: fc.oneof(
    fc.string(),
    fc.integer(),
    fc.double({ noNaN: true, min: -1e15, max: 1e15 }).filter((d) => !Number.isInteger(d)),
    fc.boolean(),
    fc.constant(null),
    fc.integer({ min: 0, max: 2 ** 31 }).map((n) => new ObjectId(n.toString(16).padStart(24, "0"))),
    fc.integer({ min: 0, max: 4e12 }).map((n) => new Date(n)),
    fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n }).map((n) => Long.fromBigInt(n)),
  ),
  stored: fc.oneof(
    { depthSize: "small" },
    tie("leaf"),
    fc.array(tie("stored"), { maxLength: 4 }),
    fc.dictionary(fieldNames, tie("stored"), { maxKeys: 4 }),
  ),
}));

describe("canonical Extended JSON text", () => {
  it("is the bson library's text for values of every type, nested", () => {
    fc.assert(
      fc.property(values, (value) => {
        expect(outcome(canonicalEJSONText, value)).toBe(outcome(library, value));
      }),
      { numRuns: 3000, seed: 20261124 },
    );
  });

  it("writes the common types without the library's wrappers", () => {
    const doc = {
      _id: new ObjectId("6b0000000000000000000007"),
      n: 7,
      big: 2 ** 40,
      ratio: 0.25,
      negativeZero: -0,
      title: 'Item "7"\u2028',
      tags: ["bench", "odd", undefined],
      createdAt: new Date(Date.UTC(2026, 0, 1)),
      nothing: null,
      missing: undefined,
    };
    expect(canonicalEJSONText(doc)).toBe(
      '{"_id":{"$oid":"6b0000000000000000000007"},"n":{"$numberInt":"7"},"big":{"$numberLong":"1099511627776"},' +
        '"ratio":{"$numberDouble":"0.25"},"negativeZero":{"$numberDouble":"-0.0"},"title":"Item \\"7\\"\u2028",' +
        '"tags":["bench","odd",null],"createdAt":{"$date":{"$numberLong":"1767225600000"}},"nothing":null,"missing":null}',
    );
    expect(canonicalEJSONText(doc)).toBe(library(doc));
  });

  it("leaves functions out of objects and writes them as null in arrays, as JSON does", () => {
    const value = { keep: 1, fn: () => 1, list: [() => 2, Symbol("s")], [Symbol("k")]: 3 };
    expect(canonicalEJSONText(value)).toBe(library(value));
    expect(canonicalEJSONText(value)).toBe('{"keep":{"$numberInt":"1"},"list":[null,null]}');
  });

  it("reports a cycle as the library does, and writes very deep values as it does", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = { again: cyclic };
    expect(() => canonicalEJSONText(cyclic)).toThrow(/circular structure/);
    let deep: unknown = "bottom";
    for (let i = 0; i < 600; i++) deep = i % 2 ? { d: deep } : [deep];
    expect(canonicalEJSONText(deep)).toBe(library(deep));
  });

  it("joins the text a document was read from, which is the text it would be written as", () => {
    // What makes keeping a PostgreSQL row's text safe: a document of the values actions store, read
    // back from the text this writer made of it, is written as that same text (where the reader
    // says so: not through the reader of texts with regular expressions).
    fc.assert(
      fc.property(fc.dictionary(fieldNames, stored, { maxKeys: 6 }), (doc) => {
        const text = canonicalEJSONText(fromStoredText(canonicalEJSONText(doc)).value);
        const read = fromStoredText(text);
        if (read.sameText) expect(canonicalEJSONText([read.value])).toBe(`[${text}]`);
      }),
      { numRuns: 1000, seed: 11 },
    );
    // And the kept text is what goes out (a reply joins it rather than writing the document).
    const row = keepText({ title: "row" }, '{"title":"row"}');
    expect(canonicalEJSONText([row, { nested: row }])).toBe('[{"title":"row"},{"nested":{"title":"row"}}]');
    const marked = keepText({ title: "row" }, '{"title":"as read"}');
    expect(canonicalEJSONText([marked])).toBe('[{"title":"as read"}]');
  });

  it("is never shorter than a sixth of the document's BSON size (a reply of stored texts is capped by it)", () => {
    const within = (doc: Record<string, unknown>) => bsonSize(doc, new WeakMap()) <= sizeBoundOfText(toEJSONText(doc));
    fc.assert(fc.property(fc.dictionary(fieldNames, stored, { maxKeys: 6 }), within), { numRuns: 1_000 });
    // Every BSON type (what the writer or the sizing refuses is never stored).
    const storable = (doc: Record<string, unknown>) => {
      try {
        return { size: bsonSize(doc, new WeakMap()), text: toEJSONText(doc) };
      } catch {
        return null;
      }
    };
    fc.assert(
      fc.property(fc.dictionary(keys, values, { maxKeys: 6 }), (doc) => {
        const measured = storable(doc);
        fc.pre(measured !== null);
        return measured!.size <= sizeBoundOfText(measured!.text);
      }),
      { numRuns: 1_000 },
    );
    // The closest: long arrays of empty values, whose elements' indexes are long in BSON.
    for (const empty of [[], ""]) {
      const doc = { a: Array.from({ length: 1_100_000 }, () => empty) };
      expect(within(doc), JSON.stringify(empty)).toBe(true);
    }
  });

  it("reads a sort key's text as a document's reading would, when it is a scalar", () => {
    const scalars: unknown[] = [
      1,
      -0,
      -(2 ** 31),
      2 ** 31 - 1,
      2.5,
      2 ** 40,
      Number.NaN,
      "é",
      '{"$numberInt":"1"}',
      "",
      null,
      true,
    ];
    scalars.push(false, new Date(5), new ObjectId());
    for (const value of scalars) {
      const text = toEJSONText(value);
      const read = (fromStoredText(`{"v":${text}}`).value as { v: unknown }).v;
      expect(scalarFromStoredText(text)).toEqual(read);
      // As PostgreSQL writes a jsonb value: a space after each colon.
      if (typeof value !== "string") expect(scalarFromStoredText(text.replaceAll('":', '": '))).toEqual(read);
    }
    // What a text of one field does not answer alone: arrays, documents, numbers past 2^53, regular expressions.
    for (const value of [[1], { a: 1 }, Long.fromString("9007199254740993"), /a/, new BSONRegExp("a", "i")])
      expect(scalarFromStoredText(toEJSONText(value)), toEJSONText(value)).toBeUndefined();
  });

  it("reads a stored text as the bson library's reader does, the common types without it", () => {
    const documents = fc.dictionary(fieldNames, fc.oneof(stored, values), { maxKeys: 6 });
    fc.assert(
      fc.property(documents, (doc) => {
        let text: string;
        let expected: unknown;
        try {
          text = canonicalEJSONText(doc);
          if (/"\$regex"|"\$regularExpression"/.test(text)) return;
          expected = fromEJSON(JSON.parse(text));
        } catch {
          return; // (values no store could hold)
        }
        const read = fromStoredText(text);
        expect(read.sameText).toBe(true);
        expect(read.value).toStrictEqual(expected);
        expect(canonicalEJSONText(read.value)).toBe(canonicalEJSONText(expected));
      }),
      { numRuns: 3000, seed: 28 },
    );
  });

  it("reads a query's text (operators among the fields, type keys wherever they fall) as the library's reader does", () => {
    // Texts as jobs carry them: canonical, with `$` keys that are a query's operators, and now and
    // then a type's key beside others (which the library reads as that type).
    const operators = fc.constantFrom(
      "$exists",
      "$in",
      "$gt",
      "$and",
      "$elemMatch",
      "$not",
      "$size",
      "$oid",
      "$date",
      "$ref",
      "$id",
      "$undefined",
      "$numberInt",
      "$code",
    );
    const queryKeys = fc.oneof(fieldNames, operators);
    const { query } = fc.letrec((tie) => ({
      query: fc.oneof(
        { depthSize: "small" },
        leaves,
        fc.array(tie("query"), { maxLength: 4 }),
        fc.dictionary(queryKeys, tie("query"), { maxKeys: 4 }),
      ),
    }));
    let read = 0;
    fc.assert(
      fc.property(fc.dictionary(queryKeys, query, { maxKeys: 5 }), (doc) => {
        let text: string;
        let expected: unknown;
        try {
          text = canonicalEJSONText(doc);
          if (/"\$regex"|"\$regularExpression"/.test(text)) return;
          // (What the library's reader makes of it, numbers as the emulator keeps them.)
          expected = outcomeOf(() => numbersToJs(EJSON.parse(text, { relaxed: false })));
        } catch {
          return; // (values no writer could send)
        }
        read++;
        const actual = outcomeOf(() => fromEJSONText(text));
        expect(actual).toStrictEqual(expected);
      }),
      { numRuns: 3000, seed: 41 },
    );
    expect(read).toBeGreaterThan(1500);
    const parsed = fromEJSONText(
      '{"k1":{"$exists":false},"n":{"$in":[{"$numberInt":"1"},{"$oid":"6b0000000000000000000001"}]}}',
    );
    expect(parsed).toStrictEqual({ k1: { $exists: false }, n: { $in: [1, new ObjectId("6b0000000000000000000001")] } });
  });

  it("reads a client's Extended JSON, canonical or relaxed, as the library's reader does", () => {
    // What request bodies hold once JSON-parsed: bare numbers of every range (relaxed), the common
    // types' wrappers with strings in and out of their ranges, other wrappers, a query's operators.
    // (The library's reading as `fromEJSON` made it before it read the common types itself.)
    const reference = (value: unknown) => {
      const text = JSON.stringify(value);
      // (Integers' text as the service's reader reads it: data/strict-forms.ts.)
      const bad = badNumberString.exec(text);
      const badProblem = bad && strictFormProblem({ [`$number${bad[1]}`]: JSON.parse(`"${bad[2]}"`) });
      if (badProblem) throw new Error(badProblem);
      // (Past their type's range: refused, where the library wraps them around.)
      for (const [, kind, digits] of text.matchAll(longNumberString)) {
        const problem = strictFormProblem({ [`$number${kind}`]: digits });
        if (problem !== null) throw new Error(problem);
      }
      const parsed = EJSON.parse(text, { relaxed: false });
      const dates = (node: unknown): void => {
        if (node instanceof Date) {
          if (Number.isNaN(node.getTime())) throw new Error("$date is not a valid date");
        } else if (Array.isArray(node)) node.forEach(dates);
        else if (node !== null && typeof node === "object" && Object.getPrototypeOf(node) === Object.prototype)
          Object.values(node).forEach(dates);
      };
      dates(parsed);
      return numbersToJs(parsed);
    };
    const bare = fc.oneof(
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.bigInt({ min: -(2n ** 66n), max: 2n ** 66n }).map(Number),
      fc.constantFrom(
        0,
        -0,
        2 ** 31,
        -(2 ** 31) - 1,
        2 ** 53,
        2 ** 53 + 2,
        -(2 ** 53),
        2 ** 63,
        -(2 ** 63),
        2 ** 64,
        1e21,
      ),
    );
    const digits = fc.oneof(
      fc.bigInt({ min: -(10n ** 17n), max: 10n ** 17n }).map(String),
      fc.constantFrom("2147483647", "2147483648", "-2147483648", "-2147483649", "-0", "007", "999999999999999"),
      fc.constantFrom("1.5", "1e3", "-1.5E+10", "Infinity", "-Infinity", "NaN", "", "abc", " 1"),
    );
    const hex = fc.constantFrom(
      "6b0000000000000000000001",
      "6B00000000000000000000AF",
      "zz0000000000000000000001",
      "6b00",
    );
    const wrappers = fc.oneof(
      digits.map(($numberInt) => ({ $numberInt })),
      digits.map(($numberLong) => ({ $numberLong })),
      digits.map(($numberDouble) => ({ $numberDouble })),
      hex.map(($oid) => ({ $oid })),
      digits.map(($numberLong) => ({ $date: { $numberLong } })),
      fc.constantFrom({ $date: "2026-01-01T00:00:00Z" }, { $date: 5 }, { $date: "soon" }, { $undefined: true }),
      fc.constantFrom({ $numberDecimal: "1.5" }, { $binary: { base64: "AQI=", subType: "00" } }, { $minKey: 1 }),
      fc.constantFrom(
        { $oid: "6b0000000000000000000001", x: 1 },
        { $numberInt: "1", $numberLong: "2" },
        { $numberInt: 1 },
      ),
    );
    const { value } = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small" },
        bare,
        wrappers,
        fc.string({ maxLength: 6 }),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie("value"), { maxLength: 4 }),
        fc.dictionary(
          fc.oneof(fieldNames, fc.constantFrom("$exists", "$in", "$gt", "$set", "a\u0000b")),
          tie("value"),
          {
            maxKeys: 4,
          },
        ),
      ),
    }));
    fc.assert(
      fc.property(value, (input) => {
        const expected = outcomeOf(() => reference(input));
        const actual = outcomeOf(() => fromEJSON(input));
        expect(actual).toStrictEqual(expected);
      }),
      { numRuns: 5000, seed: 2611 },
    );
    // Past 2^53 an integer stays exact, as a Long; a bare one is the double it was sent as.
    expect(fromEJSON({ n: { $numberLong: "9007199254740993" } })).toStrictEqual({
      n: Long.fromString("9007199254740993"),
    });
    expect(fromEJSON({ n: 2 ** 60, m: 1.5 })).toStrictEqual({ n: Long.fromNumber(2 ** 60), m: 1.5 });
  });

  it("keeps a stored document's text: the same on every read, and the document cannot change under it", () => {
    fc.assert(
      fc.property(fc.dictionary(keys, values, { maxKeys: 6 }), (doc) => {
        const expected = outcome(library, [doc, { doc }]);
        const stored = storeDocument(doc);
        expect(outcome(canonicalEJSONText, [stored, { doc: stored }])).toBe(expected);
        expect(outcome(canonicalEJSONText, [stored, { doc: stored }])).toBe(expected);
      }),
      { numRuns: 500, seed: 7 },
    );
    const stored = storeDocument({ title: "kept", tags: ["a"], nested: { n: 1 } });
    expect(canonicalEJSONText([stored])).toBe('[{"title":"kept","tags":["a"],"nested":{"n":{"$numberInt":"1"}}}]');
    expect(() => {
      (stored as { title: string }).title = "changed";
    }).toThrow(TypeError);
    expect(() => (stored.tags as string[]).push("b")).toThrow(TypeError);
    expect(() => {
      (stored.nested as { n: number }).n = 2;
    }).toThrow(TypeError);
    expect(canonicalEJSONText([stored])).toBe('[{"title":"kept","tags":["a"],"nested":{"n":{"$numberInt":"1"}}}]');
  });
});
