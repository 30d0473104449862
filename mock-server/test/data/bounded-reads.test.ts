/**
 * Reads bounded in the store (docs/decisions/0018-fair-shares.md), on both stores: an action reads
 * the store's batches one after another and stops when it has what it needs (a limit, findOne, an
 * updateOne), counts what it examines against `queryDocsExaminedLimit` (the documented error past
 * it, and nothing written), and counts exactly in the store when the query allows. The shape of the audit — `find {"query":{},"limit":1}` over a
 * user's huge collection — runs here on a few thousand documents with the limit lowered to match.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { bounded } from "../../src/data/bounded-reads.ts";
import type { Document } from "../../src/data/documents.ts";
import { MongoService, pipelineHead } from "../../src/data/mongo-actions.ts";
import { mainThreadSlice } from "../../src/data/query-limits.ts";
import { queryWorkers } from "../../src/data/query-workers.ts";
import { exactConditions, meetsExactly } from "../../src/store/exact-query.ts";
import { type DocumentStore, StoreTimeoutError } from "../../src/store/store.ts";
import { anonymousLogin, call, mongoAction, newOpenApp, openData, testApp, testStore } from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

const seed = (appId: string, documents: Record<string, unknown>[], collection = "c") =>
  call(app, "insertDocuments", {
    method: "POST",
    url: `/_mock/v1/apps/${appId}/data/d/${collection}`,
    payload: { documents },
  });

async function bigCollection(size: number, limit: number) {
  const appId = await newOpenApp(app, { queryDocsExaminedLimit: limit });
  for (let from = 0; from < size; from += 2_000) {
    const documents = Array.from({ length: Math.min(2_000, size - from) }, (_, i) => ({
      n: from + i,
      owner: "me",
      parity: (from + i) % 2 === 0 ? "even" : "odd",
    }));
    expect((await seed(appId, documents)).response.statusCode).toBe(201);
  }
  const { access_token: token } = await anonymousLogin(app, appId);
  const action = (name: string, argument: Record<string, unknown>) =>
    mongoAction(app, appId, token, name, { database: "d", collection: "c", ...argument });
  return { appId, action };
}

/**
 * The main thread's slice gone for the batches' matches that `gone` picks (counted from 1, one per
 * look at the clock in a match), as on a machine that gives the thread little time; `batches` says
 * how many looked, `restore` puts the slice back.
 */
function sliceGoneFor(gone: (batch: number) => boolean) {
  const slice = mainThreadSlice as { ms: number; steps: number };
  const usual = { ms: slice.ms, steps: slice.steps };
  let batches = 0;
  let missing = false;
  Object.defineProperty(slice, "ms", {
    configurable: true,
    get: () => {
      if (new Error().stack?.includes("matchOnSlice")) missing = gone(++batches);
      return missing ? 0 : usual.ms;
    },
  });
  Object.defineProperty(slice, "steps", { configurable: true, get: () => (missing ? 0 : usual.steps) });
  return {
    batches: () => batches,
    restore: () => {
      Object.defineProperty(slice, "ms", { configurable: true, writable: true, value: usual.ms });
      Object.defineProperty(slice, "steps", { configurable: true, writable: true, value: usual.steps });
    },
  };
}

const tooMany = (limit: number) => ({
  error: `operation exceeded the limit of ${limit} documents examined`,
  error_code: "MongoDBError",
});

/**
 * A new app that may examine 5 documents, `documents` seeded in `collection`: a find's ids there
 * (numbers), or its error's body.
 */
async function findIds(documents: Record<string, unknown>[], collection: string) {
  const appId = await newOpenApp(app, { queryDocsExaminedLimit: 5 });
  expect((await seed(appId, documents, collection)).response.statusCode).toBe(201);
  const { access_token: token } = await anonymousLogin(app, appId);
  return async (query: Record<string, unknown>) => {
    const { body } = await mongoAction(app, appId, token, "find", {
      database: "d",
      collection,
      query,
      project: { _id: 1 },
    });
    return Array.isArray(body) ? body.map((d: { _id: { $numberInt: string } }) => Number(d._id.$numberInt)) : body;
  };
}

