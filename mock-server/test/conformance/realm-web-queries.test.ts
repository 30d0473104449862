/**
 * realm-web 2.0.1, unchanged, querying the emulator with regular expressions in each form an app
 * sends them (issue 17 point 1), upserting with an `_id` (issue 16 point 5), and UUID and Binary
 * values through a function.
 */
import type { FastifyInstance } from "fastify";
import * as Realm from "realm-web";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listening } from "../helpers/listen.ts";

let app: FastifyInstance;
let url: string;
let appCounter = 0;

beforeAll(async () => {
  ({ app, url } = await listening({ allowFunctionSource: true }));
});
afterAll(async () => {
  await app.close();
});

async function control(path: string, init: RequestInit = {}) {
  const response = await fetch(`${url}/_mock/v1${path}`, {
    ...init,
    headers: { "content-type": "application/json", ...init.headers },
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** A fresh app whose `conformance.notes` anyone may read and write, a user, and that collection. */
async function notes() {
  const appId = `realm-web-queries-${++appCounter}`;
  const { status } = await control("/apps", {
    method: "POST",
    body: JSON.stringify({ appId, config: { rules: { "conformance.notes": { read: true, write: true } } } }),
  });
  expect(status).toBe(201);
  const realm = new Realm.App({ id: appId, baseUrl: url });
  const user = await realm.logIn(Realm.Credentials.anonymous());
  const collection = user.mongoClient("mongodb-atlas").db("conformance").collection("notes");
  await collection.insertMany([
    { _id: 1, title: "hello world", body: "first\nsecond" },
    { _id: 2, title: "Hello there", body: "x" },
    { _id: 3, title: "goodbye", body: "y" },
  ]);
  return { appId, realm, collection };
}

const ids = (docs: { _id: unknown }[]) => docs.map((d) => d._id);

describe("realm-web 2.0.1: regular expressions and upserts", () => {
  it("a JavaScript RegExp (sent as $regularExpression), with its flags", async () => {
    const { collection } = await notes();
    expect(ids(await collection.find({ title: /^hel/ }))).toEqual([1]);
    expect(ids(await collection.find({ title: /^hel/i }, { sort: { _id: 1 } }))).toEqual([1, 2]);
    expect(ids(await collection.find({ body: /^second/m }))).toEqual([1]);
    expect(ids(await collection.find({ body: /first.second/s }))).toEqual([1]);
    expect(await collection.count({ title: /o/ })).toBe(3);
  });

  it("$regex with and without $options, and an explicit $regularExpression", async () => {
    const { collection } = await notes();
    expect(ids(await collection.find({ title: { $regex: "world$" } }))).toEqual([1]);
    expect(ids(await collection.find({ title: { $regex: "^HEL", $options: "i" } }, { sort: { _id: 1 } }))).toEqual([
      1, 2,
    ]);
    expect(ids(await collection.find({ title: { $regex: "g o o d # spaced out", $options: "x" } }))).toEqual([3]);
    expect(ids(await collection.find({ title: { $regularExpression: { pattern: "there$", options: "" } } }))).toEqual([
      2,
    ]);
  });

  it("$in and $nin with regular expressions, and $not", async () => {
    const { collection } = await notes();
    expect(ids(await collection.find({ title: { $in: [/^good/, "hello world"] } }, { sort: { _id: 1 } }))).toEqual([
      1, 3,
    ]);
    expect(ids(await collection.find({ title: { $nin: [/^h/i] } }))).toEqual([3]);
    expect(ids(await collection.find({ title: { $not: /^h/i } }))).toEqual([3]);
  });

  it("updates and deletes select with regular expressions", async () => {
    const { collection } = await notes();
    expect(await collection.updateMany({ title: /^hello/i }, { $set: { greeting: true } })).toEqual({
      matchedCount: 2,
      modifiedCount: 2,
    });
    expect(await collection.deleteOne({ title: { $regex: "bye$" } })).toEqual({ deletedCount: 1 });
    expect(await collection.count({})).toBe(2);
  });

  it("$regexMatch and $regexFind in an aggregation, with a RegExp as the regex", async () => {
    const { collection } = await notes();
    const out = await collection.aggregate([
      { $sort: { _id: 1 } },
      {
        $project: {
          m: { $regexMatch: { input: "$title", regex: /^h/i } },
          f: { $regexFind: { input: "$title", regex: "(o)(r)?" } },
        },
      },
    ]);
    expect(out[0]).toEqual({ _id: 1, m: true, f: { match: "o", idx: 4, captures: ["o", null] } });
    expect(out.map((d: { m: boolean }) => d.m)).toEqual([true, true, false]);
    expect(ids(await collection.find({ $expr: { $regexMatch: { input: "$title", regex: /bye$/ } } }))).toEqual([3]);
  });

  it("a watch() filter with a regular expression streams only the matching changes", async () => {
    const { appId, collection } = await notes();
    const stream = collection.watch({ filter: { "fullDocument.title": /^new/i } });
    const first = stream.next();
    await expect
      .poll(async () => (await control(`/apps/${appId}`)).body.watchers, { timeout: 5000, interval: 20 })
      .toBe(1);
    await collection.insertOne({ _id: 10, title: "old news" });
    await collection.insertOne({ _id: 11, title: "New note" });
    const { value: change } = await first;
    expect(change.fullDocument).toEqual({ _id: 11, title: "New note" });
    await stream.return(undefined);
  });

  it("an invalid pattern is refused with MongoDB's error", async () => {
    const { collection } = await notes();
    await expect(collection.find({ title: { $regex: "(" } })).rejects.toMatchObject({
      errorCode: "MongoDBError",
      error: expect.stringMatching(/^Regular expression is invalid/),
    });
  });

  it("upserts with the query's _id (string and ObjectId), as MongoDB does", async () => {
    const { collection } = await notes();
    expect(await collection.updateOne({ _id: "n-1" }, { $set: { title: "upserted" } }, { upsert: true })).toEqual({
      matchedCount: 0,
      modifiedCount: 0,
      upsertedId: "n-1",
    });
    expect(await collection.findOne({ _id: "n-1" })).toEqual({ _id: "n-1", title: "upserted" });
    const oid = new Realm.BSON.ObjectId();
    const result = await collection.updateOne(
      { _id: oid, kind: "k" },
      { $setOnInsert: { created: true }, $inc: { n: 1 } },
      { upsert: true },
    );
    expect(result.upsertedId?.toHexString()).toBe(oid.toHexString());
    expect(await collection.findOne({ _id: oid })).toEqual({ _id: oid, kind: "k", created: true, n: 1 });
    const replaced = await collection.findOneAndReplace(
      { _id: "n-2" },
      { title: "replaced" },
      { upsert: true, returnNewDocument: true },
    );
    expect(replaced).toEqual({ _id: "n-2", title: "replaced" });
  });

  it("UUID and Binary values as a function's arguments, stored by it and read back as BSON types", async () => {
    const appId = `realm-web-queries-${++appCounter}`;
    const keep = `exports = async (id, bytes) => {
      const files = context.services.get("mongodb-atlas").db("conformance").collection("files");
      await files.insertOne({ _id: id, bytes, size: bytes.length() });
      return files.findOne({ _id: id });
    };`;
    const { status } = await control("/apps", {
      method: "POST",
      body: JSON.stringify({
        appId,
        config: { functions: { keep: { source: keep } }, rules: { "conformance.files": { read: true, write: true } } },
      }),
    });
    expect(status).toBe(201);
    const user = await new Realm.App({ id: appId, baseUrl: url }).logIn(Realm.Credentials.anonymous());
    const id = new Realm.BSON.UUID();
    const bytes = new Realm.BSON.Binary(Buffer.from([0, 1, 2, 250, 255]));
    const kept = await user.functions.callFunction("keep", id, bytes);
    expect(kept._id).toBeInstanceOf(Realm.BSON.UUID);
    expect(kept._id.toHexString()).toBe(id.toHexString());
    expect(Buffer.from(kept.bytes.buffer).equals(Buffer.from([0, 1, 2, 250, 255]))).toBe(true);
    expect(kept.size).toBe(5);
    const files = user.mongoClient("mongodb-atlas").db("conformance").collection("files");
    expect((await files.findOne({ _id: id }))?.size).toBe(5);
  });
});
