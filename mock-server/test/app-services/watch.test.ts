/** Change streams (the streaming functions/call): framing, filters, auth and clean-up. */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MongoService } from "../../src/data/mongo-actions.ts";
import { openData } from "../helpers/app.ts";
import { listening } from "../helpers/listen.ts";

let app: FastifyInstance;
let url: string;
beforeAll(async () => {
  ({ app, url } = await listening());
});
afterAll(() => app.close());

async function json(path: string, init: RequestInit = {}) {
  const response = await fetch(`${url}${path}`, {
    ...init,
    headers: { "content-type": "application/json", ...init.headers },
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function setup(config: Record<string, unknown> = {}) {
  const { body: created } = await json("/_mock/v1/apps", {
    method: "POST",
    body: JSON.stringify({ config: { ...openData, ...config } }),
  });
  const appId = created.appId as string;
  const { body: session } = await json(`/api/client/v2.0/app/${appId}/auth/providers/anon-user/login`, {
    method: "POST",
    body: "{}",
  });
  return { appId, token: session.access_token as string, userId: session.user_id as string };
}

function baasRequest(argument: Record<string, unknown>, name = "watch", service = "mongodb-atlas") {
  return encodeURIComponent(Buffer.from(JSON.stringify({ name, arguments: [argument], service })).toString("base64"));
}

/** Opens a stream and yields its raw SSE events (un-parsed blocks). */
async function open(
  appId: string,
  token: string,
  argument: Record<string, unknown>,
  via: "header" | "query" = "header",
) {
  const controller = new AbortController();
  const query = `baas_request=${baasRequest(argument)}${via === "query" ? `&baas_at=${token}` : ""}`;
  const response = await fetch(`${url}/api/client/v2.0/app/${appId}/functions/call?${query}`, {
    headers: { accept: "text/event-stream", ...(via === "header" ? { authorization: `Bearer ${token}` } : {}) },
    signal: controller.signal,
  });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  async function next(): Promise<string> {
    for (;;) {
      const end = buffer.indexOf("\n\n");
      if (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (block.startsWith(":")) continue;
        return block;
      }
      const { value, done } = await reader.read();
      if (done) throw new Error("stream ended");
      buffer += decoder.decode(value, { stream: true });
    }
  }
  /** The events left once the server has ended the stream (comments skipped). */
  async function rest(): Promise<string[]> {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
    }
    return buffer.split("\n\n").filter((block) => block !== "" && !block.startsWith(":"));
  }
  await expect
    .poll(async () => (await json(`/_mock/v1/apps/${appId}`)).body.watchers, { timeout: 5000, interval: 10 })
    .toBeGreaterThan(0);
  return { response, next, rest, close: () => controller.abort() };
}

async function insert(appId: string, token: string, collection: string, document: Record<string, unknown>) {
  return json(`/api/client/v2.0/app/${appId}/functions/call`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: JSON.stringify({
      name: "insertOne",
      arguments: [{ database: "db", collection, document }],
      service: "mongodb-atlas",
    }),
  });
}

const unescapeSse = (data: string) => data.replace(/%0A/g, "\n").replace(/%0D/g, "\r").replace(/%25/g, "%");

describe("callFunctionStreaming (watch)", () => {
  it("streams inserts, updates and deletes as canonical Extended JSON with %-escaped data lines", async () => {
    const { appId, token } = await setup();
    const stream = await open(appId, token, { database: "db", collection: "c" });
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get("content-type")).toBe("text/event-stream");
    const text = "100% done\r\nnext line";
    const { body: inserted } = await insert(appId, token, "c", { text });
    const block = await stream.next();
    expect(block.startsWith("data: ")).toBe(true);
    expect(block).not.toMatch(/[^%]\r|\n(?!$)/);
    expect(block).toContain("%25");
    const event = JSON.parse(unescapeSse(block.slice("data: ".length)));
    expect(event).toMatchObject({
      operationType: "insert",
      ns: { db: "db", coll: "c" },
      documentKey: { _id: inserted.insertedId },
      fullDocument: { _id: inserted.insertedId, text },
      clusterTime: { $timestamp: { t: expect.any(Number), i: expect.any(Number) } },
      _id: { _data: expect.any(String) },
    });

    await json(`/api/client/v2.0/app/${appId}/functions/call`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify({
        name: "updateOne",
        arguments: [{ database: "db", collection: "c", query: {}, update: { $set: { n: 1 }, $unset: { text: "" } } }],
        service: "mongodb-atlas",
      }),
    });
    const update = JSON.parse(unescapeSse((await stream.next()).slice(6)));
    expect(update.operationType).toBe("update");
    expect(update.updateDescription).toEqual({
      updatedFields: { n: { $numberInt: "1" } },
      removedFields: ["text"],
      truncatedArrays: [],
    });

    await json(`/api/client/v2.0/app/${appId}/functions/call`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify({
        name: "deleteOne",
        arguments: [{ database: "db", collection: "c", query: {} }],
        service: "mongodb-atlas",
      }),
    });
    const deleted = JSON.parse(unescapeSse((await stream.next()).slice(6)));
    expect(deleted).toMatchObject({ operationType: "delete", documentKey: { _id: inserted.insertedId } });
    expect(deleted.fullDocument).toBeUndefined();
    stream.close();
    await expect
      .poll(async () => (await json(`/_mock/v1/apps/${appId}`)).body.watchers, { timeout: 5000, interval: 10 })
      .toBe(0);
  });

  it("stamps each change once: every stream sees its _id and clusterTime, with a wallTime, in MongoDB's field order", async () => {
    const { appId, token } = await setup();
    const first = await open(appId, token, { database: "db", collection: "s" });
    const second = await open(appId, token, { database: "db", collection: "s" });
    await expect
      .poll(async () => (await json(`/_mock/v1/apps/${appId}`)).body.watchers, { timeout: 5000, interval: 10 })
      .toBe(2);
    await insert(appId, token, "s", { n: 1 });
    await insert(appId, token, "s", { n: 2 });
    const read = async (stream: { next(): Promise<string> }) => [
      JSON.parse(unescapeSse((await stream.next()).slice(6))),
      JSON.parse(unescapeSse((await stream.next()).slice(6))),
    ];
    const [one, two] = [await read(first), await read(second)];
    first.close();
    second.close();
    for (const [i, event] of one.entries()) {
      expect(two[i]._id).toEqual(event._id);
      expect(two[i].clusterTime).toEqual(event.clusterTime);
      expect(two[i].wallTime).toEqual(event.wallTime);
      // (change_stream_event_transform.cpp's order; fullDocument before ns.)
      expect(Object.keys(event)).toEqual([
        "_id",
        "operationType",
        "clusterTime",
        "wallTime",
        "fullDocument",
        "ns",
        "documentKey",
      ]);
      expect(event.wallTime).toEqual({ $date: { $numberLong: expect.stringMatching(/^\d+$/) } });
    }
    // Two writes, two cluster times, two tokens.
    expect(one[1]._id).not.toEqual(one[0]._id);
    expect(one[1].clusterTime).not.toEqual(one[0].clusterTime);
  });

  it("streams a pipeline's update as its delta, a rewrite as a replace, and nothing for no change", async () => {
    const { appId, token } = await setup();
    const stream = await open(appId, token, { database: "db", collection: "p" });
    const text = "x".repeat(100);
    await insert(appId, token, "p", { _id: "d", text, n: 1, list: [1, 2, 3], gone: true });
    expect(JSON.parse(unescapeSse((await stream.next()).slice(6))).operationType).toBe("insert");
    const update = (pipeline: unknown[]) =>
      json(`/api/client/v2.0/app/${appId}/functions/call`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
        body: JSON.stringify({
          name: "updateOne",
          arguments: [{ database: "db", collection: "p", query: { _id: "d" }, update: pipeline }],
          service: "mongodb-atlas",
        }),
      });
    // Nothing changed: nothing written, no event (the next one is the delta's).
    await update([{ $set: { n: 1 } }]);
    await update([{ $set: { n: 2, list: [1, 2] } }, { $unset: "gone" }]);
    const delta = JSON.parse(unescapeSse((await stream.next()).slice(6)));
    expect(delta.operationType).toBe("update");
    expect(delta.updateDescription).toEqual({
      updatedFields: { n: { $numberInt: "2" } },
      removedFields: ["gone"],
      truncatedArrays: [{ field: "list", newSize: { $numberInt: "2" } }],
    });
    // A delta no smaller than the document: MongoDB writes (and streams) a replacement.
    await update([{ $replaceWith: { other: "$n" } }]);
    const rewrite = JSON.parse(unescapeSse((await stream.next()).slice(6)));
    expect(rewrite).toMatchObject({ operationType: "replace", fullDocument: { _id: "d", other: { $numberInt: "2" } } });
    expect(rewrite.updateDescription).toBeUndefined();
    stream.close();
  });

  it("honours ids and filter, and authenticates from baas_at (realm-core)", async () => {
    const { appId, token } = await setup();
    const byFilter = await open(
      appId,
      token,
      { database: "db", collection: "f", filter: { "fullDocument.keep": true } },
      "query",
    );
    await insert(appId, token, "f", { keep: false, n: 1 });
    await insert(appId, token, "f", { keep: true, n: 2 });
    expect(JSON.parse(unescapeSse((await byFilter.next()).slice(6))).fullDocument.n).toEqual({ $numberInt: "2" });
    byFilter.close();

    const byIds = await open(appId, token, { database: "db", collection: "g", ids: ["wanted"] });
    await insert(appId, token, "g", { _id: "other" });
    await insert(appId, token, "g", { _id: "wanted" });
    expect(JSON.parse(unescapeSse((await byIds.next()).slice(6))).documentKey).toEqual({ _id: "wanted" });
    byIds.close();

    // A null for either is none, as Go decodes it (was 400 "'ids' must be an array").
    const byNeither = await open(appId, token, { database: "db", collection: "h", ids: null, filter: null });
    expect(byNeither.response.status).toBe(200);
    await insert(appId, token, "h", { _id: "any" });
    expect(JSON.parse(unescapeSse((await byNeither.next()).slice(6))).documentKey).toEqual({ _id: "any" });
    byNeither.close();
  });

  it("only sends what the rules let the user read", async () => {
    const { appId, token, userId } = await setup();
    const { body: other } = await json(`/api/client/v2.0/app/${appId}/auth/providers/anon-user/login`, {
      method: "POST",
      body: "{}",
    });
    const stream = await open(appId, token, { database: "notes-app", collection: "notes" });
    const post = (as: string, owner: string, title: string) =>
      json(`/api/client/v2.0/app/${appId}/functions/call`, {
        method: "POST",
        headers: { authorization: `Bearer ${as}` },
        body: JSON.stringify({
          name: "insertOne",
          arguments: [{ database: "notes-app", collection: "notes", document: { owner_id: owner, title } }],
          service: "mongodb-atlas",
        }),
      });
    await post(other.access_token, other.user_id, "theirs");
    await post(token, userId, "mine");
    expect(JSON.parse(unescapeSse((await stream.next()).slice(6))).fullDocument.title).toBe("mine");
    stream.close();
  });

  it("sends event: error and ends the stream when its user is deleted", async () => {
    const { appId, token } = await setup();
    const stream = await open(appId, token, { database: "db", collection: "h" });
    await json("/api/client/v2.0/auth/delete", { method: "DELETE", headers: { authorization: `Bearer ${token}` } });
    const { body: writer } = await json(`/api/client/v2.0/app/${appId}/auth/providers/anon-user/login`, {
      method: "POST",
      body: "{}",
    });
    await insert(appId, writer.access_token, "h", { x: 1 });
    const block = await stream.next();
    expect(block.split("\n")[0]).toBe("event: error");
    expect(JSON.parse(unescapeSse(block.split("\n")[1]!.slice(6)))).toMatchObject({ error_code: "InvalidSession" });
  });

  it("answers JSON errors before streaming: bad base64, bad JSON, other services, no token", async () => {
    const { appId, token } = await setup();
    const cases: [string, number][] = [
      [`baas_request=${encodeURIComponent("!!!not base64!!!")}`, 400],
      [`baas_request=${encodeURIComponent(Buffer.from("{nope").toString("base64"))}`, 400],
      [`baas_request=${baasRequest({ database: "db", collection: "c" }, "watch", "mongo-db")}`, 404],
      [`baas_request=${baasRequest({ database: "db" })}`, 400],
    ];
    for (const [query, status] of cases) {
      const response = await fetch(`${url}/api/client/v2.0/app/${appId}/functions/call?${query}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(response.status, query).toBe(status);
      expect(response.headers.get("content-type")).toBe("application/json");
      expect((await response.json()).error).toEqual(expect.any(String));
    }
    const anonymous = await fetch(
      `${url}/api/client/v2.0/app/${appId}/functions/call?baas_request=${baasRequest({ database: "db", collection: "c" })}`,
    );
    expect(anonymous.status).toBe(401);
    // Extended JSON the service's reader refuses (data/strict-forms.ts), as the other entries refuse it.
    for (const [filter, error] of [
      [{ "fullDocument.at": { $date: "2024-02-30T00:00:00Z" } }, "invalid $date value string: 2024-02-30T00:00:00Z"],
      [
        { "fullDocument.n": { $numberInt: "5", z: 1 } },
        "invalid JSON input; expected } after value for 32-bit integer",
      ],
    ] as const) {
      const query = `baas_request=${baasRequest({ database: "db", collection: "c", filter })}`;
      const response = await fetch(`${url}/api/client/v2.0/app/${appId}/functions/call?${query}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({
        error: `invalid Extended JSON in arguments: ${error}`,
        error_code: "BadRequest",
      });
    }
    // A filter the query parser refuses, in the words a find gets for it.
    for (const [filter, error] of [
      [{ $who: 1 }, "unknown top level operator: $who."],
      [{ a: { $who: 1 } }, "unknown operator: $who"],
    ] as const) {
      const query = `baas_request=${baasRequest({ database: "db", collection: "c", filter })}`;
      const response = await fetch(`${url}/api/client/v2.0/app/${appId}/functions/call?${query}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error, error_code: "MongoDBError" });
    }
  });

  it("serves many watchers at once and cleans them all up", async () => {
    // (Twenty streams of one anonymous user: past its own cap by default.)
    const { appId, token } = await setup({ maxStreamsPerAnonymousUser: 100 });
    const streams = await Promise.all(
      Array.from({ length: 20 }, () => open(appId, token, { database: "db", collection: "many" })),
    );
    await expect
      .poll(async () => (await json(`/_mock/v1/apps/${appId}`)).body.watchers, { timeout: 5000, interval: 10 })
      .toBe(20);
    await insert(appId, token, "many", { n: 1 });
    const events = await Promise.all(streams.map((s) => s.next()));
    expect(events.every((e) => e.startsWith("data: "))).toBe(true);
    for (const s of streams) s.close();
    await expect
      .poll(async () => (await json(`/_mock/v1/apps/${appId}`)).body.watchers, { timeout: 5000, interval: 10 })
      .toBe(0);
    // Only the app registry's own listener (the inspector's data events) is left.
    expect((await app.emulator.apps.get(appId))!.data.listenerCount).toBe(1);
  });
});

describe("a collection's end: dropped, or replaced by $out (MongoDB's metadata_notifications.js)", () => {
  const events = (blocks: string[]) => blocks.map((block) => JSON.parse(unescapeSse(block.slice("data: ".length))));
  const drop = (appId: string, collection: string, database = "db") =>
    fetch(`${url}/_mock/v1/apps/${appId}/data/${database}/${collection}`, { method: "DELETE" });
  const watchers = async (appId: string) => (await json(`/_mock/v1/apps/${appId}`)).body.watchers;

  it("streams drop and then invalidate, and ends the stream; streams of other collections go on", async () => {
    const { appId, token } = await setup();
    await insert(appId, token, "gone", { n: 1 });
    const stream = await open(appId, token, { database: "db", collection: "gone" });
    const other = await open(appId, token, { database: "db", collection: "stays" });
    await expect.poll(() => watchers(appId), { timeout: 5000, interval: 10 }).toBe(2);
    expect((await drop(appId, "gone")).status).toBe(204);
    const [dropped, invalidate, ...more] = events(await stream.rest());
    expect(more).toEqual([]);
    expect(Object.keys(dropped)).toEqual(["_id", "operationType", "clusterTime", "wallTime", "ns"]);
    expect(dropped).toMatchObject({ operationType: "drop", ns: { db: "db", coll: "gone" } });
    // The invalidate has the drop's times and a token of its own.
    expect(Object.keys(invalidate)).toEqual(["_id", "operationType", "clusterTime", "wallTime"]);
    expect(invalidate).toMatchObject({
      operationType: "invalidate",
      clusterTime: dropped.clusterTime,
      wallTime: dropped.wallTime,
    });
    expect(invalidate._id._data).toEqual(expect.any(String));
    expect(invalidate._id).not.toEqual(dropped._id);
    await expect.poll(() => watchers(appId), { timeout: 5000, interval: 10 }).toBe(1);
    await insert(appId, token, "stays", { n: 2 });
    expect(events([await other.next()])[0]).toMatchObject({ operationType: "insert", ns: { coll: "stays" } });
    other.close();
  });

  it("ends the stream without the events its filter or ids leave out", async () => {
    const { appId, token } = await setup();
    await insert(appId, token, "filtered", { _id: "x" });
    const inserts = await open(appId, token, {
      database: "db",
      collection: "filtered",
      filter: { operationType: "insert" },
    });
    const byIds = await open(appId, token, { database: "db", collection: "filtered", ids: ["x"] });
    const ending = await open(appId, token, {
      database: "db",
      collection: "filtered",
      filter: { operationType: "invalidate" },
    });
    await expect.poll(() => watchers(appId), { timeout: 5000, interval: 10 }).toBe(3);
    await drop(appId, "filtered");
    expect(await inserts.rest()).toEqual([]);
    expect(await byIds.rest()).toEqual([]);
    expect(events(await ending.rest()).map((e) => e.operationType)).toEqual(["invalidate"]);
  });

  it("sends nothing when the dropped collection did not exist, and the stream goes on", async () => {
    const { appId, token } = await setup();
    const stream = await open(appId, token, { database: "db", collection: "never" });
    expect((await drop(appId, "never")).status).toBe(204);
    await insert(appId, token, "never", { n: 1 });
    expect(events([await stream.next()])[0].operationType).toBe("insert");
    stream.close();
  });

  it("streams a drop to a user whose rules let them read only their own documents", async () => {
    const { appId, token, userId } = await setup();
    await json(`/api/client/v2.0/app/${appId}/functions/call`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify({
        name: "insertOne",
        arguments: [{ database: "notes-app", collection: "notes", document: { owner_id: userId, title: "t" } }],
        service: "mongodb-atlas",
      }),
    });
    const stream = await open(appId, token, { database: "notes-app", collection: "notes" });
    await drop(appId, "notes", "notes-app");
    expect(events(await stream.rest()).map((e) => e.operationType)).toEqual(["drop", "invalidate"]);
  });

  it("streams $out's rename of its temporary collection over the target, then invalidate", async () => {
    const { appId, token } = await setup();
    await insert(appId, token, "source", { n: 1 });
    const stream = await open(appId, token, { database: "db", collection: "report" });
    const system = new MongoService((await app.emulator.apps.get(appId))!, { kind: "system" });
    await system.run("aggregate", { database: "db", collection: "source", pipeline: [{ $out: "report" }] });
    const [renamed, invalidate, ...more] = events(await stream.rest());
    expect(more).toEqual([]);
    expect(Object.keys(renamed)).toEqual(["_id", "operationType", "clusterTime", "wallTime", "ns", "to"]);
    expect(renamed).toMatchObject({
      operationType: "rename",
      ns: { db: "db", coll: expect.stringMatching(/^tmp\.agg_out\.[0-9a-f-]{36}$/) },
      to: { db: "db", coll: "report" },
    });
    expect(invalidate).toMatchObject({ operationType: "invalidate", clusterTime: renamed.clusterTime });
  });
});
