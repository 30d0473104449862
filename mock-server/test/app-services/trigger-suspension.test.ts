/**
 * A collection's database trigger suspended when its collection is dropped or renamed over, as
 * App Services suspends a trigger whose change stream is invalidated, and resumed through the
 * control API, by new settings or a reset (docs/decisions/0057-trigger-suspension.md); on both
 * stores, and on PostgreSQL across instances.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, call, mongoAction, newApp, testApp, testStore } from "../helpers/app.ts";
import { logLines } from "../helpers/log-lines.ts";
import { adminQuery, postgresAdminUrl } from "../helpers/postgres.ts";

let app: FastifyInstance;
let appId: string;
let token: string;
const { logStream, lines: logged } = logLines();

/** Each event's document's `n` kept in audit.<collection> (the function runs as system). */
const keep = (collection: string) => `exports = async (event) => {
  await context.services.get("mongodb-atlas").db("audit").collection("${collection}")
    .insertOne({ n: event.fullDocument.n });
};`;

const trigger = (name: string, functionName: string, collection?: string) => ({
  type: "DATABASE" as const,
  name,
  functionName,
  database: "d",
  ...(collection ? { collection } : {}),
  operationTypes: ["INSERT" as const],
});

const config = {
  functions: {
    keepWatched: { source: keep("watched"), private: true },
    keepReport: { source: keep("report"), private: true },
    keepAll: { source: keep("all"), private: true },
    out: {
      source: `exports = (from, to) =>
        context.services.get("mongodb-atlas").db("d").collection(from).aggregate([{ $out: to }]).toArray();`,
      runAsSystem: true,
    },
  },
  rules: { default: { read: true, write: true, insert: true, delete: true } },
  triggers: [
    trigger("watched", "keepWatched", "watched"),
    trigger("report", "keepReport", "report"),
    trigger("whole database", "keepAll"),
  ],
};

beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true, logLevel: "info", logStream });
  appId = await newApp(app, config);
  token = (await anonymousLogin(app, appId)).access_token;
});
afterAll(() => app.close());

const insert = (server: FastifyInstance, collection: string, n: number) =>
  mongoAction(server, appId, token, "insertOne", { database: "d", collection, document: { n } });

/** The `n` of each change the trigger keeping `collection` ran for, in the order it ran them. */
async function ran(collection: string, server = app): Promise<number[]> {
  const { body } = await call(server, "listDocuments", {
    method: "GET",
    url: `/_mock/v1/apps/${appId}/data/audit/${collection}?sort=${encodeURIComponent(JSON.stringify({ _id: 1 }))}`,
  });
  return body.documents.map((doc: { n: { $numberInt: string } }) => Number(doc.n.$numberInt));
}

async function suspended(server = app): Promise<{ name: string; since: string; reason: string }[]> {
  const { body } = await call(server, "getApp", { method: "GET", url: `/_mock/v1/apps/${appId}` });
  return body.suspendedTriggers;
}

const drop = async (server: FastifyInstance, collection: string) =>
  expect(
    (await server.inject({ method: "DELETE", url: `/_mock/v1/apps/${appId}/data/d/${collection}` })).statusCode,
  ).toBe(204);

/** The times `server` tells its live events (the inspector's) that the app's suspended triggers changed, from now. */
function suspensionEvents(server: FastifyInstance): { count: () => number; stop: () => void } {
  let count = 0;
  const stop = server.emulator.events.subscribe((event) => {
    if (event.type === "app" && event.appId === appId && event.action === "triggers") count++;
  });
  return { count: () => count, stop };
}

const resume = (server: FastifyInstance, name: string) =>
  call(server, "resumeTrigger", {
    method: "POST",
    url: `/_mock/v1/apps/${appId}/triggers/${encodeURIComponent(name)}/resume`,
  });

