/**
 * Reads of the in-memory store narrowed by an index: a query that requires a top-level field to
 * equal a string reads only the documents having that string (or an array holding it), and an
 * `$or` of clauses that each require one the documents of each clause, in insertion order, however
 * the collection was written since — checked against a full scan over a seeded history of
 * inserts, replaces and deletes; so is the first document having a value.
 */
import { Decimal128, ObjectId } from "bson";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Document } from "../../src/data/documents.ts";
import { find } from "../../src/data/query-engine.ts";
import { Collection, indexedEqualities, maxKeysPerArray } from "../../src/store/memory/documents.ts";
import { nestedDocuments, pathQueries } from "../helpers/path-shapes.ts";
import { seeded } from "../helpers/seeded.ts";

describe("indexedEqualities", () => {
  it("finds the string and number conditions every match must meet, at the top level and under $and only", () => {
    const id = new ObjectId("65a1b2c3d4e5f60718293a4c");
    expect(indexedEqualities({ owner_id: "u1", n: 3, b: true, id, d: new Date(0) })).toEqual([
      ["owner_id", ["u1"]],
      ["n", [3]],
      ["b", [true]],
      ["id", ["\u0000$oid:65a1b2c3d4e5f60718293a4c"]],
    ]);
    expect(
      indexedEqualities({ $and: [{ owner_id: { $eq: "u1" } }, { $and: [{ tag: { $in: ["x", 2.5] } }] }] }),
    ).toEqual([
      ["owner_id", ["u1"]],
      ["tag", ["x", 2.5]],
    ]);
    // A dotted path's too (not one with a step of digits: an array's index to MongoDB too).
    // (A top-level field of digits is a field: an object's integer keys come first.)
    expect(indexedEqualities({ "owner.id": "u1", "a.0": "x", "a.$b": "x", "0": "y" })).toEqual([
      ["0", ["y"]],
      ["owner.id", ["u1"]],
    ]);
    // Those an $all or an $elemMatch implies.
    expect(
      indexedEqualities({ tags: { $all: ["a", ["b"], 2] }, members: { $elemMatch: { id: "u1", n: { $gt: 1 } } } }),
    ).toEqual([
      ["tags", ["a"]],
      ["tags", [2]],
      ["members.id", ["u1"]],
    ]);
    // Not required of every match, or not a plain equality: no narrowing.
    expect(indexedEqualities({ $or: [{ owner_id: "u1" }, { owner_id: "u2" }] })).toEqual([]);
    expect(
      indexedEqualities({
        owner_id: { $ne: "u1" },
        t: { $eq: "x", $exists: true },
        u: { $in: ["x", null] },
      }),
    ).toEqual([]);
  });
});