describe("reads of a collection larger than the documents an action may examine", () => {
  const size = 6_000;
  const limit = 1_000;
  let action: Awaited<ReturnType<typeof bigCollection>>["action"];
  beforeAll(async () => {
    ({ action } = await bigCollection(size, limit));
  }, 60_000);

  it("answers find with a limit, findOne and a limited aggregation from the first documents", async () => {
    const first = await action("find", { query: {}, limit: 1 });
    expect(first.response.statusCode).toBe(200);
    expect(first.body).toEqual([expect.objectContaining({ n: { $numberInt: "0" } })]);
    // A filter the store cannot evaluate reads on until it has its matches (the 3 here are early).
    const some = await action("find", { query: { n: { $gte: 100, $lt: 103 } }, limit: 3, project: { _id: 0, n: 1 } });
    expect(some.body).toEqual([100, 101, 102].map((n) => ({ n: { $numberInt: String(n) } })));
    expect((await action("findOne", { query: { parity: "odd" } })).body).toMatchObject({ n: { $numberInt: "1" } });
    const head = await action("aggregate", { pipeline: [{ $match: { parity: "even" } }, { $skip: 2 }, { $limit: 2 }] });
    expect(head.body.map((d: { n: unknown }) => d.n)).toEqual([{ $numberInt: "4" }, { $numberInt: "6" }]);
  });

  it("examines documents up to the limit whatever the store's batches, and refuses the next one", async () => {
    // The stores' batches end past the 1,000th document (memory: 768 from the 256th; PostgreSQL: up
    // to the 1,001st): a limited find whose matches are within the first 1,000 is answered.
    const within = await action("find", { query: { n: { $gte: 300, $lt: 303 } }, limit: 3, project: { _id: 0, n: 1 } });
    expect(within.body).toEqual([300, 301, 302].map((n) => ({ n: { $numberInt: String(n) } })));
    const last = await action("find", { query: { n: { $gte: limit - 1, $lt: limit + 5 } }, limit: 1 });
    expect(last.body).toEqual([expect.objectContaining({ n: { $numberInt: String(limit - 1) } })]);
    const past = await action("find", { query: { n: { $gte: limit, $lt: limit + 5 } }, limit: 1 });
    expect(past.response.statusCode).toBe(400);
    expect(past.body).toMatchObject(tooMany(limit));
  });

  it("answers a limited find on a machine too busy for a large batch's match on the main thread", async () => {
    // Every look at the clock finds the main thread's slice used up: a batch whose match takes
    // more than the slice's steps does not fit, as on a machine that gives the thread little time.
    const slice = mainThreadSlice as { ms: number };
    const ms = slice.ms;
    slice.ms = 0;
    try {
      const some = await action("find", { query: { n: { $gte: 100, $lt: 103 } }, limit: 3, project: { _id: 0, n: 1 } });
      expect(some.response.statusCode).toBe(200);
      expect(some.body).toEqual([100, 101, 102].map((n) => ({ n: { $numberInt: String(n) } })));
    } finally {
      slice.ms = ms;
    }
  });

  it("tries the next batch's match again when one batch's slice ran out of time", async () => {
    // One batch's match finds its slice gone at its first look at the clock; the others have the
    // usual slice. The stores' batches differ (memory: 3, 12, 48, 192… documents; PostgreSQL: 256,
    // then the rest up to the limit): the third (documents 15 to 62) or the first (0 to 255) misses,
    // and the matches are in the next one. Read on without matching, the action would examine
    // past its limit.
    const [missed, from] = testStore() === "postgres" ? [1, 300] : [3, 100];
    const slice = sliceGoneFor((batch) => batch === missed);
    try {
      const query = { n: { $gte: from, $lt: from + 3 } };
      const some = await action("find", { query, limit: 3, project: { _id: 0, n: 1 } });
      expect(slice.batches()).toBe(missed + 1);
      expect(some.response.statusCode).toBe(200);
      expect(some.body).toEqual([from, from + 1, from + 2].map((n) => ({ n: { $numberInt: String(n) } })));
    } finally {
      slice.restore();
    }
  });

  it("answers from the documents within the limit when no batch's match fitted the main thread", async () => {
    // A machine too busy for any match on the main thread: the read goes on unmatched up to the
    // documents the action may examine, and whether they hold what the action needs decides
    // between its answer and the error (the matches at 300–302 are within the first 1,000).
    const slice = mainThreadSlice as { ms: number; steps: number };
    const usual = { ms: slice.ms, steps: slice.steps };
    slice.ms = 0;
    slice.steps = 0;
    try {
      const within = await action("find", {
        query: { n: { $gte: 300, $lt: 303 } },
        limit: 3,
        project: { _id: 0, n: 1 },
      });
      expect(within.response.statusCode).toBe(200);
      expect(within.body).toEqual([300, 301, 302].map((n) => ({ n: { $numberInt: String(n) } })));
      const one = await action("findOne", { query: { n: { $gte: 998 } } });
      expect(one.body).toMatchObject({ n: { $numberInt: "998" } });
      const counted = await action("count", { query: { n: { $lt: 900 } }, limit: 5 });
      expect(counted.body).toEqual({ $numberLong: "5" });
      const head = await action("aggregate", { pipeline: [{ $match: { n: { $gte: 500 } } }, { $limit: 2 }] });
      expect(head.body.map((d: { n: unknown }) => d.n)).toEqual([{ $numberInt: "500" }, { $numberInt: "501" }]);
      const updated = await action("updateOne", { query: { n: { $gte: 700 } }, update: { $set: { touched: true } } });
      expect(updated.body).toMatchObject({ matchedCount: { $numberInt: "1" }, modifiedCount: { $numberInt: "1" } });
      // A sorted read's best documents may be past them, whatever they hold: refused.
      for (const [name, argument] of [
        ["find", { query: { n: { $lt: 3 } }, sort: { n: -1 }, limit: 3 }],
        ["aggregate", { pipeline: [{ $match: { n: { $lt: 3 } } }, { $sort: { n: -1 } }, { $limit: 1 }] }],
      ] as const) {
        const sorted = await action(name, argument);
        expect([sorted.response.statusCode, sorted.body]).toMatchObject([400, tooMany(limit)]);
      }
      // Asking for more than those documents hold is still refused, and writes nothing (no upsert).
      const past = await action("find", { query: { n: { $gte: limit - 1, $lt: limit + 5 } }, limit: 2 });
      expect([past.response.statusCode, past.body]).toMatchObject([400, tooMany(limit)]);
      const upsert = await action("updateOne", {
        query: { n: { $gte: limit + 10 } },
        update: { $set: { touched: true } },
        upsert: true,
      });
      expect([upsert.response.statusCode, upsert.body]).toMatchObject([400, tooMany(limit)]);
      const deleted = await action("deleteOne", { query: { n: { $gte: limit + 10 } } });
      expect([deleted.response.statusCode, deleted.body]).toMatchObject([400, tooMany(limit)]);
      slice.ms = usual.ms;
      slice.steps = usual.steps;
      expect((await action("count", { query: {} })).body).toEqual({ $numberLong: String(size) });
      expect((await action("count", { query: { touched: true } })).body).toEqual({ $numberLong: "1" });
    } finally {
      slice.ms = usual.ms;
      slice.steps = usual.steps;
    }
  });

  it("counts in the store when it can, and refuses what would examine too many", async () => {
    expect((await action("count", { query: {} })).body).toEqual({ $numberLong: String(size) });
    expect((await action("count", { query: { parity: "even", owner: "me" } })).body).toEqual({
      $numberLong: String(size / 2),
    });
    expect((await action("count", { query: { parity: "odd" }, limit: 10 })).body).toEqual({ $numberLong: "10" });
    // A count the store cannot evaluate reads and matches: past the limit, the documented error.
    const counted = await action("count", { query: { n: { $gte: 0 } } });
    expect(counted.response.statusCode).toBe(400);
    expect(counted.body).toMatchObject(tooMany(limit));
    expect((await action("count", { query: { n: { $lt: 10 } }, limit: 5 })).body).toEqual({ $numberLong: "5" });
  });

  it("refuses a find, a sort and an aggregation that need more, never answering part of it", async () => {
    for (const [name, argument] of [
      ["find", { query: {} }],
      ["find", { query: { owner: "me" }, sort: { n: -1 }, limit: 1 }],
      ["aggregate", { pipeline: [{ $group: { _id: "$parity", n: { $sum: 1 } } }] }],
      ["aggregate", { pipeline: [{ $sort: { n: -1 } }, { $limit: 1 }] }],
    ] as const) {
      const { response, body } = await action(name, argument);
      expect(response.statusCode, `${name} ${JSON.stringify(argument)}`).toBe(400);
      expect(body).toMatchObject(tooMany(limit));
    }
  });

  it("updates and deletes one document from the first, refuses to write many past the limit and writes nothing", async () => {
    const one = await action("updateOne", { query: { parity: "odd" }, update: { $set: { seen: true } } });
    expect(one.body).toEqual({ matchedCount: { $numberInt: "1" }, modifiedCount: { $numberInt: "1" } });
    expect((await action("findOne", { query: { seen: true }, project: { _id: 0, n: 1 } })).body).toEqual({
      n: { $numberInt: "1" },
    });
    const many = await action("updateMany", { query: {}, update: { $set: { all: true } } });
    expect(many.body).toMatchObject(tooMany(limit));
    const deleted = await action("deleteMany", { query: { owner: "me" } });
    expect(deleted.body).toMatchObject(tooMany(limit));
    expect((await action("count", { query: {} })).body).toEqual({ $numberLong: String(size) });
    expect((await action("count", { query: { all: true } })).body).toEqual({ $numberLong: "0" });
    expect((await action("deleteOne", { query: { parity: "even" } })).body).toEqual({
      deletedCount: { $numberInt: "1" },
    });
    expect((await action("findOne", { query: {} })).body).toMatchObject({ n: { $numberInt: "1" } });
  });

  it("narrows a number's equality in the store: what it examines is what may be equal", async () => {
    // (Past the limit read whole: 6,000 documents.)
    const one = await action("find", { query: { n: 4321 }, project: { _id: 0, n: 1 } });
    expect(one.body).toEqual([{ n: { $numberInt: "4321" } }]);
    const some = await action("find", {
      query: { n: { $in: [7, 4000, 6001] }, owner: "me" },
      project: { _id: 0, n: 1 },
    });
    expect(some.body).toEqual([{ n: { $numberInt: "7" } }, { n: { $numberInt: "4000" } }]);
    expect((await action("count", { query: { n: { $eq: 5999 } } })).body).toEqual({ $numberLong: "1" });
  });

  it("finds every number equal to a number's, of any type, in arrays too, when it narrows", async () => {
    const documents = [
      { _id: 1, k: 5 },
      { _id: 2, k: [1, 5] },
      { _id: 3, k: { $numberDecimal: "5.0" } },
      { _id: 4, k: 6 },
      { _id: 5, k: "5" },
      { _id: 6, k: { $numberDouble: "-0.0" } },
      { _id: 7, k: { $numberDouble: "NaN" } },
      { _id: 8, k: { $numberLong: "1152921504606846976" } },
      { _id: 9, k: 7 },
      { _id: 10, k: 8.5 },
      { _id: 11, k: [[5]] },
      { _id: 12, k: true },
      { _id: 13, k: { $oid: "65a1b2c3d4e5f60718293a4c" } },
      { _id: 14, k: [false, "65a1b2c3d4e5f60718293a4c"] },
    ];
    const ids = await findIds(documents, "mixed");
    // Each would examine all 12 (past the limit of 5) without the store's narrowing.
    expect(await ids({ k: 5 })).toEqual([1, 2, 3]);
    expect(await ids({ k: 0 })).toEqual([6]);
    expect(await ids({ k: { $numberDouble: "-0.0" } })).toEqual([6]);
    expect(await ids({ k: { $numberDouble: "NaN" } })).toEqual([7]);
    expect(await ids({ k: { $numberDouble: "1152921504606846976" } })).toEqual([8]);
    expect(await ids({ k: { $in: [6, 8.5] } })).toEqual([4, 10]);
    expect(await ids({ k: 9 })).toEqual([]);
    // Booleans and ObjectIds narrow it too (a string of an ObjectId's hex is not that ObjectId).
    expect(await ids({ k: true, n: { $exists: false } })).toEqual([12]);
    expect(await ids({ k: { $in: [false, { $oid: "65a1b2c3d4e5f60718293a4c" }] }, n: { $exists: false } })).toEqual([
      13, 14,
    ]);
  });

  it("narrows by a dotted path's equality, an $or whose every clause requires one, $elemMatch and $all", async () => {
    const documents = Array.from({ length: 12 }, (_, i) => ({
      _id: i,
      owner: ["ann", "bob", "cid"][i % 3],
      shared: i === 4 ? ["ann"] : [],
      by: [{ id: `u${i}` }, { id: "all" }],
    }));
    const ids = await findIds(documents, "shared");
    // A rule's usual filter: the user's own documents and those shared with them (5 of 12).
    expect(await ids({ $or: [{ owner: "ann" }, { shared: "ann" }] })).toEqual([0, 3, 4, 6, 9]);
    expect(await ids({ $or: [{ owner: "cid", _id: { $in: [2, 5] } }, { owner: "nobody" }] })).toEqual([2, 5]);
    // Through an array of documents, as MongoDB's paths go.
    expect(await ids({ "by.id": "u7" })).toEqual([7]);
    // The equalities an $elemMatch and an $all imply.
    expect(await ids({ by: { $elemMatch: { id: "u8" } } })).toEqual([8]);
    expect(await ids({ shared: { $all: ["ann"] } })).toEqual([4]);
    expect(await ids({ $or: [{ "by.id": "u1" }, { "by.id": { $in: ["u2", "u3"] }, owner: "cid" }] })).toEqual([1, 2]);
    // A clause that requires no equality could match any document: all 12 would be examined.
    expect(await ids({ $or: [{ owner: "ann" }, { _id: { $gt: 10 } }] })).toEqual({
      error: "operation exceeded the limit of 5 documents examined",
      error_code: "MongoDBError",
      link: expect.any(String),
    });
  });

  it("answers a query of 70,000 equalities (past the parameters a PostgreSQL statement takes)", async () => {
    // What is tested is the answer, not its speed: the default time limit (2 s) was met by the
    // update of 70,000 fields on a machine busy with the rest of the run.
    const appId = await newOpenApp(app, { queryTimeoutMs: 60_000 });
    const wide = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, "a"]));
    // (The first meets the query's first hundred conditions, more than a statement takes.)
    const documents = [
      { _id: 1, ...wide(100) },
      { _id: 2, ...wide(70_000) },
      { _id: 3, k1: "a" },
    ];
    expect((await seed(appId, documents, "wide")).response.statusCode).toBe(201);
    const { access_token: token } = await anonymousLogin(app, appId);
    const act = (name: string, argument: Record<string, unknown>) =>
      mongoAction(app, appId, token, name, { database: "d", collection: "wide", ...argument });
    const query = wide(70_000);
    expect((await act("find", { query, project: { _id: 1 } })).body).toEqual([{ _id: { $numberInt: "2" } }]);
    expect((await act("findOne", { query, project: { _id: 1 } })).body).toEqual({ _id: { $numberInt: "2" } });
    expect((await act("count", { query })).body).toEqual({ $numberLong: "1" });
    expect((await act("updateMany", { query, update: { $set: { seen: true } } })).body).toEqual({
      matchedCount: { $numberInt: "1" },
      modifiedCount: { $numberInt: "1" },
    });
    expect((await act("count", { query: { seen: true } })).body).toEqual({ $numberLong: "1" });
  });

  it("leaves other collections and apps as they were", async () => {
    const { action: small } = await bigCollection(10, limit);
    expect((await small("find", { query: {} })).body).toHaveLength(10);
  });
});

