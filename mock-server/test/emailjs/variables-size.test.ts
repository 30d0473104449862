/** The template variables' size as the limit counts it: their JSON's UTF-8 bytes, counted up to the limit only. */
import { describe, expect, it } from "vitest";
import { jsonBytesOver } from "../../src/emailjs/variables-size.ts";

const shapes: unknown[] = [
  {},
  [],
  null,
  "plain",
  { to_email: "ann@example.com", subject: "Grüße 👋", message: 'line\nbreak "quoted" \u0000' },
  { n: 1, x: -0, big: 1e21, small: 1e-7, nan: Number.NaN, yes: true, no: false, none: null },
  { list: [1, "two", [3, { four: 4 }], null, {}], nested: { deeper: { deepest: ["é"] } } },
  { skipped: undefined, kept: 1, array: [undefined, () => 1] },
  { at: new Date(0), 'key with "quotes"': "v", ключ: "значение" },
  Object.fromEntries(Array.from({ length: 3_000 }, (_, i) => [`k${i}`, i])),
];

describe("jsonBytesOver", () => {
  it("answers as the written JSON's byte length does, at every limit around it", () => {
    for (const value of shapes) {
      const bytes = Buffer.byteLength(JSON.stringify(value) ?? "");
      for (const limit of [0, bytes - 1, bytes, bytes + 1, 50 * 1024])
        expect(jsonBytesOver(value, limit), `${JSON.stringify(value)?.slice(0, 60)} at ${limit}`).toBe(bytes > limit);
    }
  });

  it("stops at the limit: 200,000 variables are not all written", () => {
    const many = Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`k${i}`, i]));
    let read = 0;
    const counted = new Proxy(many, {
      get(target, key, receiver) {
        read++;
        return Reflect.get(target, key, receiver);
      },
    });
    expect(jsonBytesOver(counted, 50 * 1024)).toBe(true);
    expect(read).toBeLessThan(10_000);
  });
});
