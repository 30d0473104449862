/**
 * A document's `_id` as MongoDB keeps it: first among the fields of every document written
 * (inserted, upserted, updated by a pipeline), never changed by an update of any kind, and never
 * an array, a regular expression or a document holding a `$`-prefixed field (update_stage.cpp,
 * upsert_stage.cpp, object_replace_executor.cpp, storage_validation.cpp; insert's checks in
 * MongoDB's fixDocumentForInsert).
 */
import { describe, expect, it } from "vitest";
import { openDataActions } from "../helpers/app.ts";

const { action, collection } = openDataActions("ids");
const all = async (ns: Record<string, unknown>) =>
  (await action("find", { ...ns, query: {} })).body as Record<string, unknown>[];
const int = (n: number) => ({ $numberInt: String(n) });

async function refused(name: string, argument: Record<string, unknown>, message: RegExp) {
  const { response, body } = await action(name, argument);
  expect(response.statusCode, JSON.stringify(argument)).toBe(400);
  expect(body).toMatchObject({ error_code: "MongoDBError" });
  expect(body.error, JSON.stringify(argument)).toMatch(message);
}

describe("_id first", () => {
  it("stores an inserted document's _id first, given or generated", async () => {
    const ns = collection();
    await action("insertOne", { ...ns, document: { a: 1, _id: "given", b: 2 } });
    await action("insertMany", { ...ns, documents: [{ c: 1 }] });
    const docs = await all(ns);
    expect(docs.map((doc) => Object.keys(doc))).toEqual([
      ["_id", "a", "b"],
      ["_id", "c"],
    ]);
  });

  it("puts an upserted document's _id first, from the query or the update", async () => {
    const ns = collection();
    await action("updateOne", { ...ns, query: { a: 1, _id: 5 }, update: { $set: { b: 1 } }, upsert: true });
    await action("updateOne", {
      ...ns,
      query: { $and: [{ c: 1 }, { d: 1 }] },
      update: { $setOnInsert: { _id: 6 } },
      upsert: true,
    });
    await action("updateOne", { ...ns, query: { e: 1 }, update: { $set: { _id: 7, f: 2 } }, upsert: true });
    await action("updateOne", { ...ns, query: { g: 1 }, update: [{ $set: { h: 1 } }], upsert: true });
    const docs = await all(ns);
    expect(docs.map((doc) => Object.keys(doc))).toEqual([
      ["_id", "a", "b"],
      ["_id", "c", "d"],
      ["_id", "e", "f"],
      ["_id", "g", "h"],
    ]);
  });

  it("keeps _id first when an update's pipeline drops or moves it", async () => {
    const ns = collection();
    await action("insertMany", {
      ...ns,
      documents: [
        { _id: 1, x: 1, t: { u: { v: 1 } } },
        { _id: 2, y: 1 },
        { _id: 3, z: 1 },
      ],
    });
    const update = async (id: number, pipeline: unknown[]) =>
      (await action("updateOne", { ...ns, query: { _id: id }, update: pipeline })).body;
    expect(await update(1, [{ $replaceWith: "$t" }])).toEqual({ matchedCount: int(1), modifiedCount: int(1) });
    await update(2, [{ $replaceWith: { w: 1, _id: "$_id" } }]);
    await update(3, [{ $unset: "_id" }]);
    const docs = await all(ns);
    expect(docs).toEqual([
      { _id: int(1), u: { v: int(1) } },
      { _id: int(2), w: int(1) },
      { _id: int(3), z: int(1) },
    ]);
    expect(docs.map((doc) => Object.keys(doc)[0])).toEqual(["_id", "_id", "_id"]);
  });
});