describe("a count of many documents the store cannot count", () => {
  it("matches them batch by batch on the main thread and keeps none: nothing goes to a worker", async () => {
    const { action } = await bigCollection(20_000, 100_000);
    const run = vi.spyOn(queryWorkers, "run");
    try {
      const all = await action("count", { query: { n: { $gte: 0 } } });
      expect(all.body).toEqual({ $numberLong: "20000" });
      const odd = await action("count", { query: { n: { $mod: [2, 1] } } });
      expect(odd.body).toEqual({ $numberLong: "10000" });
      const some = await action("count", { query: { n: { $mod: [2, 1] } }, limit: 12_345 });
      expect(some.body).toEqual({ $numberLong: "10000" });
      const cut = await action("count", { query: { n: { $gte: 5 } }, limit: 15_000 });
      expect(cut.body).toEqual({ $numberLong: "15000" });
      expect(run).not.toHaveBeenCalled();
    } finally {
      run.mockRestore();
    }
  }, 60_000);

  it("counts what it matched with what a worker counted when a batch's match did not fit", async () => {
    const { action } = await bigCollection(3_000, 100_000);
    // Every second batch's match finds its slice gone; those batches are counted by the evaluation.
    const slice = sliceGoneFor((batch) => batch % 2 === 0);
    try {
      expect((await action("count", { query: { parity: { $in: ["odd"] } } })).body).toEqual({ $numberLong: "1500" });
      expect((await action("count", { query: { n: { $lt: 2_000 } }, limit: 1_999 })).body).toEqual({
        $numberLong: "1999",
      });
      expect(slice.batches()).toBeGreaterThan(2);
    } finally {
      slice.restore();
    }
  }, 60_000);
});

