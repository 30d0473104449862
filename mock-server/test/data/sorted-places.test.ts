/**
 * `sortedPlaces` (query-engine.ts) puts documents in the order `find` puts them for a sort and a
 * limit — its own stable sort for fields of strings or of numbers, `find` for anything else — and
 * weighs the sort against the main thread's share as `find` does.
 */
import { ObjectId } from "bson";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Document } from "../../src/data/documents.ts";
import { find, sortedPlaces } from "../../src/data/query-engine.ts";
import { defaultQueryLimits, NeedsWorker, withQueryLimits } from "../../src/data/query-limits.ts";

/** The places of `find`'s answer in `docs`. */
function byFind(docs: Document[], sort: Document, limit: number): number[] {
  const place = new Map(docs.map((doc, i) => [doc, i]));
  return find(docs, {}, { sort, limit }).map((doc) => place.get(doc)!);
}

// Few distinct values, so ties are common (their order is the documents' order).
const numbers = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constantFrom(0.5, -2.25, 2 ** 40, 1e-9));
const strings = fc.constantFrom("", "a", "B", "b", "ab", "é", "\u0000", "z");
const anything = fc.oneof(
  numbers,
  strings,
  fc.constantFrom(null, undefined, true, false, -0, Number.NaN, Number.POSITIVE_INFINITY),
  fc.constantFrom(new Date(0), new Date(5), new ObjectId("65a1b2c3d4e5f60718293a51")),
);
const sortSpecs = fc.oneof(
  fc.constantFrom<Document>({ a: 1 }, { a: -1 }, { a: 1, b: -1 }, { b: -1, a: -1 }, { b: 1, a: 1 }),
  fc.constantFrom<Document>({ a: 2 }, { a: -1, b: "x" }),
);

const docsOf = (values: fc.Arbitrary<unknown>) =>
  fc.array(
    fc.record({ a: values, b: values }).map((doc) => {
      const out: Document = {};
      if (doc.a !== undefined) out.a = doc.a;
      if (doc.b !== undefined) out.b = doc.b;
      return out;
    }),
    { maxLength: 40 },
  );

describe("sortedPlaces", () => {
  it("is find's order, for numbers, strings and every other value", () => {
    for (const values of [numbers, strings, anything]) {
      fc.assert(
        fc.property(docsOf(values), sortSpecs, fc.integer({ min: 1, max: 50 }), (docs, sort, limit) => {
          expect(sortedPlaces(docs, sort, limit)).toEqual(byFind(docs, sort, limit));
        }),
        { numRuns: 500 },
      );
    }
  });

  it("leaves a sort too heavy for the main thread's share to a worker, as find does", () => {
    const docs = Array.from({ length: 200_000 }, (_, i) => ({ a: (i * 7919) % 1000 }));
    const onSlice = (fn: () => unknown) =>
      withQueryLimits(defaultQueryLimits, fn, { deadline: performance.now() + 60_000, mainThread: true });
    expect(() => onSlice(() => byFind(docs, { a: 1 }, 10))).toThrow(NeedsWorker);
    expect(() => onSlice(() => sortedPlaces(docs, { a: 1 }, 10))).toThrow(NeedsWorker);
  });
});
