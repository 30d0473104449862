/**
 * The in-memory store's running totals of an app (store/memory/documents.ts `Holdings`): what its
 * collections hold together — documents, bytes, anonymous users' share and each writer's — kept as
 * each collection changes, which the limit checks read instead of walking the collections. After
 * any generated sequence of inserts, replaces (the document then counts for its new writer, or no
 * one), deletes and drops over several collections, the totals are what a walk would sum.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Collection, Holdings } from "../../src/store/memory/documents.ts";
import type { Writer } from "../../src/store/store.ts";

const writers: (Writer | undefined)[] = [
  undefined,
  { userId: "u1", anonymous: false },
  { userId: "u2", anonymous: false },
  { userId: "a1", anonymous: true },
];

type Step =
  | { op: "insert" | "replace"; collection: number; id: number; bytes: number; writer: number }
  | { op: "delete"; collection: number; id: number }
  | { op: "drop"; collection: number };

const collection = fc.integer({ min: 0, max: 2 });
const id = fc.integer({ min: 0, max: 5 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    op: fc.constantFrom("insert" as const, "replace" as const),
    collection,
    id,
    bytes: fc.integer({ min: 1, max: 500 }),
    writer: fc.integer({ min: 0, max: writers.length - 1 }),
  }),
  fc.record({ op: fc.constant("delete" as const), collection, id }),
  fc.record({ op: fc.constant("drop" as const), collection }),
);

/** What a walk over the collections' documents sums: the model the totals must equal. */
function walked(model: Map<number, Map<number, { bytes: number; writer: Writer | undefined }>>) {
  const sum = { documents: 0, bytes: 0, anonymous: { documents: 0, bytes: 0 }, owners: {} as Record<string, number[]> };
  for (const docs of model.values())
    for (const { bytes, writer } of docs.values()) {
      sum.documents++;
      sum.bytes += bytes;
      if (!writer) continue;
      const [documents, ownBytes] = sum.owners[writer.userId] ?? [0, 0];
      sum.owners[writer.userId] = [documents! + 1, ownBytes! + bytes];
      if (writer.anonymous) {
        sum.anonymous.documents++;
        sum.anonymous.bytes += bytes;
      }
    }
  return sum;
}

function totals(held: Holdings) {
  const owners: Record<string, number[]> = {};
  for (const writer of writers) {
    const usage = writer && held.usageOf(writer.userId);
    if (usage) owners[writer!.userId] = [usage.documents, usage.bytes];
  }
  return { documents: held.documents, bytes: held.bytes, anonymous: { ...held.anonymous }, owners };
}

describe("the in-memory app's running totals", () => {
  it("are what a walk over its collections sums, after every generated change", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 60 }), (steps) => {
        const held = new Holdings();
        const collections = new Map<number, Collection>();
        const model = new Map<number, Map<number, { bytes: number; writer: Writer | undefined }>>();
        const open = (n: number) => {
          let c = collections.get(n);
          if (!c) {
            c = new Collection("db", `c${n}`, held);
            collections.set(n, c);
            model.set(n, new Map());
          }
          return c;
        };
        for (const s of steps) {
          if (s.op === "drop") {
            collections.get(s.collection)?.release();
            collections.delete(s.collection);
            model.delete(s.collection);
          } else if (s.op === "delete") {
            open(s.collection).delete(s.id);
            model.get(s.collection)!.delete(s.id);
          } else {
            const c = open(s.collection);
            const writer = writers[s.writer];
            const doc = { _id: s.id, n: s.bytes };
            const docs = model.get(s.collection)!;
            if (s.op === "insert") {
              if (c.insert(doc, s.bytes, writer)) docs.set(s.id, { bytes: s.bytes, writer });
            } else {
              c.replace(doc, s.bytes, writer);
              docs.set(s.id, { bytes: s.bytes, writer });
            }
          }
          expect(totals(held), JSON.stringify(s)).toEqual(walked(model));
        }
      }),
      { seed: 20261129, numRuns: 300 },
    );
  });
});