describe("reads that keep every match: a sort, an aggregation, updateMany", () => {
  it("match what they read as it comes and keep only the matches: a few of 20,000 need no worker", async () => {
    const { action } = await bigCollection(20_000, 100_000);
    const run = vi.spyOn(queryWorkers, "run");
    try {
      const rare = { n: { $mod: [1_000, 7] } };
      const found = await action("find", { query: rare, sort: { n: -1 }, limit: 3, project: { _id: 0, n: 1 } });
      expect(found.body).toEqual([19_007, 18_007, 17_007].map((n) => ({ n: { $numberInt: String(n) } })));
      const head = await action("aggregate", {
        pipeline: [{ $match: rare }, { $sort: { n: 1 } }, { $limit: 2 }, { $project: { _id: 0, n: 1 } }],
      });
      expect(head.body).toEqual([7, 1_007].map((n) => ({ n: { $numberInt: String(n) } })));
      const updated = await action("updateMany", { query: rare, update: { $set: { seen: true } } });
      expect(updated.body).toEqual({ matchedCount: { $numberInt: "20" }, modifiedCount: { $numberInt: "20" } });
      expect(run).not.toHaveBeenCalled();
      // A query most documents meet: as many answers, whether matched here or not.
      const most = await action("find", {
        query: { n: { $gte: 10 } },
        sort: { n: 1 },
        limit: 2,
        project: { _id: 0, n: 1 },
      });
      expect(most.body).toEqual([10, 11].map((n) => ({ n: { $numberInt: String(n) } })));
      expect((await action("count", { query: { seen: true } })).body).toEqual({ $numberLong: "20" });
    } finally {
      run.mockRestore();
    }
  }, 60_000);

  it("stop matching as they read once a batch keeps most of its documents (matching saves nothing then)", async () => {
    const { action } = await bigCollection(20_000, 100_000);
    const slice = sliceGoneFor(() => false);
    try {
      const first = await action("find", {
        query: { n: { $gte: 10 } },
        sort: { n: -1 },
        limit: 1,
        project: { _id: 0 },
      });
      expect(first.body).toEqual([{ n: { $numberInt: "19999" }, owner: "me", parity: "odd" }]);
      const batchesMatched = slice.batches();
      expect(batchesMatched).toBeGreaterThan(0);
      // A rare match is matched in every batch (20,000 documents are more than a few batches).
      await action("find", { query: { n: { $mod: [1_000, 7] } }, sort: { n: -1 }, limit: 1 });
      expect(slice.batches() - batchesMatched).toBeGreaterThan(batchesMatched);
    } finally {
      slice.restore();
    }
  }, 60_000);
});

