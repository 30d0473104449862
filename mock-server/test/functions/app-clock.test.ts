/**
 * The app's clock (the control API moves it) is the time of everything the app runs: its
 * functions' `Date` (and the ObjectIds they make) and its database's — `$currentDate`, `$$NOW`, the
 * `_id`s it adds, the `$$NOW` of a change stream's filter — so that a function run by a trigger
 * after the clock was moved a month on sees that month gone, as the tokens and schedules do, and
 * finds what fell due meanwhile.
 */
import { EJSON } from "bson";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { mainThreadSlice } from "../../src/data/query-limits.ts";
import { queryWorkers } from "../../src/data/query-workers.ts";
import { anonymousLogin, call, functionResult, mongoAction, newApp, openData, testApp } from "../helpers/app.ts";
import { listening } from "../helpers/listen.ts";
import { openWatch } from "../helpers/watch.ts";

const day = 24 * 3600;

const clockReport = `exports = () => {
  class Later extends Date {}
  return {
    now: Date.now(),
    made: new Date(),
    text: Date(),
    id: new BSON.ObjectId().getTimestamp(),
    later: new Later(),
    fixed: [new Date(0), new Date(2020, 0, 1, 12).getFullYear(), Date.UTC(2020, 0, 1), Date.parse("2020-01-01T00:00:00Z")],
    same: [
      new Date().constructor === Date,
      new Date() instanceof Date,
      new Later() instanceof Later && new Later() instanceof Date,
      typeof Date,
      Date.name,
      Date.length,
      Object.prototype.toString.call(new Date()),
      Object.isFrozen(Date),
    ],
  };
};`;

let app: FastifyInstance;
let appId: string;

beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
  appId = await newApp(app, {
    ...openData,
    functions: {
      clock: { source: clockReport },
      facetNow: {
        source: `exports = (name) => context.services.get("mongodb-atlas").db("d").collection(name)
          .aggregate([{ $match: { name: "soon" } }, { $facet: { facet: [{ $project: { _id: 0, now: "$$NOW" } }] } }])
          .toArray();`,
        runAsSystem: true,
      },
      jwt: {
        source: `exports = (claims) => {
          try {
            utils.jwt.decode(utils.jwt.encode("HS256", claims, "a-secret"), "a-secret");
            return "valid";
          } catch (error) {
            return error.message;
          }
        };`,
      },
      keepDue: {
        source: `exports = (event) => context.services.get("mongodb-atlas").db("audit").collection("due").insertOne({ task: event.fullDocument._id, at: event.at });`,
        private: true,
      },
      stamp: {
        source: `exports = () => context.services.get("mongodb-atlas").db("audit").collection("runs").insertOne({ at: new Date() });`,
        private: true,
      },
    },
    triggers: [
      { type: "SCHEDULED", name: "stamp", functionName: "stamp", schedule: "0 * * * *" },
      {
        type: "DATABASE",
        name: "due",
        functionName: "keepDue",
        database: "d",
        collection: "tasks",
        operationTypes: ["INSERT"],
        match: { $or: [{ "fullDocument.marker": true }, { $expr: { $lte: ["$fullDocument.due", "$$NOW"] } }] },
        project: { operationType: 1, fullDocument: 1, at: "$$NOW" },
      },
    ],
  });
});
afterAll(() => app.close());

const runtime = async () => (await app.emulator.apps.get(appId))!;

async function advance(seconds: number): Promise<void> {
  const moved = await call(app, "advanceClock", {
    method: "POST",
    url: `/_mock/v1/apps/${appId}/clock`,
    payload: { advanceBy: seconds },
  });
  expect(moved.response.statusCode).toBe(200);
  await (await runtime()).schedulesSettled();
}

/** The clock function's report, and the app's time just before and just after the call. */
async function report() {
  const { clock } = await runtime();
  // (A new user each time: a moved clock may have ended the last one's token.)
  const { access_token } = await anonymousLogin(app, appId);
  const before = clock.now();
  const body = await functionResult(app, appId, access_token, "clock", []);
  const after = clock.now();
  return { got: EJSON.deserialize(body, { relaxed: true }) as Record<string, any>, before, after };
}

