/**
 * Multi-document transactions in functions (data/transactions.ts, docs/decisions/0036): the
 * session API of App Services' MongoDB client (`startSession`, `withTransaction`, `commitTransaction`,
 * `abortTransaction`, `endSession`, `{ session }` on each action); a transaction's writes seen by
 * its own reads only, written together at its commit or not at all; a document changed by another
 * write meanwhile fails the commit as MongoDB's WriteConflict (TransientTransactionError), and
 * `withTransaction` runs the callback again. Run on both stores.
 */
import { Long } from "bson";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { changeDocument } from "../../src/data/change-events.ts";
import type { ChangeEvent } from "../../src/data/documents.ts";
import { anonymousLogin, callAppFunction, functionResult, newApp, openData, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
let appId: string;
let token: string;

const head = `const client = context.services.get("mongodb-atlas");
  const accounts = client.db("bank").collection("accounts");
  const trades = client.db("bank").collection("trades");`;

const functions: Record<string, string> = {
  // The reference's example (functions/mongodb/write): points moved between two accounts.
  seed: `exports = async (...docs) => { ${head}
    await accounts.deleteMany({}); await trades.deleteMany({});
    await client.db("bank").collection("audit").deleteMany({});
    if (docs.length > 0) await accounts.insertMany(docs);
  };`,
  state: `exports = async () => { ${head}
    return { accounts: await accounts.find({}, { _id: 0 }).sort({ name: 1 }).toArray(), trades: await trades.count({}) };
  };`,
  trade: `exports = async (from, to, points) => { ${head}
    const session = client.startSession();
    try {
      return await session.withTransaction(async () => {
        await accounts.updateOne({ name: from }, { $inc: { points: -points } }, { session });
        await accounts.updateOne({ name: to }, { $inc: { points } }, { session });
        await trades.insertOne({ from, to, points }, { session });
        const payer = await accounts.findOne({ name: from }, {}, { session });
        if (payer.points < 0) throw new Error(from + " has too few points");
        return "traded";
      });
    } finally {
      await session.endSession();
    }
  };`,
  // What the transaction's own reads see, and what a read outside it sees, before the commit.
  views: `exports = async () => { ${head}
    const session = client.startSession();
    const seen = {};
    await session.withTransaction(async () => {
      await accounts.insertOne({ name: "carol", points: 7 }, { session });
      await accounts.updateOne({ name: "ann" }, { $set: { points: 1 } }, { session });
      await accounts.deleteOne({ name: "bob" }, { session });
      seen.inside = await accounts.find({}, { _id: 0 }, { session }).sort({ name: 1 }).toArray();
      seen.insideCount = await accounts.count({}, { session });
      seen.outside = await accounts.find({}, { _id: 0 }).sort({ name: 1 }).toArray();
      seen.inTransaction = session.inTransaction();
    });
    seen.after = await accounts.find({}, { _id: 0 }).sort({ name: 1 }).toArray();
    seen.inTransactionAfter = session.inTransaction();
    await session.endSession();
    return seen;
  };`,
  aborted: `exports = async () => { ${head}
    const session = client.startSession();
    session.startTransaction();
    await accounts.insertOne({ name: "ghost", points: 1 }, { session });
    await trades.insertOne({ ghost: true }, { session });
    await session.abortTransaction();
    await accounts.insertOne({ name: "plain", points: 2 });
    await session.endSession();
  };`,
  // Two transactions of one session, one after the other.
  twice: `exports = async () => { ${head}
    const session = client.startSession();
    await session.withTransaction(async () => { await trades.insertOne({ twice: 1 }, { session }); });
    await session.withTransaction(async () => { await trades.insertOne({ twice: 2 }, { session }); });
    await session.endSession();
  };`,
  // Another function called in the middle has transactions of its own: this one's stays open.
  nested: `exports = async () => { ${head}
    const session = client.startSession();
    await session.withTransaction(async () => {
      await trades.insertOne({ nested: "before" }, { session });
      await context.functions.execute("state");
      await trades.insertOne({ nested: "after" }, { session });
    });
    return (await trades.find({}, { _id: 0, nested: 1 }).toArray()).map((t) => t.nested);
  };`,
  // Left open when the call ends: dropped.
  leftOpen: `exports = async () => { ${head}
    const session = client.startSession();
    session.startTransaction();
    await accounts.insertOne({ name: "forgotten", points: 1 }, { session });
  };`,
  // The first run changes ann's account outside the transaction after the transaction read it.
  conflict: `exports = async () => { ${head}
    const session = client.startSession();
    let runs = 0;
    const result = await session.withTransaction(async () => {
      runs++;
      const ann = await accounts.findOne({ name: "ann" }, {}, { session });
      if (runs === 1) await accounts.updateOne({ name: "ann" }, { $inc: { points: 100 } });
      await accounts.updateOne({ name: "ann" }, { $set: { points: ann.points + 1 } }, { session });
      return runs;
    });
    await session.endSession();
    return result;
  };`,
  manualConflict: `exports = async () => { ${head}
    const session = client.startSession();
    session.startTransaction();
    await accounts.updateOne({ name: "ann" }, { $inc: { points: 1 } }, { session });
    await trades.insertOne({ manual: true }, { session });
    await accounts.updateOne({ name: "ann" }, { $inc: { points: 100 } });
    try {
      await session.commitTransaction();
      return "committed";
    } catch (error) {
      await session.abortTransaction();
      return { message: error.message, code: error.code, codeName: error.codeName, labels: error.errorLabels,
        transient: error.hasErrorLabel("TransientTransactionError") };
    } finally {
      await session.endSession();
    }
  };`,
  // A failed action ends the transaction on the server: what follows fails NoSuchTransaction.
  failedAction: `exports = async () => { ${head}
    const session = client.startSession();
    session.startTransaction();
    await trades.insertOne({ before: true }, { session });
    const out = {};
    try { await accounts.insertOne({ _id: "ann", name: "dup" }, { session }); } catch (error) { out.duplicate = error.message; }
    try { await trades.insertOne({ after: true }, { session }); } catch (error) { out.next = [error.codeName, error.errorLabels]; }
    try { await session.commitTransaction(); } catch (error) { out.commit = error.codeName; }
    await session.endSession();
    return out;
  };`,
  misuse: `exports = async () => { ${head}
    const out = {};
    const session = client.startSession();
    const attempt = async (name, work) => { try { await work(); out[name] = "ok"; } catch (error) { out[name] = error.message; } };
    await attempt("commitNone", () => session.commitTransaction());
    await attempt("abortNone", () => session.abortTransaction());
    session.startTransaction();
    await attempt("startTwice", () => session.startTransaction());
    await session.commitTransaction();
    await attempt("abortCommitted", () => session.abortTransaction());
    await attempt("foreign", () => accounts.findOne({}, {}, { session: { id: 1 } }));
    await session.endSession();
    out.ended = session.hasEnded;
    await attempt("afterEnd", () => accounts.findOne({}, {}, { session }));
    await attempt("startAfterEnd", () => session.startTransaction());
    return out;
  };`,
  tooLarge: `exports = async () => { ${head}
    const session = client.startSession();
    const blob = "x".repeat(6 * 1024 * 1024);
    try {
      await session.withTransaction(async () => {
        for (let i = 0; i < 3; i++) await trades.insertOne({ i, blob }, { session });
      });
      return "committed";
    } catch (error) {
      return error.codeName + ": " + error.message;
    } finally {
      await session.endSession();
    }
  };`,
  // The database trigger on trades (below): each insert it is told of, kept in audit.
  audit: `exports = async (event) => {
    await context.services.get("mongodb-atlas").db("bank").collection("audit").insertOne({ trade: event.fullDocument });
  };`,
  audited: `exports = async () => {
    const audit = context.services.get("mongodb-atlas").db("bank").collection("audit");
    return (await audit.find({}, { _id: 0, "trade.from": 1, "trade.ghost": 1 }).toArray()).map((a) => a.trade);
  };`,
  increment: `exports = async () => { ${head}
    const session = client.startSession();
    await session.withTransaction(async () => {
      const ann = await accounts.findOne({ name: "ann" }, {}, { session });
      await accounts.updateOne({ name: "ann" }, { $set: { points: ann.points + 1 } }, { session });
    });
    await session.endSession();
  };`,
};

beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
  appId = await newApp(app, {
    ...openData,
    functions: Object.fromEntries(Object.entries(functions).map(([name, source]) => [name, { source }])),
    triggers: [
      {
        type: "DATABASE",
        name: "trades",
        functionName: "audit",
        database: "bank",
        collection: "trades",
        operationTypes: ["INSERT"],
      },
    ],
  });
  token = (await anonymousLogin(app, appId)).access_token;
});
afterAll(() => app.close());