describe("a sort's best documents", () => {
  it("are those of a sort of all of them, ties in natural order, for any limit", async () => {
    const appId = await newOpenApp(app, {});
    const documents = Array.from({ length: 300 }, (_, i) => ({ i, k: (i * 37) % 11, s: `v${(i * 13) % 7}` }));
    await seed(appId, documents);
    const { access_token: token } = await anonymousLogin(app, appId);
    const find = async (argument: Record<string, unknown>) =>
      (
        await mongoAction(app, appId, token, "find", { database: "d", collection: "c", query: {}, ...argument })
      ).body.map((d: { i: { $numberInt: string } }) => Number(d.i.$numberInt));
    for (const sort of [{ k: 1 }, { k: -1 }, { s: 1, k: -1 }, { i: -1 }]) {
      const all = await find({ sort });
      expect(all).toHaveLength(300);
      for (const limit of [1, 2, 7, 150, 299, 300, 1000]) {
        expect(await find({ sort, limit }), `${JSON.stringify(sort)} ${limit}`).toEqual(all.slice(0, limit));
      }
    }
  });
});

describe("a database statement past its time", () => {
  it("answers the action's time-limit error, never 500", async () => {
    const timedOut = async function* (): AsyncGenerator<Document[]> {
      yield* [];
      throw new StoreTimeoutError("canceling statement due to statement timeout");
    };
    const data = {
      scan: timedOut,
      countExact: async () => undefined,
      write: async () => {
        throw new StoreTimeoutError("canceling statement due to statement timeout");
      },
    } as unknown as DocumentStore;
    const service = new MongoService({ config: openData, data }, { kind: "system" });
    for (const [name, argument] of [
      ["find", { query: {} }],
      ["count", { query: { n: { $gt: 1 } } }],
      ["insertOne", { document: { n: 1 } }],
    ] as const) {
      await expect(service.run(name, { database: "d", collection: "c", ...argument })).rejects.toMatchObject({
        statusCode: 400,
        errorCode: "MongoDBError",
        message: "operation exceeded time limit",
      });
    }
  });
});