function expectAppTime({ got, before, after }: Awaited<ReturnType<typeof report>>) {
  const second = (ms: number) => Math.floor(ms / 1000) * 1000;
  for (const [name, ms] of [
    ["Date.now()", got.now as number],
    ["new Date()", (got.made as Date).getTime()],
    ["a subclass's new Later()", (got.later as Date).getTime()],
  ] as const) {
    expect(ms, name).toBeGreaterThanOrEqual(before);
    expect(ms, name).toBeLessThanOrEqual(after);
  }
  for (const [name, ms] of [
    ["Date()", Date.parse(got.text as string)],
    ["new ObjectId()", (got.id as Date).getTime()],
  ] as const) {
    expect(ms, name).toBeGreaterThanOrEqual(second(before));
    expect(ms, name).toBeLessThanOrEqual(after);
  }
  expect(got.fixed).toEqual([new Date(0), 2020, Date.UTC(2020, 0, 1), Date.parse("2020-01-01T00:00:00Z")]);
  expect(got.same).toEqual([true, true, true, "function", "Date", 7, "[object Date]", true]);
}

describe("the app's clock in its functions", () => {
  it("is what Date and new ObjectIds say, moved or put back", async () => {
    expectAppTime(await report());
    await advance(30 * day);
    const moved = await report();
    expect(moved.before - Date.now()).toBeGreaterThan(29 * day * 1000);
    expectAppTime(moved);
    const reset = await call(app, "resetClock", { method: "DELETE", url: `/_mock/v1/apps/${appId}/clock` });
    expect(reset.response.statusCode).toBe(200);
    const back = await report();
    expect(Math.abs(back.before - Date.now())).toBeLessThan(60_000);
    expectAppTime(back);
  });

  it("moves by whole milliseconds: Date.now() stays an integer after a move of a fraction of one", async () => {
    await call(app, "resetClock", { method: "DELETE", url: `/_mock/v1/apps/${appId}/clock` });
    const moved = await call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 1.0006 },
    });
    expect(moved.body.offsetMs).toBe(1001);
    expect(Number.isInteger((await report()).got.now)).toBe(true);
    await call(app, "resetClock", { method: "DELETE", url: `/_mock/v1/apps/${appId}/clock` });
  });

  it("is the time utils.jwt.decode checks a token's exp and nbf at", async () => {
    await call(app, "resetClock", { method: "DELETE", url: `/_mock/v1/apps/${appId}/clock` });
    const inAnHour = Math.floor(Date.now() / 1000) + 3600;
    const check = async (claims: Record<string, number>) =>
      functionResult(app, appId, (await anonymousLogin(app, appId)).access_token, "jwt", [claims]);
    expect(await check({ exp: inAnHour })).toBe("valid");
    expect(await check({ nbf: inAnHour })).toBe("token is not valid yet");
    await advance(2 * 3600);
    expect(await check({ exp: inAnHour })).toBe("token is expired");
    expect(await check({ nbf: inAnHour })).toBe("valid");
  });

  it("is the time a scheduled trigger's function runs at", async () => {
    const { clock } = await runtime();
    await (await runtime()).schedulesSettled();
    const runs = async () =>
      (
        await call(app, "listDocuments", { method: "GET", url: `/_mock/v1/apps/${appId}/data/audit/runs` })
      ).body.documents.map((doc: unknown) => (EJSON.deserialize(doc as object) as { at: Date }).at.getTime());
    const already = (await runs()).length;
    // To five past the next hour of the app's clock, a week on: that hour's run stamps its time.
    const hour = 3_600_000;
    const target = Math.ceil((clock.now() + 7 * day * 1000) / hour) * hour + 5 * 60_000;
    const before = clock.now();
    await advance(Math.ceil((target - before) / 1000));
    const stamped = (await runs()).slice(already);
    expect(stamped).toHaveLength(1);
    expect(stamped[0]).toBeGreaterThanOrEqual(target - 5 * 60_000);
    expect(stamped[0]).toBeLessThanOrEqual(clock.now());
  });
});

