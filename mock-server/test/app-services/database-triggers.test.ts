/**
 * Database triggers: after a document of the trigger's collection (or database) is inserted,
 * updated, replaced or deleted, the function runs as system with MongoDB's change event, as the
 * trigger shapes it (fullDocument, fullDocumentBeforeChange, match, project); ordered triggers run
 * in the writes' order; each write runs each trigger once, whichever instance made it.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, call, mongoAction, newApp, testApp, testStore } from "../helpers/app.ts";
import { logLines, triggerFailed } from "../helpers/log-lines.ts";

let app: FastifyInstance;
let appId: string;
let token: string;
const { logStream, lines: logged } = logLines();

// Each event is kept whole in audit.<collection> (the function runs as system); a document marked
// slow takes a few round trips first, so that runs not kept in order would overtake each other.
const keep = (collection: string) => `exports = async (event) => {
  const audit = context.services.get("mongodb-atlas").db("audit").collection("${collection}");
  if (event.fullDocument?.slow) for (let i = 0; i < 20; i++) await audit.findOne({});
  await audit.insertOne({
    event,
    caller: context.user.type,
  });
};`;

beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true, logLevel: "warn", logStream });
  appId = await newApp(app, {
    functions: {
      keepNote: { source: keep("notes"), private: true },
      keepDone: { source: keep("done"), private: true },
      keepAny: { source: keep("any"), private: true },
      keepMeta: { source: keep("meta"), private: true },
      aggregate: {
        source: `exports = (name, pipeline) =>
          context.services.get("mongodb-atlas").db("meta").collection(name).aggregate(pipeline).toArray();`,
        runAsSystem: true,
      },
      broken: { source: "exports = () => { throw new Error('no audit today'); };", private: true },
    },
    rules: { default: { read: true, write: true, insert: true, delete: true } },
    triggers: [
      {
        type: "DATABASE",
        name: "notes",
        functionName: "keepNote",
        database: "app",
        collection: "notes",
        operationTypes: ["INSERT", "UPDATE", "REPLACE", "DELETE"],
        fullDocumentBeforeChange: true,
      },
      {
        type: "DATABASE",
        name: "done tasks",
        functionName: "keepDone",
        database: "app",
        collection: "tasks",
        operationTypes: ["UPDATE"],
        fullDocument: true,
        match: { "updateDescription.updatedFields.done": true },
        project: { _id: 0, operationType: 1, "fullDocument.title": 1 },
      },
      { type: "DATABASE", name: "anything", functionName: "keepAny", database: "other", operationTypes: ["INSERT"] },
      {
        type: "DATABASE",
        name: "collections",
        functionName: "keepMeta",
        database: "meta",
        operationTypes: ["DROP_COLLECTION", "RENAME_COLLECTION", "DELETE"],
      },
      {
        type: "DATABASE",
        name: "mixed projection",
        functionName: "keepAny",
        database: "app",
        collection: "mixed",
        operationTypes: ["INSERT"],
        project: { operationType: 1, ns: 0 },
      },
      { type: "DATABASE", name: "failing", functionName: "broken", database: "app", operationTypes: ["DELETE"] },
      {
        type: "DATABASE",
        name: "off",
        functionName: "keepAny",
        database: "app",
        operationTypes: ["INSERT"],
        disabled: true,
      },
    ],
  });
  token = (await anonymousLogin(app, appId)).access_token;
});
afterAll(() => app.close());

const act = (name: string, argument: Record<string, unknown>) => mongoAction(app, appId, token, name, argument);

/** What the triggers kept in `audit.<collection>`, in the order they kept it. */
async function kept(collection: string): Promise<{ event: Record<string, unknown>; caller: string }[]> {
  const { body } = await call(app, "listDocuments", {
    method: "GET",
    url: `/_mock/v1/apps/${appId}/data/audit/${collection}?sort=${encodeURIComponent(JSON.stringify({ _id: 1 }))}`,
  });
  return body.documents;
}

const notes = { database: "app", collection: "notes" };