const run = (name: string, ...args: unknown[]) => functionResult(app, appId, token, name, args);

const seed = () => run("seed", { _id: "ann", name: "ann", points: 10 }, { _id: "bob", name: "bob", points: 5 });

describe("a transaction in a function", () => {
  it("moves points between accounts and records the trade, all at once (the reference's example)", async () => {
    await seed();
    expect(await run("trade", "ann", "bob", 4)).toBe("traded");
    expect(await run("state")).toEqual({
      accounts: [
        { name: "ann", points: { $numberInt: "6" } },
        { name: "bob", points: { $numberInt: "9" } },
      ],
      trades: { $numberInt: "1" },
    });
    // The callback throws after its writes: withTransaction aborts, none of them is written.
    const { response, body } = await callAppFunction(app, appId, token, "trade", ["bob", "ann", 50]);
    expect(response.statusCode).toBe(400);
    expect(body.error).toContain("bob has too few points");
    expect((await run("state")).accounts.map((a: { points: unknown }) => a.points)).toEqual([
      { $numberInt: "6" },
      { $numberInt: "9" },
    ]);
    expect((await run("state")).trades).toEqual({ $numberInt: "1" });
  });

  it("shows its writes to its own reads only, until it commits", async () => {
    await seed();
    const seen = await run("views");
    const points = (n: number) => ({ $numberInt: String(n) });
    expect(seen.inside).toEqual([
      { name: "ann", points: points(1) },
      { name: "carol", points: points(7) },
    ]);
    expect(seen.insideCount).toEqual(points(2));
    expect(seen.outside).toEqual([
      { name: "ann", points: points(10) },
      { name: "bob", points: points(5) },
    ]);
    expect(seen.inTransaction).toBe(true);
    expect(seen.after).toEqual(seen.inside);
    expect(seen.inTransactionAfter).toBe(false);
  });

  it("writes nothing when aborted or left open when the call ends, and announces nothing", async () => {
    await seed();
    const runtime = await app.emulator.apps.get(appId);
    const events: ChangeEvent[] = [];
    const stop = await runtime!.data.subscribe((event) => events.push(event));
    try {
      await run("aborted");
      await run("leftOpen");
      const names = (await run("state")).accounts.map((a: { name: string }) => a.name);
      expect(names).toEqual(["ann", "bob", "plain"]);
      expect((await run("state")).trades).toEqual({ $numberInt: "0" });
      // The plain insert's event arrives (on PostgreSQL, through the database); none of the others.
      // (Nor counted: the seed's deletes and inserts, which on PostgreSQL may still be on their way.)
      const seeded = (e: ChangeEvent) =>
        e.operationType === "delete" || ["ann", "bob"].includes((e.fullDocument as { name?: string })?.name ?? "");
      const mine = () => events.filter((e) => e.collection !== "audit" && !seeded(e));
      await expect.poll(() => mine().length).toBeGreaterThan(0);
      expect(mine().map((e) => (e.fullDocument as { name?: string } | undefined)?.name)).toEqual(["plain"]);
    } finally {
      stop();
    }
  });

  it("announces its changes once committed, as the writes they are", async () => {
    await seed();
    const runtime = await app.emulator.apps.get(appId);
    const events: ChangeEvent[] = [];
    const stop = await runtime!.data.subscribe((event) => events.push(event));
    try {
      await run("trade", "ann", "bob", 1);
      // The trade's writes: two updates and an insert. (Not the trigger's own write to audit, nor —
      // on PostgreSQL, where events come through the database — the seed's deletes and inserts,
      // which may still be on their way when the subscription starts.)
      const mine = () =>
        events.filter(
          (e) =>
            (e.collection === "accounts" && e.operationType === "update") ||
            (e.collection === "trades" && e.operationType === "insert"),
        );
      await expect.poll(() => mine().length).toBe(3);
      expect(
        mine()
          .map((e) => `${e.collection} ${e.operationType}`)
          .sort(),
      ).toEqual(["accounts update", "accounts update", "trades insert"]);
      // Each carries its transaction's number and session (MongoDB's first fields of such an event).
      const [first] = mine();
      expect(first!.txnNumber).toBe(1);
      for (const event of mine()) {
        expect(event.txnNumber).toEqual(first!.txnNumber);
        expect(event.lsid).toEqual(first!.lsid);
      }
      expect(first!.lsid!.id.sub_type).toBe(4);
      expect(first!.lsid!.uid.length()).toBe(32);
      expect(changeDocument(first!, 0, 0).txnNumber).toEqual(Long.fromNumber(1));
      expect(Object.keys(changeDocument(first!, 0, 0)).slice(0, 4)).toEqual([
        "txnNumber",
        "lsid",
        "_id",
        "operationType",
      ]);

      // One session's next transaction has the next number; another session another id.
      await run("twice");
      const twice = () => events.filter((e) => e.collection === "trades" && e.fullDocument?.twice !== undefined);
      await expect.poll(() => twice().length).toBe(2);
      const [one, two] = twice();
      expect([one!.txnNumber, two!.txnNumber]).toEqual([1, 2]);
      expect(two!.lsid).toEqual(one!.lsid);
      expect(one!.lsid!.id.toString("hex")).not.toBe(first!.lsid!.id.toString("hex"));
      // (The app's sessions are of one database user.)
      expect(one!.lsid!.uid.toString("hex")).toBe(first!.lsid!.uid.toString("hex"));
      // A write outside a transaction has neither.
      await run("seed", { name: "dora", points: 1 });
      await expect
        .poll(() => events.find((e) => e.collection === "accounts" && e.fullDocument?.name === "dora"))
        .toBeDefined();
      const plain = events.find((e) => e.collection === "accounts" && e.fullDocument?.name === "dora")!;
      expect(plain.txnNumber).toBeUndefined();
      expect(plain.lsid).toBeUndefined();
      expect(Object.keys(changeDocument(plain, 0, 0))[0]).toBe("_id");
    } finally {
      stop();
    }
  });

  it("runs the database triggers of what it committed, and of nothing it dropped", async () => {
    await seed();
    await run("aborted");
    await run("trade", "bob", "ann", 1);
    // The trade's insert reaches the trigger (durably kept on PostgreSQL); the aborted one never does.
    // (Earlier tests' trades, from ann, may reach it meanwhile.)
    const bobs = async () => (await run("audited")).filter((trade: { from?: string }) => trade.from === "bob");
    await expect.poll(bobs).toEqual([{ from: "bob" }]);
    expect((await run("audited")).filter((trade: { ghost?: boolean }) => trade.ghost)).toEqual([]);
  });

  it("fails its commit as a write conflict when another write changed its document, and withTransaction runs it again", async () => {
    await seed();
    // First run: ann read at 10, changed to 110 outside, so the commit conflicts; the second run
    // reads 110 and writes 111.
    expect(await run("conflict")).toEqual({ $numberInt: "2" });
    expect((await run("state")).accounts[0].points).toEqual({ $numberInt: "111" });

    await seed();
    expect(await run("manualConflict")).toEqual({
      message:
        "WriteConflict error: this operation conflicted with another operation. Please retry your operation or multi-document transaction.",
      code: { $numberInt: "112" },
      codeName: "WriteConflict",
      labels: ["TransientTransactionError"],
      transient: true,
    });
    // The outside write stands; nothing of the transaction was written.
    expect(await run("state")).toEqual({
      accounts: [
        { name: "ann", points: { $numberInt: "110" } },
        { name: "bob", points: { $numberInt: "5" } },
      ],
      trades: { $numberInt: "0" },
    });
  });

  it("stays open while the function calls another, which has transactions of its own", async () => {
    await seed();
    expect(await run("nested")).toEqual(["before", "after"]);
  });

  it("ends at a failed action: what follows fails NoSuchTransaction and nothing is written", async () => {
    await seed();
    const out = await run("failedAction");
    expect(out.duplicate).toMatch(/^Duplicate key error collection: bank\.accounts/);
    expect(out.next).toEqual(["NoSuchTransaction", ["TransientTransactionError"]]);
    expect(out.commit).toBe("NoSuchTransaction");
    expect((await run("state")).trades).toEqual({ $numberInt: "0" });
  });

  it("refuses a transaction past 16 MB of writes, writing none of it", async () => {
    await seed();
    expect(await run("tooLarge")).toMatch(
      /^TransactionTooLarge: Total size of all transaction operations must be less than 16793600\. Actual size is \d+$/,
    );
    expect((await run("state")).trades).toEqual({ $numberInt: "0" });
  });

  it("says how a session was misused, as the driver does", async () => {
    expect(await run("misuse")).toEqual({
      commitNone: "No transaction started",
      abortNone: "ok",
      startTwice: "Transaction already in progress",
      abortCommitted: "Cannot call abortTransaction after calling commitTransaction",
      foreign: "the session option must be a session of this call's client.startSession()",
      ended: true,
      afterEnd: "Cannot use a session that has ended",
      startAfterEnd: "Cannot use a session that has ended",
    });
  });

  it("loses no update when calls race on one document", async () => {
    await seed();
    await Promise.all(Array.from({ length: 4 }, () => run("increment")));
    expect((await run("state")).accounts[0].points).toEqual({ $numberInt: "14" });
  });
});

describe("a transaction's commit", () => {
  it("writes all its collections or none when a limit refuses a part", async () => {
    const limited = await newApp(app, {
      ...openData,
      limits: { documents: 2, anonymousDocuments: 2 },
      functions: {
        seed: { source: functions.seed! },
        state: { source: functions.state! },
        trade: { source: functions.trade! },
      },
    });
    const user = (await anonymousLogin(app, limited)).access_token;
    const call = (name: string, ...args: unknown[]) => callAppFunction(app, limited, user, name, args);
    const seeded = await call("seed", { name: "ann", points: 10 }, { name: "bob", points: 5 });
    expect(seeded.response.statusCode, JSON.stringify(seeded.body)).toBe(200);
    // Two updates fit; the trade's insert would be the third document: nothing is written.
    const { body } = await call("trade", "ann", "bob", 1);
    expect(body.error).toMatch(/documents/);
    const state = (await call("state")).body;
    expect(state.accounts.map((a: { points: unknown }) => a.points)).toEqual([
      { $numberInt: "10" },
      { $numberInt: "5" },
    ]);
    expect(state.trades).toEqual({ $numberInt: "0" });
  });
});