describe("indexed reads of a collection", () => {
  const owners = ["ann", "bob", "cid", "dee"];
  const random = seeded(20261124);
  const pick = <T>(values: T[]) => values[Math.floor(random() * values.length)]!;
  const oid = new ObjectId("65a1b2c3d4e5f60718293a4c");
  /**
   * An owner field as documents have it: a string, an array, a number (of another type too: a
   * Decimal128 of 7.0 equals 7), a boolean, an ObjectId, or none.
   */
  const ownerValue = (): unknown => {
    const r = random();
    if (r < 0.5) return pick(owners);
    if (r < 0.62) return [pick(owners), pick(owners), 7];
    if (r < 0.7) return 42;
    if (r < 0.75) return Decimal128.fromString("7.0");
    if (r < 0.78) return [true, Decimal128.fromString("42")];
    if (r < 0.82) return true;
    if (r < 0.86) return oid;
    return undefined;
  };
  const make = (id: number): Document => {
    const doc: Document = { _id: id, n: Math.floor(random() * 100) };
    const owner = ownerValue();
    if (owner !== undefined) doc.owner_id = owner;
    return doc;
  };

  it("read what a full scan reads, in insertion order, through a seeded history of writes", () => {
    const collection = new Collection("db", "notes");
    let nextId = 0;
    const queries = (owner: unknown): Document[] => [
      { owner_id: owner },
      { owner_id: { $eq: owner } },
      { $and: [{ n: { $gte: 50 } }, { owner_id: owner }] },
      { owner_id: owner, tag: "never" },
      { owner_id: { $in: [owner, "dee"] } },
      // An $or each of whose clauses requires an equality: the clauses' documents together.
      { $or: [{ owner_id: owner }, { n: 5 }] },
      { $or: [{ owner_id: owner }, { $and: [{ n: { $lt: 10 } }, { owner_id: "dee" }] }], n: { $gte: 3 } },
      { $or: [{ owner_id: owner }, { owner_id: owner, n: 7 }] },
      // …one whose clause requires none reads what the rest of the query narrows to.
      { $or: [{ owner_id: owner }, { n: { $gt: 90 } }] },
    ];
    for (let step = 0; step < 60; step++) {
      for (let i = 0; i < 20; i++) {
        const ids = collection.values().map((d) => d._id as number);
        const r = random();
        if (r < 0.5 || ids.length === 0) collection.insert(make(nextId++));
        else if (r < 0.8) collection.replace(make(pick(ids)));
        else collection.delete(pick(ids));
      }
      const all = collection.values();
      for (const owner of [...owners, "nobody", 7, 42, 0, true, false, oid]) {
        // The first document having the value itself (not in an array): on odd steps before a
        // read puts the index in order again, on even ones after.
        const first = () =>
          typeof owner === "string" &&
          expect(collection.firstWith("owner_id", owner)).toEqual(all.find((d) => d.owner_id === owner));
        if (step % 2 === 1) first();
        for (const query of queries(owner)) {
          const narrowed = collection.candidates(query);
          // The same matches as a full scan, in the same order.
          expect(find(narrowed, query, {})).toEqual(find(all, query, {}));
          // Candidates are documents of the collection in insertion order.
          const order = all.map((d) => d._id);
          const positions = narrowed.map((d) => order.indexOf(d._id));
          expect(positions.every((p, i) => p >= 0 && (i === 0 || p > positions[i - 1]!))).toBe(true);
        }
        if (step % 2 === 0) first();
      }
    }
    // Narrowed indeed: one owner's candidates are far fewer than the collection.
    expect(collection.candidates({ owner_id: "ann" }).length).toBeLessThan(collection.size);
    expect(collection.candidates({ owner_id: 7 }).length).toBeLessThan(collection.size);
    expect(collection.candidates({ owner_id: oid }).length).toBeLessThan(collection.size);
    const either = collection.candidates({ $or: [{ owner_id: "ann" }, { owner_id: true }] });
    expect(either.length).toBeLessThan(collection.size);
    expect(either.length).toBeGreaterThan(collection.candidates({ owner_id: "ann" }).length);
    expect(collection.candidates({ $or: [{ owner_id: "ann" }, { n: { $gt: 90 } }] })).toHaveLength(collection.size);
    expect(collection.candidates({ $or: [{ owner_id: "nobody" }, { owner_id: "none" }] })).toEqual([]);
  });

  it("keep a document whose array holds more values than an index keeps a document under, for every read", () => {
    const collection = new Collection("db", "long");
    const values = Array.from({ length: maxKeysPerArray + 1 }, (_, i) => i);
    collection.insert({ _id: "long", tags: values });
    collection.insert({ _id: "short", tags: [1, 2] });
    collection.insert({ _id: "other", tags: "x" });
    expect(collection.candidates({ tags: 1 }).map((d) => d._id)).toEqual(["long", "short"]);
    expect(collection.candidates({ tags: maxKeysPerArray }).map((d) => d._id)).toEqual(["long"]);
    expect(collection.candidates({ tags: "x" }).map((d) => d._id)).toEqual(["long", "other"]);
    // Replaced by a short array: kept under its values again.
    collection.replace({ _id: "long", tags: [7] });
    expect(collection.candidates({ tags: 1 }).map((d) => d._id)).toEqual(["short"]);
    expect(collection.candidates({ tags: 7 }).map((d) => d._id)).toEqual(["long"]);
  });

  it("keep a document whose path reaches more values than an index walks, for every read of the path", () => {
    const collection = new Collection("db", "long-path");
    // (Five thousand documents without the path's next step, then one with it.)
    const elements = [...Array.from({ length: 5_000 }, (_, i) => ({ c: i })), { b: 8 }];
    collection.insert({ _id: "wide", a: elements });
    collection.insert({ _id: "narrow", a: [{ b: 7 }, { b: "x" }] });
    expect(collection.candidates({ "a.b": 7 }).map((d) => d._id)).toEqual(["wide", "narrow"]);
    expect(collection.candidates({ "a.b": 8 }).map((d) => d._id)).toEqual(["wide"]);
    // Not walked to its end: kept under the key every read of the path takes.
    expect(collection.candidates({ "a.b": "absent" }).map((d) => d._id)).toEqual(["wide"]);
    collection.replace({ _id: "wide", a: [{ b: 1 }] });
    expect(collection.candidates({ "a.b": "absent" })).toEqual([]);
  });

  it("read the documents of several values in insertion order, few of many or most of them", () => {
    const collection = new Collection("db", "many");
    for (let i = 0; i < 64; i++) collection.insert({ _id: i, k: i });
    collection.replace({ _id: 10, k: 63 });
    collection.insert({ _id: "dec", k: Decimal128.fromString("5.0") });
    // Few: their places sorted (5, then 10 holding 63 since its replace, then 63, then the Decimal128).
    expect(collection.candidates({ k: { $in: [63, 5] } }).map((d) => d._id)).toEqual([5, 10, 63, "dec"]);
    // Most: picked from the collection in its order.
    const most = Array.from({ length: 40 }, (_, i) => 63 - i);
    const read = collection.candidates({ k: { $in: most } }).map((d) => d._id);
    expect(read).toEqual(
      collection
        .values()
        .filter((d) => most.includes(d.k as number) || d._id === "dec")
        .map((d) => d._id),
    );
  });

  it("hand the engine every document it matches, whatever the paths and arrays (test/helpers/path-shapes.ts)", () => {
    fc.assert(
      fc.property(nestedDocuments, pathQueries, fc.nat({ max: 8 }), (docs, queries, filled) => {
        const collection = new Collection("db", "paths");
        for (const [i, doc] of docs.entries()) collection.insert({ ...doc, _id: i });
        // Most of the indexes a collection keeps taken by other fields: the queries' fields past them scan.
        for (let i = 0; i < filled; i++) collection.candidates({ [`other${i}`]: "x" });
        // Indexes built before some writes and kept by them, and built after others.
        for (const q of queries) collection.candidates(q);
        collection.replace({ ...docs[0], _id: 0, a: { b: "x" } });
        collection.delete(docs.length - 1);
        const all = collection.values();
        for (const q of queries)
          expect(find(collection.candidates(q), q, {}), JSON.stringify(q)).toEqual(find(all, q, {}));
      }),
      { seed: 20261129, numRuns: 300 },
    );
    const collection = new Collection("db", "nested");
    for (let i = 0; i < 40; i++)
      collection.insert({ _id: i, owner: { id: owners[i % 4] }, steps: [{ by: owners[i % 2] }] });
    expect(collection.candidates({ "owner.id": "ann" })).toHaveLength(10);
    expect(collection.candidates({ "steps.by": "bob" })).toHaveLength(20);
  });

  it("scan for an $or one of whose clauses is on a field past the indexed few", () => {
    const collection = new Collection("db", "or-past");
    for (let i = 0; i < 20; i++)
      collection.insert({ _id: i, f: i % 2 ? "ann" : "bob", ...(i === 0 ? { h: "x" } : {}) });
    collection.candidates({ f: "ann" });
    for (let g = 0; g < 7; g++) collection.candidates({ [`g${g}`]: "x" });
    const query = { $or: [{ f: "ann" }, { h: "x" }] };
    expect(collection.candidates(query)).toHaveLength(20);
    expect(find(collection.candidates(query), query, {}).map((d) => d._id)).toEqual([
      0, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19,
    ]);
  });

  it("scan for fields past the indexed few, and for queries without a string equality", () => {
    const collection = new Collection("db", "wide");
    for (let i = 0; i < 20; i++)
      collection.insert({ _id: i, ...Object.fromEntries(owners.map((o, j) => [`f${j}`, o])) });
    for (let f = 0; f < 8; f++) collection.candidates({ [`g${f}`]: "x" });
    expect(collection.candidates({ f0: "ann" })).toHaveLength(20);
    expect(collection.candidates({ f0: "nobody" })).toHaveLength(20);
    expect(collection.candidates({ n: { $gt: 1 } })).toHaveLength(20);
  });
});
