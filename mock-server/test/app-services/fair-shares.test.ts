/**
 * What one user may take of what the app's users share (config `limits`,
 * docs/decisions/0018-fair-shares.md): documents and their bytes per user, lower for anonymous
 * users, anonymous users' share of the app together, writes a second; MongoDB's 16 MiB limit on
 * one document. A document counts for the user who last wrote it. Each refusal is the documented
 * error and leaves nothing behind, and one user at its limits leaves the others' writes working;
 * on PostgreSQL the same holds across two instances on one database.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  anonymousLogin,
  base,
  call,
  emailUser,
  expectWindowRefusal,
  insertOneCall,
  mongoAction,
  newOpenApp,
  racing,
  secondInstance,
  storedDocuments,
  tally,
  testApp,
} from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

const action = (appId: string, token: string, name: string, argument: Record<string, unknown>) =>
  mongoAction(app, appId, token, name, { database: "d", collection: "c", ...argument });
const insert = (appId: string, token: string, document: Record<string, unknown>, collection = "c") =>
  action(appId, token, "insertOne", { collection, document });
const countAll = async (appId: string, token: string) =>
  Number((await action(appId, token, "count", { query: {} })).body.$numberLong);

describe("documents per user", () => {
  it("refuses a user's insert past its limit, anonymous users' past theirs; the others go on writing", async () => {
    const appId = await newOpenApp(app, { limits: { documentsPerUser: 3, documentsPerAnonymousUser: 2 } });
    const ada = (await emailUser(app, appId, "ada@example.com")).access_token;
    const bob = (await emailUser(app, appId, "bob@example.com")).access_token;
    const guest = (await anonymousLogin(app, appId)).access_token;
    expect((await action(appId, ada, "insertMany", { documents: [{ n: 1 }, { n: 2 }] })).response.statusCode).toBe(200);
    // Another collection of the app counts too, and a batch that would pass the limit writes nothing.
    const many = await action(appId, ada, "insertMany", { collection: "other", documents: [{ n: 3 }, { n: 4 }] });
    expect(many.response.statusCode).toBe(400);
    expect(many.body).toMatchObject({
      error: "maximum number of documents per user (3) reached",
      error_code: "MongoDBError",
    });
    expect((await insert(appId, ada, { n: 3 }, "other")).response.statusCode).toBe(200);
    const past = await insert(appId, ada, { n: 4 });
    expect(past.body.error).toBe("maximum number of documents per user (3) reached");
    const upsert = await action(appId, ada, "updateOne", { query: { n: 9 }, update: { $set: { m: 1 } }, upsert: true });
    expect(upsert.body.error).toBe("maximum number of documents per user (3) reached");
    // Updates of its own documents go on, and inserts once one is deleted.
    expect((await action(appId, ada, "updateMany", { query: {}, update: { $set: { seen: true } } })).body).toEqual({
      matchedCount: { $numberInt: "2" },
      modifiedCount: { $numberInt: "2" },
    });
    await action(appId, ada, "deleteOne", { query: { n: 1 } });
    expect((await insert(appId, ada, { n: 5 })).response.statusCode).toBe(200);
    // Everyone else writes as before.
    expect(
      (await action(appId, bob, "insertMany", { documents: [{ b: 1 }, { b: 2 }, { b: 3 }] })).response.statusCode,
    ).toBe(200);
    expect((await insert(appId, guest, { g: 1 })).response.statusCode).toBe(200);
    expect((await insert(appId, guest, { g: 2 })).response.statusCode).toBe(200);
    const anonymousPast = await insert(appId, guest, { g: 3 });
    expect(anonymousPast.body).toMatchObject({
      error: "maximum number of documents per anonymous user (2) reached",
      error_code: "MongoDBError",
    });
    // In `c`: two of Ada's, three of Bob's, two of the guest's.
    expect(await countAll(appId, bob)).toBe(7);
  });

  it("counts a document for the user who last wrote it; documents the system wrote count for no one", async () => {
    const appId = await newOpenApp(app, { limits: { documentsPerUser: 2 } });
    const ada = (await emailUser(app, appId, "ada@example.com")).access_token;
    const bob = (await emailUser(app, appId, "bob@example.com")).access_token;
    await insert(appId, ada, { _id: "a1" });
    await insert(appId, ada, { _id: "a2" });
    expect((await insert(appId, ada, { _id: "a3" })).body.error).toBe(
      "maximum number of documents per user (2) reached",
    );
    // Bob changes one of Ada's: it counts for Bob now, and Ada has room for one more.
    expect(
      (await action(appId, bob, "updateOne", { query: { _id: "a1" }, update: { $set: { by: "bob" } } })).body,
    ).toMatchObject({
      modifiedCount: { $numberInt: "1" },
    });
    expect((await insert(appId, ada, { _id: "a3" })).response.statusCode).toBe(200);
    await insert(appId, bob, { _id: "b1" });
    const full = await action(appId, bob, "updateOne", { query: { _id: "a2" }, update: { $set: { by: "bob" } } });
    expect(full.body.error).toBe("maximum number of documents per user (2) reached");
    // A change that writes nothing moves nothing.
    expect(
      (await action(appId, bob, "updateOne", { query: { _id: "a2" }, update: { $set: {} } })).response.statusCode,
    ).toBe(200);
    // Seeded by the control API: the system's, no user's.
    const seeded = await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/d/c`,
      payload: { documents: [{ s: 1 }, { s: 2 }, { s: 3 }] },
    });
    expect(seeded.response.statusCode).toBe(201);
    const carol = (await emailUser(app, appId, "carol@example.com")).access_token;
    expect((await insert(appId, carol, { c: 1 })).response.statusCode).toBe(200);
  });

  it("caps a user's bytes, and a growing update past them; a shrinking one goes through", async () => {
    const appId = await newOpenApp(app, { limits: { documentBytesPerUser: 400, documentBytesPerAnonymousUser: 200 } });
    const ada = (await emailUser(app, appId, "ada@example.com")).access_token;
    const filler = (n: number) => "x".repeat(n);
    expect((await insert(appId, ada, { _id: "a", text: filler(150) })).response.statusCode).toBe(200);
    const big = await insert(appId, ada, { _id: "b", text: filler(300) });
    expect(big.body).toMatchObject({
      error: "maximum size of documents per user (400 bytes) reached",
      error_code: "MongoDBError",
    });
    const grow = await action(appId, ada, "updateOne", {
      query: { _id: "a" },
      update: { $set: { text: filler(500) } },
    });
    expect(grow.body.error).toBe("maximum size of documents per user (400 bytes) reached");
    expect((await action(appId, ada, "findOne", { query: { _id: "a" } })).body.text).toHaveLength(150);
    expect(
      (await action(appId, ada, "updateOne", { query: { _id: "a" }, update: { $set: { text: "y" } } })).response
        .statusCode,
    ).toBe(200);
    expect((await insert(appId, ada, { _id: "b", text: filler(300) })).response.statusCode).toBe(200);
    const guest = (await anonymousLogin(app, appId)).access_token;
    expect((await insert(appId, guest, { _id: "g", text: filler(300) })).body.error).toBe(
      "maximum size of documents per anonymous user (200 bytes) reached",
    );
  });
});

describe("anonymous users together", () => {
  it("hold at most their share of the app: anonymous writes stop there, the other users' go on", async () => {
    const appId = await newOpenApp(app, {
      limits: { documents: 10, anonymousDocuments: 3, documentsPerAnonymousUser: 2 },
    });
    const one = (await anonymousLogin(app, appId)).access_token;
    const two = (await anonymousLogin(app, appId)).access_token;
    expect((await action(appId, one, "insertMany", { documents: [{ n: 1 }, { n: 2 }] })).response.statusCode).toBe(200);
    expect((await insert(appId, two, { n: 3 })).response.statusCode).toBe(200);
    expect((await insert(appId, two, { n: 4 })).body).toMatchObject({
      error: "maximum number of documents of anonymous users (3) reached",
      error_code: "MongoDBError",
    });
    const three = (await anonymousLogin(app, appId)).access_token;
    expect((await insert(appId, three, { n: 5 })).body.error).toBe(
      "maximum number of documents of anonymous users (3) reached",
    );
    const ada = (await emailUser(app, appId, "ada@example.com")).access_token;
    for (let i = 0; i < 5; i++) expect((await insert(appId, ada, { a: i })).response.statusCode).toBe(200);
    expect(await countAll(appId, ada)).toBe(8);
  });

  it("takes half of the app's documents and bytes when not set", async () => {
    const appId = await newOpenApp(app, { limits: { documents: 4, documentsPerAnonymousUser: 100 } });
    const guest = (await anonymousLogin(app, appId)).access_token;
    expect((await action(appId, guest, "insertMany", { documents: [{ n: 1 }, { n: 2 }] })).response.statusCode).toBe(
      200,
    );
    expect((await insert(appId, guest, { n: 3 })).body.error).toBe(
      "maximum number of documents of anonymous users (2) reached",
    );
  });
});

describe("writes a second", () => {
  it("lets one action spend the allowance, refuses the next write until it refills (429), and others write meanwhile", async () => {
    const appId = await newOpenApp(app, { limits: { writesPerSecondPerUser: 3, writesPerSecondPerAnonymousUser: 1 } });
    const ada = (await emailUser(app, appId, "ada@example.com")).access_token;
    const bob = (await emailUser(app, appId, "bob@example.com")).access_token;
    const documents = Array.from({ length: 6 }, (_, i) => ({ i }));
    expect((await action(appId, ada, "insertMany", { documents })).response.statusCode).toBe(200);
    const refused = await insert(appId, ada, { late: true });
    expect(refused.response.statusCode).toBe(429);
    expect(refused.body).toMatchObject({
      error: "too many writes: a user may write 3 documents a second",
      error_code: "TooManyRequests",
    });
    expect(
      (await action(appId, ada, "updateMany", { query: {}, update: { $set: { x: 1 } } })).response.statusCode,
    ).toBe(429);
    // Reads and deletes are not writes that count.
    expect(await countAll(appId, ada)).toBe(6);
    expect((await action(appId, ada, "deleteOne", { query: { i: 0 } })).response.statusCode).toBe(200);
    expect((await insert(appId, bob, { bob: true })).response.statusCode).toBe(200);
    // Six documents at three a second: room again within about two seconds.
    await expect
      .poll(async () => (await insert(appId, ada, { late: true })).response.statusCode, {
        timeout: 6_000,
        interval: 250,
      })
      .toBe(200);
    const guest = (await anonymousLogin(app, appId)).access_token;
    expect((await insert(appId, guest, { g: 1 })).response.statusCode).toBe(200);
    expect((await insert(appId, guest, { g: 2 })).body.error).toBe(
      "too many writes: an anonymous user may write 1 documents a second",
    );
    // Ada's six, less the deleted one, and the late one; Bob's; the guest's.
    expect(await countAll(appId, bob)).toBe(8);
  });
});

describe("MongoDB's 16 MiB document limit", () => {
  it("refuses a 17 MB document and an update past 16 MiB with MongoDB's texts, and keeps what was there", async () => {
    // (The size refusals, not the time limit: writing 18 MB takes 1.5 s of the default 2 s on a
    // slow host alone, past it beside other work.)
    const appId = await newOpenApp(app, {
      limits: { documentBytesPerUser: 64 * 1024 * 1024 },
      queryTimeoutMs: 60_000,
    });
    const ada = (await emailUser(app, appId, "ada@example.com")).access_token;
    const huge = "x".repeat(17 * 1000 * 1000);
    const refused = await insert(appId, ada, { _id: "big", text: huge });
    expect(refused.response.statusCode).toBe(400);
    expect(refused.body).toMatchObject({
      error: expect.stringMatching(/^object to insert too large\. size in bytes: 170000\d\d, max size: 16777216$/),
      error_code: "MongoDBError",
    });
    // An insertMany stops there, keeping the documents before it (MongoDB's ordered insert).
    const many = await action(appId, ada, "insertMany", {
      documents: [{ _id: "first" }, { _id: "big", text: huge }, { _id: "after" }],
    });
    expect(many.body.error).toMatch(/^object to insert too large/);
    expect(await countAll(appId, ada)).toBe(1);
    const half = "y".repeat(9 * 1000 * 1000);
    expect((await insert(appId, ada, { _id: "grows", a: half })).response.statusCode).toBe(200);
    const grow = await action(appId, ada, "updateOne", { query: { _id: "grows" }, update: { $set: { b: half } } });
    expect(grow.body).toMatchObject({
      error: "Resulting document after update is larger than 16777216",
      error_code: "MongoDBError",
    });
    const replace = await action(appId, ada, "findOneAndReplace", {
      filter: { _id: "grows" },
      update: { a: half, b: half },
    });
    expect(replace.body.error).toBe("Resulting document after update is larger than 16777216");
    const found = await action(appId, ada, "findOne", { query: { _id: "grows" }, project: { b: 1 } });
    expect(found.body).toEqual({ _id: "grows" });
  });
});

describe("anonymous users per address", () => {
  it("refuses a client address's anonymous login past its users a day (429, Retry-After); others go on", async () => {
    const appId = await newOpenApp(app, { limits: { anonymousUsersPerAddress: 3 } });
    // Counted by every instance together (with PostgreSQL: two instances on one database).
    const { other, close } = await secondInstance(app);
    const login = (remoteAddress: string, on = app) =>
      call(on, "login", {
        method: "POST",
        url: `${base}/app/${appId}/auth/providers/anon-user/login`,
        payload: {},
        remoteAddress,
      });
    try {
      for (let i = 0; i < 3; i++) expect((await login("10.1.0.1", i % 2 ? other : app)).response.statusCode).toBe(200);
      expect((await login("10.1.0.1", other)).response.statusCode).toBe(429);
    } finally {
      await close();
    }
    expectWindowRefusal(await login("10.1.0.1"), "too many anonymous users: one address may create 3 a day", 86_400);
    // Another address, and other providers from the same one, are not held to it.
    expect((await login("10.1.0.2")).response.statusCode).toBe(200);
    await emailUser(app, appId, "ada@example.com");
    const { body: list } = await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` });
    expect(list.users).toHaveLength(5);
  });
});

describe("state", () => {
  it("exports whom documents count for, and an import keeps counting them", async () => {
    // An emulator of its own: the export and the import hold this test's app only.
    const own = await testApp();
    try {
      const appId = await newOpenApp(own, { limits: { documentsPerUser: 2 } });
      const write = (token: string, _id: string) =>
        mongoAction(own, appId, token, "insertOne", { database: "d", collection: "c", document: { _id } });
      const ada = await emailUser(own, appId, "ada@example.com", "ada-password");
      await write(ada.access_token, "a1");
      await write(ada.access_token, "a2");
      await call(own, "insertDocuments", {
        method: "POST",
        url: `/_mock/v1/apps/${appId}/data/d/c`,
        payload: { documents: [{ _id: "s" }] },
      });
      const { body: state } = await call(own, "exportState", { method: "GET", url: "/_mock/v1/state" });
      const saved = state.apps.find((a: { appId: string }) => a.appId === appId);
      expect(saved.collections[0].owners).toEqual([{ userId: ada.user_id, anonymous: false, documents: [0, 1] }]);
      const imported = await call(own, "importState", { method: "PUT", url: "/_mock/v1/state", payload: state });
      expect(imported.response.statusCode).toBe(204);
      const again = await call(own, "login", {
        method: "POST",
        url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
        payload: { username: "ada@example.com", password: "ada-password" },
      });
      const past = await write(again.body.access_token, "a3");
      expect(past.body.error).toBe("maximum number of documents per user (2) reached");
      // A place named twice is refused, nothing changed.
      saved.collections[0].owners = [{ userId: "x", anonymous: true, documents: [0, 0] }];
      const bad = await call(own, "importState", { method: "PUT", url: "/_mock/v1/state", payload: state });
      expect(bad.response.statusCode).toBe(400);
    } finally {
      await own.close();
    }
  });
});

describe("racing writes of one user", () => {
  it("of 24 inserts racing for 5 places of one user (on two instances with PostgreSQL), exactly 5 are stored", async () => {
    const appId = await newOpenApp(app, { limits: { documentsPerUser: 5 } });
    const ada = (await emailUser(app, appId, "ada@example.com")).access_token;
    const bob = (await emailUser(app, appId, "bob@example.com")).access_token;
    const { other, close } = await secondInstance(app);
    try {
      const statuses = await racing([other, app], 24, (i) => insertOneCall(appId, ada, { i }, i % 3 ? "c" : "other"));
      expect(tally(statuses)).toEqual({ 200: 5, 400: 19 });
      expect(await storedDocuments(app, appId)).toBe(5);
      expect((await insert(appId, bob, { bob: true })).response.statusCode).toBe(200);
    } finally {
      await close();
    }
  });
});