describe("_id immutable", () => {
  it("refuses an update's pipeline that changes _id, writing nothing", async () => {
    const ns = collection();
    await action("insertOne", { ...ns, document: { _id: 1, a: 1 } });
    await refused(
      "updateOne",
      { ...ns, query: { _id: 1 }, update: [{ $set: { _id: 2, a: 2 } }] },
      /^After applying the update, the \(immutable\) field '_id' was found to have been altered to _id: 2$/,
    );
    await refused(
      "findOneAndUpdate",
      { ...ns, filter: {}, update: [{ $replaceWith: { _id: "other" } }] },
      /^After applying the update, the \(immutable\) field '_id' was found to have been altered to _id: "other"$/,
    );
    // An upsert's pipeline may not change the _id its query pins either.
    await refused(
      "updateOne",
      { ...ns, query: { _id: 9 }, update: [{ $set: { _id: 10 } }], upsert: true },
      /^After applying the update, the \(immutable\) field '_id' was found to have been altered to _id: 10$/,
    );
    expect(await all(ns)).toEqual([{ _id: int(1), a: int(1) }]);
  });

  it("refuses a replacement whose _id differs in any way, documents and types included", async () => {
    const ns = collection();
    const oid = { $oid: "65a000000000000000000001" };
    await action("insertMany", { ...ns, documents: [{ _id: { a: 1 } }, { _id: oid }] });
    await refused(
      "findOneAndReplace",
      { ...ns, filter: { _id: { a: 1 } }, update: { _id: { a: 2 }, x: 2 } },
      /^After applying the update, the \(immutable\) field '_id' was found to have been altered/,
    );
    await refused(
      "findOneAndReplace",
      { ...ns, filter: { _id: oid }, update: { _id: "65a000000000000000000001", x: 3 } },
      /^After applying the update, the \(immutable\) field '_id' was found to have been altered/,
    );
    expect(await all(ns)).toEqual([{ _id: { a: int(1) } }, { _id: oid }]);
    // The same _id, or none, replaces.
    const same = await action("findOneAndReplace", {
      ...ns,
      filter: { _id: { a: 1 } },
      update: { _id: { a: 1 }, x: 4 },
      returnNewDocument: true,
    });
    expect(same.body).toEqual({ _id: { a: int(1) }, x: int(4) });
  });
});

describe("_id values MongoDB refuses", () => {
  it("refuses an array or a regular expression as an inserted _id, inserting none of it", async () => {
    const ns = collection();
    await refused("insertOne", { ...ns, document: { _id: [1, 2] } }, /^can't use an array for _id$/);
    await refused(
      "insertOne",
      { ...ns, document: { _id: { $regularExpression: { pattern: "a", options: "" } } } },
      /^can't use a regex for _id$/,
    );
    // An ordered insertMany keeps the documents before the refused one, as MongoDB does.
    await refused("insertMany", { ...ns, documents: [{ _id: 1 }, { _id: [2] }, { _id: 3 }] }, /array for _id/);
    expect(await all(ns)).toEqual([{ _id: int(1) }]);
    // Arrays inside a document _id are fine.
    const nested = await action("insertOne", { ...ns, document: { _id: { list: [1, 2] } } });
    expect(nested.response.statusCode).toBe(200);
  });

  it("refuses an _id holding a $-prefixed field at any depth: no id a query could name as itself", async () => {
    const ns = collection();
    await action("insertOne", { ...ns, document: { _id: 1 } });
    const storage = (field: string) =>
      new RegExp(`^_id fields may not contain '\\$'-prefixed fields: \\$${field} is not valid for storage\\.$`);
    await refused("insertOne", { ...ns, document: { _id: { $ne: null }, x: 1 } }, storage("ne"));
    await refused("insertMany", { ...ns, documents: [{ _id: { a: [{ $gt: 5 }] } }] }, storage("gt"));
    await refused(
      "updateOne",
      { ...ns, query: { _id: { k: { $in: [1] } } }, update: { $set: { a: 1 } }, upsert: true },
      /^_id fields may not contain '\$'-prefixed fields/,
    );
    await refused(
      "updateOne",
      { ...ns, query: { none: 1 }, update: { _id: { $where: "1" } }, upsert: true },
      /^_id fields may not contain '\$'-prefixed fields/,
    );
    expect(await all(ns)).toEqual([{ _id: int(1) }]);
    // A field with a $ inside it, not first, is a name like any other.
    const fine = await action("insertOne", { ...ns, document: { _id: { a$: 1 } } });
    expect(fine.response.statusCode).toBe(200);
  });

  it("refuses an upsert or replacement that would write such an _id", async () => {
    const ns = collection();
    await refused(
      "updateOne",
      { ...ns, query: { _id: [1, 2] }, update: { $set: { a: 1 } }, upsert: true },
      /array for _id/,
    );
    await refused(
      "updateOne",
      { ...ns, query: { k: 1 }, update: { $set: { _id: [1, 2] } }, upsert: true },
      /array for _id/,
    );
    await refused(
      "updateOne",
      {
        ...ns,
        query: { k: 1 },
        update: { $set: { _id: { $regularExpression: { pattern: "a", options: "" } } } },
        upsert: true,
      },
      /regex for _id/,
    );
    await refused(
      "findOneAndReplace",
      { ...ns, filter: { k: 1 }, update: { _id: [3] }, upsert: true },
      /array for _id/,
    );
    expect(await all(ns)).toEqual([]);
  });
});
