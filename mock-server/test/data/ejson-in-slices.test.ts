/**
 * A large request's Extended JSON arguments read a part at a time (data/ejson-in-slices.ts): the
 * values are fromEJSON's, whatever the shape, and other work runs between the parts.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { fromEJSON, toEJSONText } from "../../src/data/documents.ts";
import { fromEJSONInSlices, maxWrapperValues, partChars } from "../../src/data/ejson-in-slices.ts";
import { typed, wide } from "../helpers/wide-shapes.ts";

const shapes: Record<string, unknown> = {
  "a filter of 200,000 conditions": [
    { database: "d", collection: "c", filter: wide(200_000, () => ({ $exists: false })) },
  ],
  "a wide document of typed values": [{ document: wide(3_000, typed) }],
  "many documents": [{ documents: Array.from({ length: 3_000 }, (_, i) => typed(i)) }],
  "large containers nested, under $-keys and integer-like keys": [
    { $and: [wide(2_000, (i) => i), { $or: [wide(2_000, typed)] }], "0": [[wide(2_000, () => null)]], b: 1 },
  ],
  "a large string inside a wrapper": [{ d: { $binary: { base64: "QUJD".repeat(partChars), subType: "00" } } }],
  "a large DBRef": [{ r: { $ref: "c", $id: 1, more: wide(2_000, (i) => ({ $numberLong: String(i) })) } }],
};

const isLarge = (value: unknown) => JSON.stringify(value).length > partChars;

describe("Extended JSON read a part at a time", () => {
  it.each(Object.entries(shapes))(
    "gives what fromEJSON gives: %s",
    async (_, value) => {
      expect(isLarge(value)).toBe(true);
      const text = JSON.stringify(value);
      const given = JSON.parse(text) as unknown;
      const read = await fromEJSONInSlices(given);
      // (Compared as text, which names every type; `toBe` keeps a failure's report short.)
      expect(toEJSONText(read) === toEJSONText(fromEJSON(JSON.parse(text)))).toBe(true);
      // The value it was given is left as it was.
      expect(JSON.stringify(given) === text).toBe(true);
      // (200,000 conditions take 6–11 s alone here, past 20 s beside the whole suite on a busy machine.)
    },
    60_000,
  );

  it("refuses what fromEJSON refuses, wherever it stands", async () => {
    const pad = wide(3_000, (i) => i);
    for (const bad of [
      { ...pad, x: { $numberInt: "abc" } },
      { ...pad, x: [{ $date: "not a date" }] },
      { ...pad, "a\u0000b": 1 },
      { ...pad, x: { "a\u0000b": 1 } },
      { ...pad, x: { $oid: "nope" } },
    ]) {
      const message = (() => {
        try {
          fromEJSON([bad]);
        } catch (error) {
          return (error as Error).message;
        }
        return "accepted";
      })();
      await expect(fromEJSONInSlices([bad])).rejects.toThrow(message);
    }
  });

  it("refuses a type wrapper holding more values than it reads whole", async () => {
    const bad = [{ x: { $oid: wide(maxWrapperValues, () => ({ $exists: false })) } }];
    await expect(fromEJSONInSlices(bad)).rejects.toThrow(
      `an Extended JSON type wrapper (an object with a $oid field) holds ${2 * maxWrapperValues + 2} values; at most ${maxWrapperValues} are read`,
    );
  });

  it("lets other work run between its parts", async () => {
    const value = shapes["a filter of 200,000 conditions"];
    let turns = 0;
    let reading = true;
    const counting = (async () => {
      while (reading) {
        await nextTurn();
        turns++;
      }
    })();
    await fromEJSONInSlices(value);
    reading = false;
    await counting;
    // (A turn every few milliseconds of its work: reading 200,000 conditions whole takes a second.)
    expect(turns).toBeGreaterThan(20);
  });
});
