/**
 * The PostgreSQL store's escape for U+0000 (which text and jsonb cannot hold): reversible for every
 * string, injective (equality in SQL is equality of the originals), and JSON texts bound for jsonb
 * come back as the same values. The round trip through a real server is in test/postgres/.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  decodeText,
  encodeText,
  jsonFromDatabase,
  jsonParam,
  parseJson,
  toDatabase,
} from "../../src/store/postgres/text-encoding.ts";

// Strings rich in the characters that matter: U+0000, U+E000, "0", backslashes, "u".
const awkward = fc.string({
  unit: fc.oneof(fc.constantFrom("\u0000", "\uE000", "0", "\\", "u", '"'), fc.string({ minLength: 1, maxLength: 1 })),
  maxLength: 24,
});

describe("the U+0000 escape", () => {
  it("stores no U+0000 and gives every string back", () => {
    fc.assert(
      fc.property(fc.oneof(awkward, fc.string({ unit: "binary" })), (text) => {
        const stored = encodeText(text);
        expect(stored.includes("\u0000")).toBe(false);
        expect(decodeText(stored)).toBe(text);
      }),
      { numRuns: 2000 },
    );
  });

  it("keeps different strings different", () => {
    fc.assert(
      fc.property(awkward, awkward, (a, b) => {
        if (a !== b) expect(encodeText(a)).not.toBe(encodeText(b));
      }),
      { numRuns: 2000 },
    );
    expect(encodeText("a\u0000")).not.toBe(encodeText("a\uE0000"));
  });

  it("leaves strings without either character as they are", () => {
    expect(encodeText("plain text, ünïcode 🎉")).toBe("plain text, ünïcode 🎉");
    expect(decodeText("plain")).toBe("plain");
  });

  it("sends JSON texts and objects as JSON whose strings are stored encoded, and parses them back", () => {
    fc.assert(
      fc.property(fc.dictionary(awkward, fc.oneof(awkward, fc.array(awkward, { maxLength: 3 }))), (value) => {
        const json = JSON.stringify(value);
        for (const sent of [toDatabase(jsonParam(json)), toDatabase(value)] as string[]) {
          expect(sent.includes("\u0000")).toBe(false);
          // What PostgreSQL parses: valid JSON, each string the encoded original.
          const asStored = JSON.parse(sent) as Record<string, unknown>;
          expect(Object.keys(asStored)).toEqual(Object.keys(value).map(encodeText));
          // What comes back from a jsonb column, and from a text column.
          expect(parseJson(sent)).toEqual(value);
          expect(JSON.parse(jsonFromDatabase(decodeText(sent)))).toEqual(value);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it("does not take an escaped backslash before u0000 for the escape of U+0000", () => {
    const value = { text: "\\u0000 is six characters, \u0000 is one" };
    const sent = toDatabase(jsonParam(JSON.stringify(value))) as string;
    expect(parseJson(sent)).toEqual(value);
  });

  it("encodes arrays element by element and leaves numbers, dates and buffers alone", () => {
    const date = new Date(0);
    const buffer = Buffer.from("\u0000");
    expect(toDatabase(["a\u0000", null, 3])).toEqual(["a\uE0000", null, 3]);
    expect(toDatabase(date)).toBe(date);
    expect(toDatabase(buffer)).toBe(buffer);
    expect(toDatabase(42)).toBe(42);
    expect(toDatabase(null)).toBe(null);
  });
});