describe("the app's clock's range", () => {
  it("ends at the last second an ObjectId or a timestamp holds: a move or an import past it is refused", async () => {
    await call(app, "resetClock", { method: "DELETE", url: `/_mock/v1/apps/${appId}/clock` });
    const tenYears = 315_360_000;
    const moves: number[] = [];
    for (;;) {
      const { response, body } = await call(app, "advanceClock", {
        method: "POST",
        url: `/_mock/v1/apps/${appId}/clock`,
        payload: { advanceBy: tenYears },
      });
      if (response.statusCode !== 200) {
        expect(response.statusCode).toBe(400);
        expect(body).toEqual({
          code: "ValidationError",
          error: expect.stringContaining("the app's clock cannot pass 2106-02-07T06:28:15.000Z"),
        });
        break;
      }
      moves.push(body.nowMs);
      expect(moves.length).toBeLessThan(10);
    }
    // Refused whole: the clock stands where the last move left it, and the database still works.
    const { clock } = await runtime();
    expect(clock.now() - moves.at(-1)!).toBeLessThan(60_000);
    const { access_token } = await anonymousLogin(app, appId);
    const argument = { database: "d", collection: "range", document: { n: 1 } };
    const added = await mongoAction(app, appId, access_token, "insertOne", argument);
    expect(added.response.statusCode).toBe(200);
    const id = EJSON.deserialize(added.body).insertedId as { getTimestamp(): Date };
    expect(id.getTimestamp().getTime()).toBeGreaterThan(Date.now() + 60 * 365 * day * 1000);
    // A state whose app's clock is past it is not imported, and nothing changes.
    const exported = (await call(app, "exportState", { method: "GET", url: "/_mock/v1/state" })).body;
    for (const one of exported.apps) if (one.appId === appId) one.clockOffsetMs = 200 * 365 * day * 1000;
    const imported = await call(app, "importState", { method: "PUT", url: "/_mock/v1/state", payload: exported });
    expect(imported.response.statusCode).toBe(400);
    expect(imported.body.error).toContain(`app ${appId}: the app's clock cannot pass 2106-02-07T06:28:15.000Z`);
    expect(clock.now() - moves.at(-1)!).toBeLessThan(60_000);
    await call(app, "resetClock", { method: "DELETE", url: `/_mock/v1/apps/${appId}/clock` });
  });
});

