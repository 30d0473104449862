/**
 * The MongoDB API functions have beyond the client's actions (App Services' reference lists them):
 * `collection.distinct()` and `collection.bulkWrite()` under the caller's rules,
 * `db.getCollectionNames()`, and `admin().getDBNames()` for system functions only; each of them
 * in a multi-document transaction too (test/functions/transactions.test.ts has the rest).
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, call, functionResult, functionsRunner, newApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
let appId: string;
let token: string;

const items = `const items = context.services.get("mongodb-atlas").db("shop").collection("items");`;
const functions = {
  seed: `exports = async () => { ${items}
    await items.deleteMany({});
    await items.insertMany([
      { _id: 1, tag: "red", sizes: ["S", "M"], owner: "me" },
      { _id: 2, tag: "blue", sizes: ["M"], owner: "me" },
      { _id: 3, tag: "red", sizes: [], owner: "me" },
      { _id: 4, tag: null, owner: "me" },
      { _id: 5, owner: "me", sizes: "L" },
      { _id: 6, tag: "green", owner: "other" },
    ]);
  };`,
  distinct: `exports = async (field, query) => { ${items} return items.distinct(field, query); };`,
  distinctOf: `exports = async (documents, field) => {
    const orders = context.services.get("mongodb-atlas").db("shop").collection("orders");
    await orders.deleteMany({});
    await orders.insertMany(documents);
    return orders.distinct(field);
  };`,
  bulk: `exports = async (operations, options) => { ${items}
    try { return { result: await items.bulkWrite(operations, options) }; }
    catch (error) { return { error: error.message, ids: (await items.find({}, { _id: 1 }).toArray()).map((d) => d._id) }; }
  };`,
  transaction: `exports = async () => { ${items}
    const session = context.services.get("mongodb-atlas").startSession();
    session.startTransaction();
    await items.bulkWrite([{ insertOne: { document: { _id: 20, tag: "gold", owner: "me" } } }, { deleteOne: { filter: { _id: 2 } } }], { session });
    const out = { inside: await items.distinct("tag", {}, { session }), outside: await items.distinct("tag") };
    await session.abortTransaction();
    out.after = await items.distinct("tag");
    return out;
  };`,
  // The driver's bulk operation builders.
  bulkOperations: `exports = async () => { ${items}
    const out = {};
    const ordered = items.initializeOrderedBulkOp();
    ordered.insert({ _id: 40, owner: "me" });
    ordered.find({ _id: 40 }).updateOne({ $set: { tag: "bulk" } });
    ordered.find({ _id: 41 }).upsert().replaceOne({ owner: "me", tag: "upserted" });
    ordered.find({ _id: { $in: [40, 41] } }).update({ $set: { sizes: [] } });
    ordered.find({ _id: 5 }).deleteOne();
    out.length = ordered.length;
    out.result = await ordered.execute();
    try { await ordered.execute(); } catch (error) { out.again = error.message; }
    try { await items.initializeUnorderedBulkOp().execute(); } catch (error) { out.empty = error.message; }
    try { items.initializeOrderedBulkOp().find(); } catch (error) { out.selector = error.message; }
    // Unordered: the insert after the duplicate goes in too, then the duplicate's error.
    const unordered = items.initializeUnorderedBulkOp();
    unordered.insert({ _id: 40, owner: "me" });
    unordered.insert({ _id: 42, owner: "me" });
    try { await unordered.execute(); } catch (error) { out.unordered = error.message; }
    out.items = (await items.find({ _id: { $gte: 5 } }).toArray()).sort((a, b) => a._id - b._id);
    return out;
  };`,
  // db.aggregate(): a pipeline of the database, beginning with $documents.
  database: `exports = async () => {
    const db = context.services.get("mongodb-atlas").db("shop");
    const out = {};
    const attempt = async (name, cursor) => {
      try { out[name] = await cursor.toArray(); } catch (error) { out[name] = error.message; }
    };
    await attempt("documents", db.aggregate([{ $documents: [{ a: 1 }, { a: 2 }] }, { $match: { a: 2 } }, { $project: { a: 1 } }]));
    await attempt("collectionStage", db.aggregate([{ $match: {} }]));
    await attempt("empty", db.aggregate([]));
    await attempt("later", db.aggregate([{ $documents: [] }, { $documents: [] }]));
    await attempt("onCollection", db.collection("items").aggregate([{ $documents: [{ a: 1 }] }]));
    await attempt("merge", db.aggregate([{ $documents: [{ _id: 7, tag: "new" }] }, { $merge: "fromDocuments" }]));
    try { out.merged = await db.collection("fromDocuments").find({}).toArray(); } catch (error) { out.merged = error.message; }
    return out;
  };`,
  // An aggregation computing for a while (~0.1 s here), under its own time limit or the app's (2 s).
  timed: `exports = async (maxTimeMS) => {
    const db = context.services.get("mongodb-atlas").db("shop");
    const n = { $reduce: { input: { $range: [0, 500] }, initialValue: 0, in: { $add: ["$$value", { $size: { $range: [0, 500] } }] } } };
    try { return (await db.aggregate([{ $documents: [{}] }, { $set: { n } }], { maxTimeMS }).toArray())[0].n; }
    catch (error) { return error.message; }
  };`,
  // A system function's $merge in a transaction (MongoDB runs no writing stage in one).
  writeInTransaction: `exports = async () => { ${items}
    const session = context.services.get("mongodb-atlas").startSession();
    session.startTransaction();
    try { await items.aggregate([{ $merge: "copies" }], { session }).toArray(); return "written"; }
    catch (error) { return error.message; }
    finally { await session.abortTransaction(); }
  };`,
  // insertMany unordered: the documents after a duplicate go in too, then the error.
  unordered: `exports = async (ordered) => { ${items}
    let error;
    try { await items.insertMany([{ _id: 30, owner: "me" }, { _id: 1, owner: "me" }, { _id: 31, owner: "me" }], { ordered }); }
    catch (e) { error = e.message; }
    return { error, ids: (await items.find({ _id: { $gte: 30 } }, { _id: 1 }).toArray()).map((d) => d._id) };
  };`,
  // The cursor methods the reference lists: next(), toArray() after next(), skip/limit/sort before.
  cursors: `exports = async () => { ${items}
    const out = {};
    const found = items.find({}, { _id: 1 }).sort({ _id: -1 }).skip(1).limit(3);
    out.first = await found.next();
    out.rest = await found.toArray();
    out.after = await found.next();
    try { found.limit(1); } catch (error) { out.late = error.message; }
    const grouped = items.aggregate([{ $sort: { _id: 1 } }, { $project: { _id: 1 } }]).skip(3);
    out.aggregate = [await grouped.next(), await grouped.toArray()];
    out.aggregateLimit = typeof items.aggregate([]).limit;
    // A limit of 0 is none; a negative one, its absolute value (MongoDB's cursor.limit()).
    const ids = async (cursor) => (await cursor.toArray()).map((d) => d._id);
    out.noLimit = await ids(items.find({}, { _id: 1 }).sort({ _id: 1 }).skip(2).limit(0));
    out.negative = await ids(items.find({}, { _id: 1 }).sort({ _id: 1 }).skip(1).limit(-2));
    return out;
  };`,
  // The stages an app user's pipeline may not hold (a system user's may), and the joins it reads
  // under the rules.
  pipelines: `exports = async () => { ${items}
    const pipelines = {
      lookup: [{ $match: { _id: 1 } }, { $lookup: { from: "items", localField: "tag", foreignField: "tag", as: "same" } }, { $project: { n: { $size: "$same" } } }],
      lookupAll: [{ $match: { _id: 1 } }, { $lookup: { from: "items", pipeline: [], as: "all" } }, { $project: { n: { $size: "$all" } } }],
      graphLookup: [{ $match: { _id: 1 } }, { $graphLookup: { from: "items", startWith: "$tag", connectFromField: "tag", connectToField: "tag", as: "g" } }, { $project: { n: { $size: "$g" } } }],
      unionWith: [{ $match: { _id: 1 } }, { $unionWith: { coll: "items", pipeline: [{ $match: { _id: { $in: [2, 6] } } }] } }, { $project: { _id: 1 } }],
      facet: [{ $facet: { n: [{ $count: "n" }] } }],
      setIsSubset: [{ $match: { _id: 1 } }, { $project: { s: { $setIsSubset: [["S"], "$sizes"] } } }],
      out: [{ $match: { tag: "red" } }, { $project: { tag: 1 } }, { $out: "copies" }],
      merge: [{ $match: { _id: 2 } }, { $project: { tag: 1 } }, { $merge: "copies" }],
    };
    const out = {};
    for (const [name, pipeline] of Object.entries(pipelines)) {
      try { out[name] = await items.aggregate(pipeline).toArray(); } catch (error) { out[name] = error.message; }
    }
    const copies = context.services.get("mongodb-atlas").db("shop").collection("copies");
    try { out.copies = (await copies.find({}).toArray()).sort((a, b) => a._id - b._id); } catch (error) { out.copies = error.message; }
    return out;
  };`,
  names: `exports = async () => {
    const mongodb = context.services.get("mongodb-atlas");
    const out = { collections: await mongodb.db("shop").getCollectionNames() };
    try { out.databases = await mongodb.admin().getDBNames(); } catch (error) { out.databases = error.message; }
    return out;
  };`,
};

beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
  appId = await newApp(app, {
    functions: {
      ...Object.fromEntries(Object.entries(functions).map(([name, source]) => [name, { source }])),
      namesAsSystem: { source: functions.names, runAsSystem: true },
      pipelinesAsSystem: { source: functions.pipelines, runAsSystem: true },
      writeInTransaction: { source: functions.writeInTransaction, runAsSystem: true },
      databaseAsSystem: { source: functions.database, runAsSystem: true },
    },
    rules: {
      "shop.items": { read: { owner: "me" }, write: { owner: "me" }, insert: true, delete: true },
      "shop.orders": { read: true, write: true, insert: true, delete: true },
    },
  });
  token = (await anonymousLogin(app, appId)).access_token;
});
afterAll(() => app.close());

const run = (name: string, ...args: unknown[]) => functionResult(app, appId, token, name, args);

describe("a function's MongoDB API", () => {
  it("gives a field's distinct values, array elements one by one, under the caller's rules", async () => {
    await run("seed");
    // (Document 6 is not the caller's: its "green" is not read.)
    expect(await run("distinct", "tag")).toEqual([null, "blue", "red"]);
    expect(await run("distinct", "sizes")).toEqual(["L", "M", "S"]);
    expect(await run("distinct", "tag", { sizes: "M" })).toEqual(["blue", "red"]);
    expect(await run("distinct", "missing")).toEqual([]);
  });

  it("walks a distinct's dotted path through the arrays on it, and numeric fields as indexes", async () => {
    // jstests/core/query/distinct/distinct_semantics.js: arrays on the path don't make the
    // terminal arrays nested.
    const documents = [
      { _id: 1, a: [{ b: { c: 1 } }, { b: { c: [2, 20] } }, { b: { c: [3] } }] },
      { _id: 2, a: { b: [{ c: [3, 30] }, { c: [4] }] } },
      { _id: 3, a: { b: { c: [1, 10] } } },
    ];
    const int = (n: number) => ({ $numberInt: String(n) });
    expect(await run("distinctOf", documents, "a.b.c")).toEqual([1, 2, 3, 4, 10, 20, 30].map(int));
    const lists = [
      { _id: 1, a: [10, 20], t: [[1, 2], [3]] },
      { _id: 2, a: [{ b: 1 }] },
    ];
    expect(await run("distinctOf", lists, "a.0")).toEqual([int(10), { b: int(1) }]);
    // (A terminal array's elements are the values, arrays among them kept whole.)
    expect(await run("distinctOf", lists, "t")).toEqual([[int(1), int(2)], [int(3)]]);
  });

  it("runs a bulkWrite's operations in order and answers their counts", async () => {
    await run("seed");
    const { result } = await run("bulk", [
      { insertOne: { document: { _id: 10, tag: "new", owner: "me" } } },
      { updateOne: { filter: { _id: 1 }, update: { $set: { tag: "pink" } } } },
      { updateMany: { filter: { tag: "red" }, update: { $set: { seen: true } } } },
      { updateOne: { filter: { _id: 11 }, update: { $set: { owner: "me" } }, upsert: true } },
      { replaceOne: { filter: { _id: 2 }, replacement: { tag: "navy", owner: "me" } } },
      { deleteOne: { filter: { _id: 4 } } },
      { deleteMany: { filter: { tag: "nothing" } } },
    ]);
    expect(result).toEqual({
      insertedCount: { $numberInt: "1" },
      matchedCount: { $numberInt: "3" },
      modifiedCount: { $numberInt: "3" },
      deletedCount: { $numberInt: "1" },
      upsertedCount: { $numberInt: "1" },
      insertedIds: { "0": { $numberInt: "10" } },
      upsertedIds: { "3": { $numberInt: "11" } },
    });
    expect(await run("distinct", "tag")).toEqual(["navy", "new", "pink", "red"]);
  });

  it("builds bulk operations as the driver does and executes them as bulkWrite", async () => {
    await run("seed");
    const n = (value: number) => ({ $numberInt: String(value) });
    expect(await run("bulkOperations")).toEqual({
      length: n(5),
      result: {
        insertedCount: n(1),
        matchedCount: n(3),
        modifiedCount: n(3),
        deletedCount: n(1),
        upsertedCount: n(1),
        insertedIds: { "0": n(40) },
        upsertedIds: { "2": n(41) },
      },
      again: "This batch has already been executed, create new batch to execute",
      empty: "Invalid BulkOperation, Batch cannot be empty",
      selector: "Bulk find operation must specify a selector",
      unordered: "Duplicate key error collection: shop.items index: _id_ dup key: { _id: 40 }",
      items: [
        { _id: n(40), owner: "me", tag: "bulk", sizes: [] },
        { _id: n(41), owner: "me", tag: "upserted", sizes: [] },
        { _id: n(42), owner: "me" },
      ],
    });
  });

  it("answers a replaceOne's upserted id, and counts an identical replacement as matched, not modified", async () => {
    await run("seed");
    const { result } = await run("bulk", [
      { replaceOne: { filter: { _id: 2 }, replacement: { tag: "blue", sizes: ["M"], owner: "me" } } },
      { replaceOne: { filter: { _id: 40 }, replacement: { tag: "teal", owner: "me" }, upsert: true } },
      { replaceOne: { filter: { _id: 41 }, replacement: { tag: "none", owner: "me" } } },
      { replaceOne: { filter: { _id: 3 }, replacement: { tag: "gold", owner: "me" } } },
    ]);
    expect(result).toEqual({
      insertedCount: { $numberInt: "0" },
      matchedCount: { $numberInt: "2" },
      modifiedCount: { $numberInt: "1" },
      deletedCount: { $numberInt: "0" },
      upsertedCount: { $numberInt: "1" },
      insertedIds: {},
      upsertedIds: { "1": { $numberInt: "40" } },
    });
    expect(await run("distinct", "tag")).toEqual([null, "blue", "gold", "red", "teal"]);
    // The client's actions have no replaceOne: it is the functions' own.
    const { body } = await call(app, "callFunction", {
      method: "POST",
      url: `/api/client/v2.0/app/${appId}/functions/call`,
      headers: { authorization: `Bearer ${token}` },
      payload: { name: "replaceOne", service: "mongodb-atlas", arguments: [{ database: "shop", collection: "items" }] },
    });
    expect(body).toMatchObject({ error_code: "FunctionNotFound" });
  });

  it("stops an ordered bulkWrite at its first failure, and goes on past it when unordered", async () => {
    await run("seed");
    const operations = [
      { insertOne: { document: { _id: 20, owner: "me" } } },
      { insertOne: { document: { _id: 1, owner: "me" } } },
      { insertOne: { document: { _id: 21, owner: "me" } } },
    ];
    const ordered = await run("bulk", operations);
    expect(ordered.error).toMatch(/^Duplicate key error/);
    expect(ordered.ids).toContainEqual({ $numberInt: "20" });
    expect(ordered.ids).not.toContainEqual({ $numberInt: "21" });
    await run("seed");
    const unordered = await run("bulk", operations, { ordered: false });
    expect(unordered.error).toMatch(/^Duplicate key error/);
    expect(unordered.ids).toEqual(expect.arrayContaining([{ $numberInt: "20" }, { $numberInt: "21" }]));
    expect((await run("bulk", [{ nothing: {} }])).error).toBe(
      "bulkWrite operation 0 is not one of insertOne, updateOne, updateMany, replaceOne, deleteOne, deleteMany",
    );
  });

  it("names a database's collections, and the databases to system functions only", async () => {
    await run("seed");
    await run("bulk", [{ insertOne: { document: { _id: 30, owner: "me" } } }]);
    await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/shop/orders`,
      payload: { documents: [{ n: 1 }] },
    });
    await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/audit/log`,
      payload: { documents: [{ n: 1 }] },
    });
    expect(await run("names")).toEqual({
      collections: ["items", "orders"],
      databases: "admin.getDBNames() is only available in system functions",
    });
    expect(await run("namesAsSystem")).toEqual({ collections: ["items", "orders"], databases: ["audit", "shop"] });
  });

  it("keeps $graphLookup, $facet, $out and $merge to system functions; joins others under rules", async () => {
    await run("seed");
    // Red items: 1 and 3; six items in all, five of them the caller's; item 1's sizes hold "S".
    expect(await run("pipelines")).toEqual({
      lookup: [{ _id: { $numberInt: "1" }, n: { $numberInt: "2" } }],
      lookupAll: [{ _id: { $numberInt: "1" }, n: { $numberInt: "5" } }],
      graphLookup: "$graphLookup is not allowed in this context",
      unionWith: [{ _id: { $numberInt: "1" } }, { _id: { $numberInt: "2" } }],
      facet: "$facet is not allowed in this context",
      setIsSubset: [{ _id: { $numberInt: "1" }, s: true }],
      out: "$out is not allowed in this context",
      merge: "$merge is not allowed in this context",
      copies: "no rule exists for namespace 'shop.copies'",
    });
    expect(await run("pipelinesAsSystem")).toEqual({
      lookup: [{ _id: { $numberInt: "1" }, n: { $numberInt: "2" } }],
      lookupAll: [{ _id: { $numberInt: "1" }, n: { $numberInt: "6" } }],
      graphLookup: [{ _id: { $numberInt: "1" }, n: { $numberInt: "2" } }],
      unionWith: [{ _id: { $numberInt: "1" } }, { _id: { $numberInt: "2" } }, { _id: { $numberInt: "6" } }],
      facet: [{ n: [{ n: { $numberInt: "6" } }] }],
      setIsSubset: [{ _id: { $numberInt: "1" }, s: true }],
      // The writing stages answer nothing: the red items went out, then item 2 merged in.
      out: [],
      merge: [],
      copies: [
        { _id: { $numberInt: "1" }, tag: "red" },
        { _id: { $numberInt: "2" }, tag: "blue" },
        { _id: { $numberInt: "3" }, tag: "red" },
      ],
    });
  });

  it("aggregates a database: $documents first, no collection read", async () => {
    const refusals = {
      collectionStage: "{aggregate: 1} is not valid for '$match'; a collection is required.",
      empty: "{aggregate: 1} is not valid for an empty pipeline.",
      onCollection: "'$documents' can only be run with {aggregate: 1}",
      later: "$documents is only valid as the first stage in a pipeline",
    };
    expect(await run("database")).toEqual({
      documents: [{ a: { $numberInt: "2" } }],
      ...refusals,
      merge: "$merge is not allowed in this context",
      merged: "no rule exists for namespace 'shop.fromDocuments'",
    });
    expect(await run("databaseAsSystem")).toEqual({
      documents: [{ a: { $numberInt: "2" } }],
      ...refusals,
      merge: [],
      merged: [{ _id: { $numberInt: "7" }, tag: "new" }],
    });
  });

  it("stops an aggregation at its own maxTimeMS, shorter than the app's query time limit", async () => {
    expect(await run("timed")).toEqual({ $numberInt: "250000" });
    expect(await run("timed", 1)).toBe("operation exceeded time limit");
  });

  it("inserts the documents after a duplicate when insertMany is unordered, then fails", async () => {
    await run("seed");
    const ordered = await run("unordered", true);
    expect(ordered.ids).toEqual([{ $numberInt: "30" }]);
    await run("seed");
    const unordered = await run("unordered", false);
    expect(unordered.ids).toEqual([{ $numberInt: "30" }, { $numberInt: "31" }]);
    expect(unordered.error).toBe(ordered.error);
    expect(unordered.error).toMatch(/^Duplicate key error/);
  });

  it("iterates a cursor with next() and toArray(), its options fixed once it has run", async () => {
    await run("seed");
    const id = (n: number) => ({ _id: { $numberInt: String(n) } });
    expect(await run("cursors")).toEqual({
      first: id(4),
      rest: [id(3), id(2)],
      after: null,
      late: "Cursor is already initialized",
      aggregate: [id(4), [id(5)]],
      aggregateLimit: "undefined",
      noLimit: [3, 4, 5].map((n) => ({ $numberInt: String(n) })),
      negative: [2, 3].map((n) => ({ $numberInt: String(n) })),
    });
  });

  it("runs bulkWrite and distinct in a transaction, seen inside it only", async () => {
    await run("seed");
    expect(await run("transaction")).toEqual({
      inside: [null, "gold", "red"],
      outside: [null, "blue", "red"],
      after: [null, "blue", "red"],
    });
    expect(await run("writeInTransaction")).toBe("Stage not supported inside of a multi-document transaction: $merge");
  });
});

describe("an aggregation's own time limit (maxTimeMS)", () => {
  // A pipeline that computes for a while (300,000 additions; ~0.7 s here), without a collection.
  const ones = `{ $reduce: { input: { $range: [0, 1000] }, initialValue: 0, in: { $add: ["$$value", 1] } } }`;
  const heavy = `{ $reduce: { input: { $range: [0, 300] }, initialValue: 0, in: { $add: ["$$value", ${ones}] } } }`;
  const run = functionsRunner(
    {
      timed: `exports = async (maxTimeMS) => {
        const db = context.services.get("mongodb-atlas").db("shop");
        const started = Date.now();
        try {
          const [result] = await db.aggregate([{ $documents: [{}] }, { $set: { n: ${heavy} } }], { maxTimeMS }).toArray();
          return { n: result.n, ms: Date.now() - started };
        } catch (error) { return { error: error.message, ms: Date.now() - started }; }
      };`,
    },
    // The app's own limit is short: an aggregation's maxTimeMS may lengthen it, or shorten it.
    { queryTimeoutMs: 50 },
  );

  it("runs past the app's query time limit when maxTimeMS allows", async () => {
    expect(await run("timed")).toMatchObject({ error: "operation exceeded time limit" });
    expect(await run("timed", 60_000)).toMatchObject({ n: { $numberInt: "300000" } });
    // (0 is no limit of its own: the app's.)
    expect(await run("timed", 0)).toMatchObject({ error: "operation exceeded time limit" });
  });

  it("refuses a maxTimeMS that is not a non-negative number", async () => {
    expect(await run("timed", -1)).toMatchObject({
      error: "BSON field 'aggregate.maxTimeMS' value must be >= 0, actual value '-1'",
    });
    expect(await run("timed", "1s")).toMatchObject({
      error:
        "BSON field 'aggregate.maxTimeMS' is the wrong type 'string', expected types '[long, int, decimal, double]'",
    });
  });
});
