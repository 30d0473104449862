/**
 * Upserts as MongoDB does them (issue 16 point 5): the query's equality fields (`_id` too, `$eq`,
 * a one-element `$in` or `$all`, `$and` of equalities, dotted paths) seed the new document, then
 * the update applies; `$setOnInsert` only on insert; `_id` cannot change; never a 500.
 */
import { describe, expect, it } from "vitest";
import { openDataActions } from "../helpers/app.ts";

/** A fresh collection per case. */
const { action, collection } = openDataActions("upserts");

async function all(ns: Record<string, unknown>) {
  return (await action("find", { ...ns, query: {} })).body;
}

const int = (n: number) => ({ $numberInt: String(n) });

describe("upsert", () => {
  it("updateOne with an _id in the query inserts a document with that _id (string and ObjectId)", async () => {
    const ns = collection();
    const { response, body } = await action("updateOne", {
      ...ns,
      query: { _id: "note-1" },
      update: { $set: { title: "hi" } },
      upsert: true,
    });
    expect(response.statusCode).toBe(200);
    expect(body).toEqual({ matchedCount: int(0), modifiedCount: int(0), upsertedId: "note-1" });
    expect(await all(ns)).toEqual([{ _id: "note-1", title: "hi" }]);
    // The same call again matches and updates.
    const again = await action("updateOne", {
      ...ns,
      query: { _id: "note-1" },
      update: { $set: { title: "ho" } },
      upsert: true,
    });
    expect(again.body).toEqual({ matchedCount: int(1), modifiedCount: int(1) });

    const oid = { $oid: "65a000000000000000000001" };
    const withOid = await action("updateOne", { ...ns, query: { _id: oid }, update: { $inc: { n: 1 } }, upsert: true });
    expect(withOid.body.upsertedId).toEqual(oid);
    expect((await action("findOne", { ...ns, query: { _id: oid } })).body).toEqual({ _id: oid, n: int(1) });
  });

  it("seeds from $eq, a one-element $in or $all, $and of equalities and dotted paths; ignores the rest", async () => {
    const ns = collection();
    await action("updateOne", {
      ...ns,
      query: {
        $and: [{ owner: "ada" }, { "meta.kind": { $eq: "todo" } }],
        status: { $in: ["open"] },
        tag: { $all: ["red"] },
        matching: { $all: [{ $elemMatch: { a: 1 } }] },
        priority: { $gt: 2 },
        $or: [{ a: 1 }, { b: 2 }],
        title: { $regex: "^x" },
      },
      update: { $set: { done: false } },
      upsert: true,
    });
    const [doc] = await all(ns);
    expect(doc).toMatchObject({ owner: "ada", meta: { kind: "todo" }, status: "open", tag: "red", done: false });
    expect(Object.keys(doc).sort()).toEqual(["_id", "done", "meta", "owner", "status", "tag"]);
  });

  it("applies $setOnInsert only when inserting; the update's own values win over the seed", async () => {
    const ns = collection();
    const update = { $set: { k: "set" }, $setOnInsert: { created: true }, $inc: { hits: 1 } };
    await action("updateOne", { ...ns, query: { _id: 7, k: "query" }, update, upsert: true });
    expect(await all(ns)).toEqual([{ _id: int(7), k: "set", created: true, hits: int(1) }]);
    await action("updateOne", {
      ...ns,
      query: { _id: 7 },
      update: { ...update, $setOnInsert: { created: false } },
      upsert: true,
    });
    expect(await all(ns)).toEqual([{ _id: int(7), k: "set", created: true, hits: int(2) }]);
  });

  it("updateMany, findOneAndUpdate, findOneAndReplace and pipeline updates upsert with the query's _id", async () => {
    const ns = collection();
    const many = await action("updateMany", { ...ns, query: { _id: "m" }, update: { $set: { v: 1 } }, upsert: true });
    expect(many.body.upsertedId).toBe("m");
    const fou = await action("findOneAndUpdate", {
      ...ns,
      filter: { _id: "f" },
      update: { $set: { v: 2 } },
      upsert: true,
      returnNewDocument: true,
    });
    expect(fou.body).toEqual({ _id: "f", v: int(2) });
    const before = await action("findOneAndUpdate", {
      ...ns,
      filter: { _id: "g" },
      update: { $set: { v: 3 } },
      upsert: true,
    });
    expect(before.body).toBeNull();
    const replaced = await action("findOneAndReplace", {
      ...ns,
      filter: { _id: "r", ignored: true },
      update: { v: 4 },
      upsert: true,
      returnNewDocument: true,
    });
    expect(replaced.body).toEqual({ _id: "r", v: int(4) });
    const pipeline = await action("updateOne", {
      ...ns,
      query: { _id: "p", kind: "pipe" },
      update: [{ $set: { label: { $concat: ["$kind", "-line"] } } }],
      upsert: true,
    });
    expect(pipeline.body.upsertedId).toBe("p");
    expect((await action("findOne", { ...ns, query: { _id: "p" } })).body).toEqual({
      _id: "p",
      kind: "pipe",
      label: "pipe-line",
    });
  });

  it("refuses to change the query's _id, and conflicting query paths, with MongoDB's errors", async () => {
    const ns = collection();
    const cases: [string, Record<string, unknown>, RegExp][] = [
      [
        "updateOne",
        { query: { _id: 1 }, update: { $set: { _id: 2 } }, upsert: true },
        /^Performing an update on the path '_id' would modify the immutable field '_id'$/,
      ],
      [
        "findOneAndReplace",
        { filter: { _id: 1 }, update: { _id: 2, v: 1 }, upsert: true },
        /^After applying the update, the \(immutable\) field '_id' was found to have been altered/,
      ],
      [
        "updateOne",
        { query: { a: 1, "a.b": 2 }, update: { $set: { c: 1 } }, upsert: true },
        /^cannot infer query fields to set, both paths 'a' and 'a\.b' are matched$/,
      ],
      [
        "updateOne",
        { query: { $and: [{ a: 1 }, { a: 2 }] }, update: { $set: { c: 1 } }, upsert: true },
        /^cannot infer query fields to set, path 'a' is matched twice$/,
      ],
      // (`$all` of two values is two equalities of one path: upsert_fields.js.)
      [
        "updateOne",
        { query: { a: { $all: [1, 2] } }, update: { $set: { c: 1 } }, upsert: true },
        /^cannot infer query fields to set, path 'a' is matched twice$/,
      ],
    ];
    for (const [name, argument, message] of cases) {
      const { response, body } = await action(name, { ...ns, ...argument });
      expect(response.statusCode, JSON.stringify(argument)).toBe(400);
      expect(body).toMatchObject({ error_code: "MongoDBError" });
      expect(body.error).toMatch(message);
    }
    expect(await all(ns)).toEqual([]);
    // An _id the update sets when the query pins none is allowed, as in MongoDB.
    const free = await action("updateOne", {
      ...ns,
      query: { k: 1 },
      update: { $setOnInsert: { _id: "chosen" } },
      upsert: true,
    });
    expect(free.body.upsertedId).toBe("chosen");
  });
});