describe("the app's clock in its database", () => {
  let namespace = { database: "d", collection: "due" };
  /** An action as a new user (a moved clock may have ended the last one's token), its reply read. */
  async function action(name: string, argument: Record<string, unknown>) {
    const { access_token } = await anonymousLogin(app, appId);
    const { response, body } = await mongoAction(
      app,
      appId,
      access_token,
      name,
      EJSON.serialize({ ...namespace, ...argument }, { relaxed: false }),
    );
    expect(response.statusCode, JSON.stringify(body)).toBe(200);
    return EJSON.deserialize(body, { relaxed: true }) as any;
  }

  it.each([
    ["on the main thread", false],
    ["in a query worker", true],
  ])("is the time of $currentDate, $$NOW and the _ids it adds, moved or put back: %s", async (where, inWorker) => {
    namespace = { database: "d", collection: `due ${where}` };
    // Every slice already over: an evaluation of more than a few steps (a budget looks at its
    // clock every 16) moves to a worker, as each of these does over the collection's filler.
    const slice = mainThreadSlice as { ms: number; steps: number };
    const usual = { ...slice };
    if (inWorker) Object.assign(slice, { ms: -1, steps: 1 });
    const jobs = vi.spyOn(queryWorkers, "run");
    onTestFinished(() => {
      Object.assign(slice, usual);
      jobs.mockRestore();
    });
    const { clock } = await runtime();
    await call(app, "resetClock", { method: "DELETE", url: `/_mock/v1/apps/${appId}/clock` });
    const real = Date.now();
    const filler = Array.from({ length: 40 }, (_, i) => ({ _id: `filler ${i}`, filler: i }));
    const written = await action("insertMany", {
      documents: [
        { _id: "soon", name: "soon", due: new Date(real + 10 * day * 1000) },
        { _id: "later", name: "later", due: new Date(real + 60 * day * 1000) },
        ...filler,
      ],
    });
    expect(written.insertedIds.slice(0, 2)).toEqual(["soon", "later"]);
    const dueNow = async () =>
      (await action("find", { query: { due: { $exists: true }, $expr: { $lte: ["$due", "$$NOW"] } } })).map(
        (doc: { _id: string }) => doc._id,
      );
    expect(await dueNow()).toEqual([]);
    await advance(30 * day);
    const before = clock.now();
    const offloaded = jobs.mock.calls.length;
    expect(await dueNow()).toEqual(["soon"]);
    // (Every document updated, and a query the store cannot decide alone: the engine's work, in a
    // worker for the second case.)
    await action("updateMany", { query: {}, update: { $currentDate: { done: true, at: { $type: "timestamp" } } } });
    await action("updateOne", { query: { name: "later" }, update: [{ $set: { seen: "$$NOW" } }] });
    const [{ now, cluster }] = await action("aggregate", {
      pipeline: [{ $match: { name: "soon" } }, { $project: { _id: 0, now: "$$NOW", cluster: "$$CLUSTER_TIME" } }],
    });
    // ($facet is a system function's: a client's aggregation may not use it.)
    const { access_token } = await anonymousLogin(app, appId);
    const faceted = EJSON.deserialize(
      await functionResult(app, appId, access_token, "facetNow", [namespace.collection]),
    ) as { facet: { now: Date }[] }[];
    const facet = faceted[0]!.facet;
    const added = (await action("insertOne", { document: { note: "new" } })).insertedId;
    const upserted = (
      await action("updateOne", {
        query: { $expr: { $eq: ["$note", "none"] } },
        update: { $set: { n: 1 } },
        upsert: true,
      })
    ).upsertedId;
    const after = clock.now();
    // (In a worker: the find, both updates, both aggregations and the upsert.)
    if (inWorker) expect(jobs.mock.calls.length - offloaded).toBeGreaterThanOrEqual(6);
    const [soon, later] = await action("find", { query: { _id: { $in: ["soon", "later"] } }, sort: { _id: -1 } });
    const second = (ms: number) => Math.floor(ms / 1000) * 1000;
    for (const [name, ms, from] of [
      ["$currentDate", (soon.done as Date).getTime(), before],
      ["$currentDate's timestamp", soon.at.getHighBits() * 1000, second(before)],
      ["$$NOW of an update's pipeline", (later.seen as Date).getTime(), before],
      ["$$NOW of an aggregation", (now as Date).getTime(), before],
      ["$$NOW in a $facet", facet[0]!.now.getTime(), before],
      ["$$CLUSTER_TIME of an aggregation", cluster.getHighBits() * 1000, second(before)],
      ["an inserted document's new _id", added.getTimestamp().getTime(), second(before)],
      ["an upserted document's new _id", upserted.getTimestamp().getTime(), second(before)],
    ] as const) {
      expect(ms, name).toBeGreaterThanOrEqual(from);
      expect(ms, name).toBeLessThanOrEqual(after);
    }
    // Put back on real time, the database is too.
    await call(app, "resetClock", { method: "DELETE", url: `/_mock/v1/apps/${appId}/clock` });
    expect(await dueNow()).toEqual([]);
    const id = (await action("insertOne", { document: { note: "real" } })).insertedId;
    expect(Math.abs(id.getTimestamp().getTime() - Date.now())).toBeLessThan(60_000);
  });
});