describe("a collection's database trigger", () => {
  it("is suspended when its collection is dropped, and runs again from the next change once resumed", async () => {
    await insert(app, "watched", 1);
    await expect.poll(() => ran("watched")).toEqual([1]);
    expect(await suspended()).toEqual([]);
    const events = suspensionEvents(app);
    await drop(app, "watched");
    // The inspector's live view is told, once.
    await expect.poll(events.count).toBe(1);
    expect(await suspended()).toEqual([
      { name: "watched", since: expect.any(String), reason: "the collection d.watched was dropped" },
    ]);
    expect(
      logged.some(
        (line) => line.msg?.startsWith("database trigger suspended") && line.trigger === "watched" && line.level === 40,
      ),
    ).toBe(true);
    // The write goes through, and a trigger of the whole database still runs for it.
    await insert(app, "watched", 2);
    await expect.poll(() => ran("all")).toContain(2);
    const resumed = await resume(app, "watched");
    expect(resumed.response.statusCode).toBe(204);
    expect(await suspended()).toEqual([]);
    await expect.poll(events.count).toBe(2);
    events.stop();
    await insert(app, "watched", 3);
    await expect.poll(async () => (await ran("watched")).includes(3)).toBe(true);
    // An ordered trigger runs its changes in order: had it taken 2, 2 would have come before 3.
    expect(await ran("watched")).toEqual([1, 3]);
  });

  it("is suspended when $out replaces its collection", async () => {
    await insert(app, "report", 1);
    await expect.poll(() => ran("report")).toEqual([1]);
    await insert(app, "source", 10);
    const out = await call(app, "callFunction", {
      method: "POST",
      url: `/api/client/v2.0/app/${appId}/functions/call`,
      headers: { authorization: `Bearer ${token}` },
      payload: { name: "out", arguments: ["source", "report"] },
    });
    expect(out.response.statusCode).toBe(200);
    expect(await suspended()).toEqual([
      {
        name: "report",
        since: expect.any(String),
        reason: "the collection d.report was replaced by a collection renamed over it (as $out does)",
      },
    ]);
    await insert(app, "report", 2);
    await expect.poll(() => ran("all")).toContain(2);
    await resume(app, "report");
    await insert(app, "report", 3);
    await expect.poll(async () => (await ran("report")).includes(3)).toBe(true);
    expect(await ran("report")).toEqual([1, 3]);
  });

  it("is resumed by name: no such database trigger is a 404, one not suspended stays as it is", async () => {
    const missing = await resume(app, "no such trigger");
    expect(missing.response.statusCode).toBe(404);
    expect(missing.body.error).toBe(`no database trigger named 'no such trigger' in app '${appId}'`);
    expect((await resume(app, "watched")).response.statusCode).toBe(204);
    expect(await suspended()).toEqual([]);
  });

  it("is resumed by new settings for the app and by a reset, not by the same settings again", async () => {
    await drop(app, "watched");
    expect((await suspended()).map((s) => s.name)).toEqual(["watched"]);
    // The same settings applied again (every start with --app or --config does): no new deployment.
    await app.emulator.apps.upsert({ appId, overrides: config });
    expect((await suspended()).map((s) => s.name)).toEqual(["watched"]);
    await app.emulator.apps.upsert({ appId, overrides: { ...config, values: { deployed: { value: 2 } } } });
    expect(await suspended()).toEqual([]);
    await insert(app, "watched", 4);
    await expect.poll(async () => (await ran("watched")).includes(4)).toBe(true);
    await drop(app, "watched");
    expect((await suspended()).map((s) => s.name)).toEqual(["watched"]);
    expect((await app.inject({ method: "POST", url: `/_mock/v1/apps/${appId}/reset` })).statusCode).toBe(204);
    expect(await suspended()).toEqual([]);
    token = (await anonymousLogin(app, appId)).access_token;
  });

  it("is kept in a state export and restored by its import; a name no trigger has is refused", async () => {
    // (A collection that exists: dropping none is no change.)
    await insert(app, "watched", 7);
    await expect.poll(async () => (await ran("watched")).includes(7)).toBe(true);
    await drop(app, "watched");
    const [made] = await suspended();
    expect(made).toMatchObject({ name: "watched", reason: "the collection d.watched was dropped" });
    const exported = (await call(app, "exportState", { method: "GET", url: "/_mock/v1/state" })).body;
    const saved = exported.apps.find((one: { appId: string }) => one.appId === appId);
    expect(saved.suspendedTriggers).toEqual([made]);
    // Resumed here, then the state imported again: suspended as it was exported, and it runs for nothing.
    await resume(app, "watched");
    expect(await suspended()).toEqual([]);
    const imported = await call(app, "importState", { method: "PUT", url: "/_mock/v1/state", payload: exported });
    expect(imported.response.statusCode).toBe(204);
    expect(await suspended()).toEqual([made]);
    token = (await anonymousLogin(app, appId)).access_token;
    await insert(app, "watched", 8);
    await expect.poll(() => ran("all")).toContain(8);
    expect(await ran("watched")).not.toContain(8);
    // A suspension that names no database trigger of a collection, or names one twice: refused, nothing changed.
    const refusedWith = async (suspendedTriggers: unknown[], error: string) => {
      const apps = exported.apps.map((one: { appId: string }) =>
        one.appId === appId ? { ...one, suspendedTriggers } : one,
      );
      const { response, body } = await call(app, "importState", {
        method: "PUT",
        url: "/_mock/v1/state",
        payload: { ...exported, apps },
      });
      expect(response.statusCode).toBe(400);
      expect(body.error).toBe(`cannot import this state: ${error}`);
    };
    await refusedWith(
      [{ ...made, name: "whole database" }],
      `the app '${appId}' holds a suspension of 'whole database', which is not a database trigger of one collection`,
    );
    await refusedWith(
      [{ ...made, name: "nothing" }],
      `the app '${appId}' holds a suspension of 'nothing', which is not a database trigger of one collection`,
    );
    await refusedWith([made, made], `the app '${appId}' holds a suspension of 'watched' twice`);
    expect(await suspended()).toEqual([made]);
    await resume(app, "watched");
  });

  it.runIf(testStore() === "postgres")("is suspended and resumed on every instance", async () => {
    // Another instance on the same database.
    const instance = () =>
      testApp({
        databaseUrl: app.emulator.options.databaseUrl!,
        signingSecret: app.emulator.signingSecret,
        allowFunctionSource: true,
      });
    const other = await instance();
    try {
      // The other instance has the app (and its triggers) from here on.
      expect(await suspended(other)).toEqual([]);
      // (A collection that exists: dropping none is no change.)
      await insert(app, "watched", 10);
      await expect.poll(async () => (await ran("watched")).includes(10)).toBe(true);
      const events = suspensionEvents(other);
      await drop(app, "watched");
      await expect.poll(() => suspended(other)).toHaveLength(1);
      // The other instance's live view is told when it learns it.
      await expect.poll(events.count).toBe(1);
      events.stop();
      await insert(other, "watched", 11);
      await expect.poll(() => ran("all")).toContain(11);
      // Resumed there: here too, and the next change runs (11, taken by neither, never does).
      expect((await resume(other, "watched")).response.statusCode).toBe(204);
      await expect.poll(() => suspended(app)).toEqual([]);
      await insert(app, "watched", 12);
      await expect.poll(async () => (await ran("watched")).includes(12)).toBe(true);
      expect((await ran("watched")).filter((n) => n >= 10)).toEqual([10, 12]);
      // An instance that starts later reads the suspensions the others made.
      await drop(other, "watched");
      const later = await instance();
      try {
        expect((await suspended(later)).map((s) => s.name)).toEqual(["watched"]);
      } finally {
        await later.close();
      }
      // A suspension whose notification the instances missed (written without one, as if sent while
      // their listeners were away) is read again once they listen again.
      const url = app.emulator.options.databaseUrl!;
      await adminQuery(
        url,
        "INSERT INTO trigger_suspensions (app_id, name, since, reason) VALUES ($1, 'report', 0, 'missed')",
        [appId],
      );
      await adminQuery(
        postgresAdminUrl(),
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = $1 AND application_name = 'app-services-emulator-listener'`,
        [new URL(url).pathname.slice(1)],
      );
      await expect
        .poll(async () => (await suspended(other)).map((s) => s.name).sort(), { timeout: 10_000 })
        .toEqual(["report", "watched"]);
    } finally {
      await other.close();
    }
  });
});