describe("the read helpers", () => {
  async function* batches(...lists: Document[][]) {
    for (const list of lists) yield list;
  }
  const docs = (...ns: number[]) => ns.map((n) => ({ n }));

  const drain = async (batches: AsyncIterable<Document[]>) => {
    let n = 0;
    for await (const batch of batches) n += batch.length;
    return n;
  };

  it("check the deadline and the documents examined between batches", async () => {
    const past = { deadline: performance.now() - 1, maxExamined: 100, examined: 0 };
    await expect(drain(bounded(batches(docs(1)), past))).rejects.toMatchObject({
      message: "operation exceeded time limit",
    });
    const budget = { deadline: performance.now() + 60_000, maxExamined: 5, examined: 0 };
    await expect(drain(bounded(batches(docs(1, 2, 3), docs(4, 5, 6)), budget))).rejects.toMatchObject({
      message: "operation exceeded the limit of 5 documents examined",
    });
    // The budget is the action's: what one read examined counts for the next.
    const shared = { deadline: performance.now() + 60_000, maxExamined: 4, examined: 0 };
    expect(await drain(bounded(batches(docs(1, 2, 3)), shared))).toBe(3);
    await expect(drain(bounded(batches(docs(4, 5)), shared))).rejects.toThrow(/examined/);
  });

  it("tell the first stages of a pipeline that bound what it reads", () => {
    expect(pipelineHead([{ $match: { a: 1 } }, { $sort: { n: 1 } }, { $skip: 5 }, { $limit: 10 }])).toEqual({
      sort: { n: 1 },
      want: 15,
    });
    expect(pipelineHead([{ $limit: 3 }, { $group: { _id: null } }])).toEqual({ sort: {}, want: 3 });
    expect(pipelineHead([{ $sort: { n: 1 } }, { $group: { _id: null } }])).toEqual({ sort: { n: 1 }, want: undefined });
    expect(pipelineHead([{ $match: {} }, { $project: { a: 1 } }, { $limit: 3 }])).toEqual({
      sort: {},
      want: undefined,
    });
    expect(pipelineHead([{ $limit: { $numberInt: "3" } }])).toEqual({ sort: {}, want: undefined });
  });

  it("know the queries a store evaluates exactly", () => {
    expect(exactConditions({})).toEqual([]);
    expect(exactConditions({ a: "x", $and: [{ b: { $in: ["y", true] } }], $or: [{ c: { $eq: "z" } }] })).toHaveLength(
      3,
    );
    for (const query of [
      { a: 1 },
      { "a.b": "x" },
      { a: { $gt: "x" } },
      { $or: [{ a: "x" }, { b: "y" }] },
      { _id: true },
      { a: "\u0001" },
      { a: { $in: [] } },
      { a: /x/ },
    ]) {
      expect(exactConditions(query as Document), JSON.stringify(query)).toBeNull();
    }
    const conditions = exactConditions({ tags: "a", _id: "k" })!;
    expect(meetsExactly({ _id: "k", tags: ["b", "a"] }, conditions)).toBe(true);
    expect(meetsExactly({ _id: "k", tags: [["a"]] }, conditions)).toBe(false);
    expect(meetsExactly({ _id: ["k"], tags: "a" }, conditions)).toBe(false);
  });
});