describe("database triggers", () => {
  it("give each change's event as MongoDB's change stream does, shaped by the trigger", async () => {
    const id = { $oid: "65a1b2c3d4e5f60718293a4c" };
    await act("insertOne", { ...notes, document: { _id: id, title: "first" } });
    await act("updateOne", { ...notes, query: { _id: id }, update: { $set: { title: "second" } } });
    await act("findOneAndReplace", { ...notes, filter: { _id: id }, update: { title: "third" } });
    await act("deleteOne", { ...notes, query: { _id: id } });
    await expect.poll(async () => (await kept("notes")).length).toBe(4);
    const [insert, update, replace, remove] = (await kept("notes")).map((one) => one.event);
    const common = {
      _id: { _data: expect.any(String) },
      clusterTime: expect.anything(),
      wallTime: expect.any(Object),
      ns: { db: "app", coll: "notes" },
    };
    expect(insert).toEqual({
      ...common,
      operationType: "insert",
      documentKey: { _id: id },
      fullDocument: { _id: id, title: "first" },
    });
    // Without fullDocument, an update has none; the document before is there when asked for.
    expect(update).toEqual({
      ...common,
      operationType: "update",
      documentKey: { _id: id },
      updateDescription: { updatedFields: { title: "second" }, removedFields: [], truncatedArrays: [] },
      fullDocumentBeforeChange: { _id: id, title: "first" },
    });
    expect(replace).toEqual({
      ...common,
      operationType: "replace",
      documentKey: { _id: id },
      fullDocument: { _id: id, title: "third" },
      fullDocumentBeforeChange: { _id: id, title: "second" },
    });
    expect(remove).toEqual({
      ...common,
      operationType: "delete",
      documentKey: { _id: id },
      fullDocumentBeforeChange: { _id: id, title: "third" },
    });
    expect((await kept("notes")).map((one) => one.caller)).toEqual(["system", "system", "system", "system"]);
    // The delete's failing trigger is logged; the delete itself was answered as usual.
    await expect.poll(() => triggerFailed(logged, "database trigger failed", "failing", /no audit today/)).toBe(true);
  });

  it("runs an ordered trigger's events in the order of the writes", async () => {
    const documents = Array.from({ length: 8 }, (_, n) => ({ n: { $numberInt: String(n) }, slow: n % 2 === 0 }));
    await act("insertMany", { ...notes, documents });
    await expect.poll(async () => (await kept("notes")).length).toBe(12);
    const order = (await kept("notes"))
      .slice(4)
      .map((one) => (one.event.fullDocument as { n: { $numberInt: string } }).n.$numberInt);
    expect(order).toEqual(["0", "1", "2", "3", "4", "5", "6", "7"]);
  });

  it("runs only on the changes its match takes, with its projection, and on a whole database", async () => {
    const tasks = { database: "app", collection: "tasks" };
    await act("insertOne", { ...tasks, document: { title: "write tests", done: false } });
    await act("updateOne", { ...tasks, query: {}, update: { $set: { note: "soon" } } });
    await act("updateOne", { ...tasks, query: {}, update: { $set: { done: true } } });
    await act("insertOne", { database: "other", collection: "anywhere", document: { here: true } });
    await expect.poll(async () => (await kept("done")).length).toBe(1);
    expect((await kept("done"))[0]!.event).toEqual({ operationType: "update", fullDocument: { title: "write tests" } });
    await expect.poll(async () => (await kept("any")).length).toBe(1);
    expect((await kept("any"))[0]!.event).toMatchObject({
      operationType: "insert",
      ns: { db: "other", coll: "anywhere" },
      fullDocument: { here: true },
    });
  });

  it("give a database trigger its collections' drops and renames, when it asks for them", async () => {
    const meta = (collection: string) => ({ database: "meta", collection });
    await act("insertOne", { ...meta("dropped"), document: { _id: 1 } });
    await act("insertOne", { ...meta("source"), document: { _id: 2 } });
    const dropped = await app.inject({ method: "DELETE", url: `/_mock/v1/apps/${appId}/data/meta/dropped` });
    expect(dropped.statusCode).toBe(204);
    // (Dropping it again: it is not there, nothing happens.)
    await app.inject({ method: "DELETE", url: `/_mock/v1/apps/${appId}/data/meta/dropped` });
    const out = await call(app, "callFunction", {
      method: "POST",
      url: `/api/client/v2.0/app/${appId}/functions/call`,
      headers: { authorization: `Bearer ${token}` },
      payload: { name: "aggregate", arguments: ["source", [{ $out: "report" }]] },
    });
    expect(out.response.statusCode).toBe(200);
    await act("deleteOne", { ...meta("report"), query: { _id: 2 } });
    await expect.poll(async () => (await kept("meta")).length).toBe(3);
    const [drop, rename, remove] = (await kept("meta")).map((one) => one.event);
    const common = { _id: { _data: expect.any(String) }, clusterTime: expect.anything(), wallTime: expect.any(Object) };
    expect(drop).toEqual({ ...common, operationType: "drop", ns: { db: "meta", coll: "dropped" } });
    expect(rename).toEqual({
      ...common,
      operationType: "rename",
      ns: { db: "meta", coll: expect.stringMatching(/^tmp\.agg_out\./) },
      to: { db: "meta", coll: "report" },
    });
    expect(remove).toMatchObject({ operationType: "delete", ns: { db: "meta", coll: "report" } });
  });

  it("refuses collection events for a trigger of one collection, as App Services does", async () => {
    const refused = await app.inject({
      method: "POST",
      url: "/_mock/v1/apps",
      payload: {
        config: {
          functions: { f: { source: "exports = () => {};" } },
          triggers: [
            {
              type: "DATABASE",
              name: "one collection",
              functionName: "f",
              database: "meta",
              collection: "c",
              operationTypes: ["INSERT", "DROP_COLLECTION"],
            },
          ],
        },
      },
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toMatch(/operationTypes/);
  });

  it("leaves the write as it was when a trigger's projection fails on its event", async () => {
    const inserted = await act("insertOne", { database: "app", collection: "mixed", document: { a: 1 } });
    expect(inserted.response.statusCode).toBe(200);
    expect(triggerFailed(logged, "database trigger failed", "mixed projection", /projection failed/)).toBe(true);
  });

  it.runIf(testStore() === "postgres")("runs once for a write, on the instance that made it", async () => {
    const other = await testApp({
      databaseUrl: app.emulator.options.databaseUrl!,
      signingSecret: app.emulator.signingSecret,
      allowFunctionSource: true,
    });
    try {
      const before = (await kept("notes")).length;
      const from = async () =>
        (await kept("notes")).slice(before).map((one) => (one.event.fullDocument as { from: string }).from);
      // The other instance has the app (and its triggers) from here on.
      await mongoAction(other, appId, token, "find", { ...notes, query: {} });
      await act("insertOne", { ...notes, document: { from: "first instance" } });
      await expect.poll(from).toEqual(["first instance"]);
      await mongoAction(other, appId, token, "insertOne", { ...notes, document: { from: "second instance" } });
      await expect.poll(async () => (await from()).includes("second instance")).toBe(true);
      // Were this instance to run the other's write's triggers too, it would do so before those of
      // its own next write (one ordered queue, changes in commit order): that run would come first.
      await act("insertOne", { ...notes, document: { from: "last" } });
      await expect.poll(async () => (await from()).includes("last")).toBe(true);
      expect(await from()).toEqual(["first instance", "second instance", "last"]);
    } finally {
      await other.close();
    }
  });
});