describe("the app's clock in its change streams", () => {
  it("is the $$NOW a database trigger's match reads at each change", async () => {
    await call(app, "resetClock", { method: "DELETE", url: `/_mock/v1/apps/${appId}/clock` });
    const insert = async (_id: string, due: number, marker = false) => {
      const { access_token } = await anonymousLogin(app, appId);
      const argument = EJSON.serialize(
        { database: "d", collection: "tasks", document: { _id, due: new Date(due), marker } },
        { relaxed: false },
      );
      expect((await mongoAction(app, appId, access_token, "insertOne", argument)).response.statusCode).toBe(200);
    };
    const runs = async () =>
      (
        await call(app, "listDocuments", { method: "GET", url: `/_mock/v1/apps/${appId}/data/audit/due` })
      ).body.documents.map((doc: object) => EJSON.deserialize(doc) as { task: string; at: Date }) as {
        task: string;
        at: Date;
      }[];
    const tasks = async () => (await runs()).map((run) => run.task);
    // Due in ten minutes: not yet (its change decided before the clock moves: the marker after it
    // has run). Twenty minutes on by the app's clock, the same is due, and the trigger's projection
    // of $$NOW says that time.
    await insert("not yet", Date.now() + 10 * 60_000);
    await insert("marker", Date.now() + 10 * 60_000, true);
    await expect.poll(tasks, { timeout: 10_000 }).toEqual(["marker"]);
    await advance(20 * 60);
    const { clock } = await runtime();
    const before = clock.now();
    await insert("due", Date.now() + 10 * 60_000);
    await expect.poll(tasks, { timeout: 10_000 }).toEqual(["marker", "due"]);
    const run = (await runs())[1];
    expect(run!.at.getTime()).toBeGreaterThanOrEqual(before);
    expect(run!.at.getTime()).toBeLessThanOrEqual(clock.now());
  });

  it("is the $$NOW a stream's filter reads at each change", async () => {
    const { app: server, url } = await listening();
    onTestFinished(() => server.close());
    const streamApp = await newApp(server, {
      rules: {
        default: { read: true, write: true, insert: true, delete: true },
        // What its readers see of this one: the documents due by the app's time.
        "d.dueOnly": {
          roles: [{ name: "all", apply_when: {}, read: true, write: true, insert: true, delete: true }],
          filters: [
            { name: "due", apply_when: {}, query: { $or: [{ marker: true }, { $expr: { $lte: ["$due", "$$NOW"] } }] } },
          ],
        },
      },
    });
    const token = (await anonymousLogin(server, streamApp)).access_token;
    const namespace = { database: "d", collection: "reminders" };
    const stream = await openWatch(url, streamApp, token, {
      ...namespace,
      filter: { $or: [{ "fullDocument.marker": true }, { $expr: { $lte: ["$fullDocument.due", "$$NOW"] } }] },
    });
    expect(stream.response.status).toBe(200);
    onTestFinished(() => stream.close());
    const ruled = await openWatch(url, streamApp, token, { database: "d", collection: "dueOnly" });
    expect(ruled.response.status).toBe(200);
    onTestFinished(() => ruled.close());
    const insert = async (_id: string, due: number, collection = namespace.collection) => {
      const document = { _id, due: new Date(due), marker: _id === "marker" };
      const argument = EJSON.serialize({ ...namespace, collection, document }, { relaxed: false });
      const { response } = await mongoAction(server, streamApp, token, "insertOne", argument);
      expect(response.statusCode).toBe(200);
    };
    // Due in ten minutes: not yet, by the real clock nor the app's (in both collections; their
    // changes decided before the clock moves: the markers after them have come).
    for (const collection of [namespace.collection, "dueOnly"]) {
      await insert("not yet", Date.now() + 10 * 60_000, collection);
      await insert("marker", Date.now() + 10 * 60_000, collection);
    }
    expect(await stream.next()).toContain('"_id":"marker"');
    expect(await ruled.next()).toContain('"_id":"marker"');
    // Twenty minutes on by the app's clock (the stream's token lives thirty), the same is due.
    const moved = await call(server, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${streamApp}/clock`,
      payload: { advanceBy: 20 * 60 },
    });
    expect(moved.response.statusCode).toBe(200);
    await insert("due", Date.now() + 10 * 60_000);
    await insert("due", Date.now() + 10 * 60_000, "dueOnly");
    expect(await stream.next()).toContain('"_id":"due"');
    // (The rules' filter, read when the stream opened, is read at each change as the filter is.)
    expect(await ruled.next()).toContain('"_id":"due"');
  });
});
