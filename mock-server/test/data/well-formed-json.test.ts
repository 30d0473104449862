/**
 * wellFormedJson: a JSON text's escapes of lone surrogates become U+FFFD's, as the service's Go
 * parsers read them; pairs, literal backslashes and every other text stay as they are.
 * wellFormedValue: the same for a value another parser read (a JWT's claims).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { wellFormedJson, wellFormedValue } from "../../src/data/well-formed-json.ts";

const wellFormed = (value: string) => (value as string & { toWellFormed(): string }).toWellFormed();

describe("wellFormedJson", () => {
  it("reads every JSON text as JSON.parse does, with each string (and key) made well-formed", () => {
    const text = fc.string({ unit: "binary", maxLength: 12 });
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: "small" },
        text,
        fc.integer(),
        fc.array(tie("node"), { maxLength: 4 }),
        fc.dictionary(text, tie("node"), { maxKeys: 4 }),
      ),
    })).node;
    const made = (v: unknown): unknown =>
      typeof v === "string"
        ? wellFormed(v)
        : Array.isArray(v)
          ? v.map(made)
          : v !== null && typeof v === "object"
            ? Object.fromEntries(Object.entries(v).map(([k, x]) => [wellFormed(k), made(x)]))
            : v;
    fc.assert(
      fc.property(value, (v) => {
        const json = JSON.stringify(v);
        const read = made(JSON.parse(json));
        expect(JSON.parse(wellFormedJson(json))).toEqual(read);
        expect(wellFormedValue(JSON.parse(json))).toEqual(read);
      }),
      { numRuns: 1_000 },
    );
  });

  it("replaces lone halves, keeps pairs, literal backslashes and texts without them", () => {
    expect(wellFormedJson(String.raw`["\ud800","\uDC00x","\uD83D\uDE00","a\ud83d\ud83d\ude00b"]`)).toBe(
      String.raw`["\ufffd","\ufffdx","\uD83D\uDE00","a\ufffd\ud83d\ude00b"]`,
    );
    // `\\` is a backslash: what follows it is text, not an escape.
    expect(wellFormedJson(String.raw`["\\ud800","\\\ud800","\ud800\\udc00"]`)).toBe(
      String.raw`["\\ud800","\\\ufffd","\ufffd\\udc00"]`,
    );
    const plain = String.raw`{"a":"\u0041\n\"\\","b":"\uE000"}`;
    expect(wellFormedJson(plain)).toBe(plain);
  });

  it("walks a value however deep, sets no prototype, and keeps the first place of keys made alike", () => {
    const deep = `${"[".repeat(100_000)}"\\ud800"${"]".repeat(100_000)}`;
    let node = wellFormedValue(JSON.parse(deep)) as unknown;
    while (Array.isArray(node)) node = node[0];
    expect(node).toBe("\ufffd");
    const text = String.raw`{"\ud800":1,"b":2,"\udc00":3,"a":{"__proto__":"\ud800","\ud801":{"x":"\udfff"}}}`;
    const made = wellFormedValue(JSON.parse(text)) as Record<string, Record<string, unknown>>;
    const expected = String.raw`{"\ufffd":3,"b":2,"a":{"__proto__":"\ufffd","\ufffd":{"x":"\ufffd"}}}`;
    expect(JSON.stringify(made)).toBe(JSON.stringify(JSON.parse(expected)));
    expect(Object.getPrototypeOf(made.a)).toBe(Object.prototype);
    expect(Object.hasOwn(made.a!, "__proto__")).toBe(true);
  });

  it("answers a value whose strings are all well-formed as it is", () => {
    const value = { a: ["😀", { b: "c" }], n: 1 };
    expect(wellFormedValue(value)).toBe(value);
    expect(wellFormedValue({ ...value, d: "\ud800" })).toEqual({ ...value, d: "\ufffd" });
  });
});
