/**
 * The app's limits (config `limits`, docs/decisions/0012-quotas.md): users of every provider and
 * unclaimed registrations, sessions per user (the oldest end), documents and their bytes summed over
 * the app's collections, and the collections. Each refusal is the documented error and leaves
 * nothing behind; racing writes at the limit (on one instance, and with PostgreSQL on two) leave
 * exactly the limit.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  anonymousLogin,
  base,
  bearer,
  call,
  insertOneCall,
  mongoAction,
  newApp,
  openData,
  racing,
  secondInstance,
  storedDocuments,
  tally,
  testApp,
} from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
});
afterAll(() => app.close());

const login = (appId: string, provider = "anon-user", payload: Record<string, unknown> = {}) =>
  call(app, "login", { method: "POST", url: `${base}/app/${appId}/auth/providers/${provider}/login`, payload });
const usersOf = async (appId: string) =>
  (await call(app, "getApp", { method: "GET", url: `/_mock/v1/apps/${appId}` })).body.users as number;
const seedUser = (appId: string, email: string, confirmed = true) =>
  call(app, "createUser", {
    method: "POST",
    url: `/_mock/v1/apps/${appId}/users`,
    payload: { email, password: "secret-1", confirmed },
  });

describe("users", () => {
  it("refuses a login that would create a user past the limit, anonymous or not, and a registration", async () => {
    const appId = await newApp(app, {
      limits: { users: 3 },
      providers: { "local-userpass": { autoConfirm: true } },
    });
    for (let i = 0; i < 3; i++) expect((await login(appId)).response.statusCode).toBe(200);
    const refused = await login(appId);
    expect(refused.response.statusCode).toBe(403);
    expect(refused.body).toMatchObject({
      error: "maximum number of users (3) reached",
      error_code: "InvalidParameter",
    });
    const register = await call(app, "registerUser", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/register`,
      payload: { email: "late@example.com", password: "secret-1" },
    });
    expect(register.response.statusCode).toBe(403);
    expect(register.body.error).toBe("maximum number of users (3) reached");
    const seeded = await seedUser(appId, "seeded@example.com");
    expect(seeded.response.statusCode).toBe(409);
    expect(seeded.body).toMatchObject({ code: "Conflict", error: "maximum number of users (3) reached" });
    expect(await usersOf(appId)).toBe(3);
    // Room again once a user goes, and after a reset.
    const { body: list } = await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` });
    await call(app, "removeUser", { method: "DELETE", url: `/_mock/v1/apps/${appId}/users/${list.users[0].id}` });
    expect((await login(appId)).response.statusCode).toBe(200);
    expect((await login(appId)).response.statusCode).toBe(403);
    await call(app, "resetApp", { method: "POST", url: `/_mock/v1/apps/${appId}/reset` });
    for (let i = 0; i < 3; i++) expect((await login(appId)).response.statusCode).toBe(200);
    expect((await login(appId)).response.statusCode).toBe(403);
  });

  it("counts registrations, and lets a registration's first login take its own place", async () => {
    const appId = await newApp(app, { limits: { users: 2 } });
    expect((await seedUser(appId, "pending@example.com", false)).response.statusCode).toBe(201);
    expect((await login(appId)).response.statusCode).toBe(200);
    // Full: a pending registration counts as a user.
    expect((await login(appId)).response.statusCode).toBe(403);
    const { body: list } = await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` });
    const pending = list.users.find((u: { email?: string }) => u.email === "pending@example.com");
    await call(app, "confirmPendingUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users/${pending.id}/confirm`,
    });
    const first = await login(appId, "local-userpass", { username: "pending@example.com", password: "secret-1" });
    expect(first.response.statusCode).toBe(200);
    expect(await usersOf(appId)).toBe(2);
  });
});

describe("sessions per user", () => {
  it("ends the user's oldest sessions past the limit; logins are never refused for it", async () => {
    const appId = await newApp(app, { limits: { sessionsPerUser: 2 } });
    expect((await seedUser(appId, "many@example.com")).response.statusCode).toBe(201);
    const tokens: string[] = [];
    for (let i = 0; i < 4; i++) {
      const { response, body } = await login(appId, "local-userpass", {
        username: "many@example.com",
        password: "secret-1",
      });
      expect(response.statusCode).toBe(200);
      tokens.push(body.refresh_token);
    }
    const refresh = (token: string) =>
      call(app, "refreshAccessToken", { method: "POST", url: `${base}/auth/session`, headers: bearer(token) });
    const statuses = [];
    for (const token of tokens) statuses.push((await refresh(token)).response.statusCode);
    expect(statuses).toEqual([401, 401, 201, 201]);
    expect((await refresh(tokens[0]!)).body.error).toBe("invalid session: failed to find refresh token");
  });

  it("keeps the newest sessions up to the limit through logins far from it and near it", async () => {
    const appId = await newApp(app, { limits: { sessionsPerUser: 20 } });
    const seeded = await seedUser(appId, "steady@example.com");
    for (let i = 0; i < 26; i++) {
      const { response } = await login(appId, "local-userpass", {
        username: "steady@example.com",
        password: "secret-1",
      });
      expect(response.statusCode).toBe(200);
      const { body } = await call(app, "getUser", {
        method: "GET",
        url: `/_mock/v1/apps/${appId}/users/${seeded.body.id}`,
      });
      expect(body.sessions).toHaveLength(Math.min(i + 1, 20));
    }
  });

  it("keeps exactly the limit when logins of one user race", async () => {
    const appId = await newApp(app, { limits: { sessionsPerUser: 3 } });
    expect((await seedUser(appId, "racer@example.com")).response.statusCode).toBe(201);
    const logins = await Promise.all(
      Array.from({ length: 12 }, () =>
        login(appId, "local-userpass", { username: "racer@example.com", password: "secret-1" }),
      ),
    );
    expect(logins.map((l) => l.response.statusCode)).toEqual(Array(12).fill(200));
    const { body: list } = await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` });
    expect(list.users[0].sessions).toHaveLength(3);
  });
});

describe("documents", () => {
  const action = async (appId: string, token: string, name: string, argument: Record<string, unknown>) =>
    mongoAction(app, appId, token, name, { database: "d", collection: "c", ...argument });

  it("caps the documents summed over collections; a refused write writes nothing", async () => {
    // (The anonymous writer's share of the app, half of it by default, is set apart: decision 0018.)
    const appId = await newApp(app, { ...openData, limits: { documents: 3, anonymousDocuments: 3 } });
    const { access_token: token } = await anonymousLogin(app, appId);
    expect((await action(appId, token, "insertMany", { documents: [{ n: 1 }, { n: 2 }] })).response.statusCode).toBe(
      200,
    );
    const many = await action(appId, token, "insertMany", { documents: [{ n: 3 }, { n: 4 }] });
    expect(many.response.statusCode).toBe(400);
    expect(many.body).toMatchObject({ error: "maximum number of documents (3) reached", error_code: "MongoDBError" });
    expect((await action(appId, token, "count", { query: {} })).body).toEqual({ $numberLong: "2" });
    expect((await action(appId, token, "insertOne", { document: { n: 3 } })).response.statusCode).toBe(200);
    // Another collection of the app: the same total.
    const elsewhere = await action(appId, token, "insertOne", { collection: "other", document: { n: 4 } });
    expect(elsewhere.body.error).toBe("maximum number of documents (3) reached");
    const upsert = await action(appId, token, "updateOne", {
      query: { n: 9 },
      update: { $set: { m: 1 } },
      upsert: true,
    });
    expect(upsert.body.error).toBe("maximum number of documents (3) reached");
    // Updates of existing documents, and inserts once some are deleted, go on.
    expect((await action(appId, token, "updateMany", { query: {}, update: { $set: { seen: true } } })).body).toEqual({
      matchedCount: { $numberInt: "3" },
      modifiedCount: { $numberInt: "3" },
    });
    await action(appId, token, "deleteOne", { query: { n: 1 } });
    expect(
      (await action(appId, token, "insertOne", { collection: "other", document: { n: 4 } })).response.statusCode,
    ).toBe(200);
    // The control API's seeding is held to the same limit (409, nothing inserted).
    const seeded = await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/d/c`,
      payload: { documents: [{ n: 5 }] },
    });
    expect(seeded.response.statusCode).toBe(409);
    expect(seeded.body.error).toBe("maximum number of documents (3) reached");
  });

  it("counts a dropped collection's documents no more, the app's nor their writer's", async () => {
    const appId = await newApp(app, {
      ...openData,
      limits: { documents: 4, anonymousDocuments: 4, documentsPerAnonymousUser: 3 },
    });
    const { access_token: token } = await anonymousLogin(app, appId);
    expect(
      (await action(appId, token, "insertMany", { documents: [{ n: 1 }, { n: 2 }, { n: 3 }] })).response.statusCode,
    ).toBe(200);
    const mine = await action(appId, token, "insertOne", { collection: "other", document: { n: 4 } });
    expect(mine.body.error).toBe("maximum number of documents per anonymous user (3) reached");
    const seeded = await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/d/seeded`,
      payload: { documents: [{ n: 5 }] },
    });
    expect(seeded.response.statusCode).toBe(201);
    expect(
      (await call(app, "dropCollection", { method: "DELETE", url: `/_mock/v1/apps/${appId}/data/d/c` })).response
        .statusCode,
    ).toBe(204);
    expect(
      (await action(appId, token, "insertMany", { documents: [{ n: 6 }, { n: 7 }, { n: 8 }] })).response.statusCode,
    ).toBe(200);
    const full = await action(appId, token, "insertOne", { collection: "other", document: { n: 9 } });
    expect(full.body.error).toBe("maximum number of documents (4) reached");
  });

  it("caps their bytes: an insert or an update that grows past the limit is refused, a shrinking one is not", async () => {
    const appId = await newApp(app, { ...openData, limits: { documentBytes: 400, anonymousDocumentBytes: 400 } });
    const { access_token: token } = await anonymousLogin(app, appId);
    const filler = (n: number) => "x".repeat(n);
    expect(
      (await action(appId, token, "insertOne", { document: { _id: "a", text: filler(150) } })).response.statusCode,
    ).toBe(200);
    const big = await action(appId, token, "insertOne", { document: { _id: "b", text: filler(300) } });
    expect(big.body).toMatchObject({
      error: "maximum size of documents (400 bytes) reached",
      error_code: "MongoDBError",
    });
    const grow = await action(appId, token, "updateOne", {
      query: { _id: "a" },
      update: { $set: { text: filler(500) } },
    });
    expect(grow.body.error).toBe("maximum size of documents (400 bytes) reached");
    const found = await action(appId, token, "findOne", { query: { _id: "a" } });
    expect(found.body.text).toHaveLength(150);
    expect(
      (await action(appId, token, "updateOne", { query: { _id: "a" }, update: { $set: { text: "y" } } })).response
        .statusCode,
    ).toBe(200);
    expect(
      (await action(appId, token, "insertOne", { document: { _id: "b", text: filler(300) } })).response.statusCode,
    ).toBe(200);
  });
});

describe("collections", () => {
  const insert = (appId: string, token: string, collection: string, document: Record<string, unknown>) =>
    mongoAction(app, appId, token, "insertOne", { database: "d", collection, document });
  const names = async (appId: string) =>
    (await call(app, "listCollections", { method: "GET", url: `/_mock/v1/apps/${appId}/data` })).body.collections
      .map((c: { collection: string }) => c.collection)
      .sort();

  it("caps the collections an app holds, empty ones too; a refused write writes nothing; a drop frees a place", async () => {
    const appId = await newApp(app, { ...openData, limits: { collections: 2 } });
    const { access_token: token } = await anonymousLogin(app, appId);
    for (const collection of ["a", "b"])
      expect((await insert(appId, token, collection, { n: 1 })).response.statusCode).toBe(200);
    // An emptied collection is still there (as in MongoDB), and counts.
    await mongoAction(app, appId, token, "deleteMany", { database: "d", collection: "b", query: {} });
    const refused = await insert(appId, token, "c", { n: 1 });
    expect([refused.response.statusCode, refused.body]).toMatchObject([
      400,
      { error: "cannot create a new collection -- already using 2 collections of 2", error_code: "MongoDBError" },
    ]);
    const upsert = await mongoAction(app, appId, token, "updateOne", {
      database: "d",
      collection: "c",
      query: { n: 1 },
      update: { $set: { m: 1 } },
      upsert: true,
    });
    expect(upsert.body.error).toBe("cannot create a new collection -- already using 2 collections of 2");
    expect(await names(appId)).toEqual(["a", "b"]);
    // Writes to the collections there are go on; the control API's seeding is held to the limit (409).
    expect((await insert(appId, token, "b", { n: 2 })).response.statusCode).toBe(200);
    const seeded = await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/d/c`,
      payload: { documents: [{ n: 5 }] },
    });
    expect([seeded.response.statusCode, seeded.body.error]).toEqual([
      409,
      "cannot create a new collection -- already using 2 collections of 2",
    ]);
    const drop = await call(app, "dropCollection", { method: "DELETE", url: `/_mock/v1/apps/${appId}/data/d/a` });
    expect(drop.response.statusCode).toBe(204);
    expect((await insert(appId, token, "c", { n: 1 })).response.statusCode).toBe(200);
    expect(await names(appId)).toEqual(["b", "c"]);
  });

  it("refuses a transaction that would make more than the places left, keeping none of it", async () => {
    const source = `exports = async () => {
      const client = context.services.get("mongodb-atlas");
      const session = client.startSession();
      try {
        await session.withTransaction(async () => {
          await client.db("d").collection("x").insertOne({ n: 1 }, { session });
          await client.db("d").collection("y").insertOne({ n: 2 }, { session });
        });
        return "committed";
      } catch (error) {
        return error.message;
      } finally {
        await session.endSession();
      }
    }`;
    const appId = await newApp(app, {
      ...openData,
      limits: { collections: 2 },
      functions: { both: { source, runAsSystem: true } },
    });
    const { access_token: token } = await anonymousLogin(app, appId);
    await insert(appId, token, "a", { n: 1 });
    const answer = await call(app, "callFunction", {
      method: "POST",
      url: `${base}/app/${appId}/functions/call`,
      headers: bearer(token),
      payload: { name: "both", arguments: [] },
    });
    expect(answer.body).toBe("cannot create a new collection -- already using 2 collections of 2");
    expect(await names(appId)).toEqual(["a"]);
  });

  it("says how many the app holds when its limit was lowered below them", async () => {
    const appId = await newApp(app, { ...openData });
    const { access_token: token } = await anonymousLogin(app, appId);
    for (const collection of ["a", "b", "c"]) await insert(appId, token, collection, { n: 1 });
    await app.emulator.apps.upsert({ appId, overrides: { ...openData, limits: { collections: 2 } } });
    const refused = await insert(appId, token, "d", { n: 1 });
    expect(refused.body.error).toBe("cannot create a new collection -- already using 3 collections of 2");
  });
});

describe("racing writes at the limit", () => {
  /** A second instance on the same store (PostgreSQL), or the same one (memory: one process). */
  async function instances(): Promise<[FastifyInstance, FastifyInstance, () => Promise<void>]> {
    const { other, close } = await secondInstance(app);
    return [app, other, close];
  }

  it("users: of 24 first logins racing for 5 places, exactly 5 get in", async () => {
    const appId = await newApp(app, { limits: { users: 5 } });
    const [one, two, close] = await instances();
    try {
      const statuses = await racing([one, two], 24, () => ({
        method: "POST",
        url: `${base}/app/${appId}/auth/providers/anon-user/login`,
        payload: {},
      }));
      expect(tally(statuses)).toEqual({ 200: 5, 403: 19 });
      expect(await usersOf(appId)).toBe(5);
    } finally {
      await close();
    }
  });

  it("documents: of 30 inserts racing for 10 places, in two collections, exactly 10 are stored", async () => {
    const appId = await newApp(app, { ...openData, limits: { documents: 10, anonymousDocuments: 10 } });
    const { access_token: token } = await anonymousLogin(app, appId);
    const [one, two, close] = await instances();
    try {
      const statuses = await racing([one, two], 30, (i) => insertOneCall(appId, token, { i }, i % 3 ? "c" : "other"));
      expect(tally(statuses)).toEqual({ 200: 10, 400: 20 });
      expect(await storedDocuments(app, appId)).toBe(10);
    } finally {
      await close();
    }
  });

  it("collections: of 12 inserts racing to make 12 collections for 3 places, exactly 3 are made", async () => {
    const appId = await newApp(app, { ...openData, limits: { collections: 3 } });
    const { access_token: token } = await anonymousLogin(app, appId);
    const [one, two, close] = await instances();
    try {
      const statuses = await racing([one, two], 12, (i) => insertOneCall(appId, token, { i }, `c${i}`));
      expect(tally(statuses)).toEqual({ 200: 3, 400: 9 });
      const { body } = await call(app, "listCollections", { method: "GET", url: `/_mock/v1/apps/${appId}/data` });
      expect(body.collections).toHaveLength(3);
      expect(await storedDocuments(app, appId)).toBe(3);
    } finally {
      await close();
    }
  });

  it("documents: writers far from the limit, at once on two instances, are counted exactly", async () => {
    const appId = await newApp(app, { ...openData, limits: { documents: 1_000_000 } });
    const { access_token: token } = await anonymousLogin(app, appId);
    const insert = (on: FastifyInstance, i: number) => on.inject(insertOneCall(appId, token, { i }));
    const [one, two, close] = await instances();
    try {
      expect(tally(await racing([one, two], 80, (i) => insertOneCall(appId, token, { i })))).toEqual({ 200: 80 });
      // The limit brought down to what is stored: the count kept is exact, so the next insert is refused.
      await app.emulator.apps.upsert({
        appId,
        overrides: { ...openData, limits: { documents: 80, anonymousDocuments: 80 } },
      });
      const refused = await insert(one, 80);
      expect([refused.statusCode, refused.json().error]).toEqual([400, "maximum number of documents (80) reached"]);
      const deleted = await mongoAction(app, appId, token, "deleteOne", {
        database: "d",
        collection: "c",
        query: { i: 0 },
      });
      expect(deleted.body).toEqual({ deletedCount: { $numberInt: "1" } });
      expect((await insert(two, 81)).statusCode).toBe(200);
    } finally {
      await close();
    }
  });

  it("sessions: logins of one user on two instances keep exactly the limit", async () => {
    const appId = await newApp(app, { limits: { sessionsPerUser: 2 } });
    expect((await seedUser(appId, "both@example.com")).response.statusCode).toBe(201);
    const [one, two, close] = await instances();
    try {
      const statuses = await racing([one, two], 10, () => ({
        method: "POST",
        url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
        payload: { username: "both@example.com", password: "secret-1" },
      }));
      expect(tally(statuses)).toEqual({ 200: 10 });
      const { body: list } = await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` });
      expect(list.users[0].sessions).toHaveLength(2);
    } finally {
      await close();
    }
  });
});

describe("settings", () => {
  it("shows the app's limits in its config, and refuses bad ones", async () => {
    const appId = await newApp(app, { limits: { users: 7 } });
    const { body } = await call(app, "getApp", { method: "GET", url: `/_mock/v1/apps/${appId}` });
    expect(body.config.limits).toEqual({ users: 7 });
    const bad = await call(app, "createApp", {
      method: "POST",
      url: "/_mock/v1/apps",
      payload: { config: { limits: { sessionsPerUser: 0 } } },
    });
    expect(bad.response.statusCode).toBe(400);
  });

  it("restores a state import over an app's limits as it was, and holds later writes to them", async () => {
    const other = await testApp();
    try {
      const created = await call(other, "createApp", { method: "POST", url: "/_mock/v1/apps", payload: {} });
      const appId = created.body.appId as string;
      for (let i = 0; i < 3; i++) await anonymousLogin(other, appId);
      const { body: state } = await call(other, "exportState", { method: "GET", url: "/_mock/v1/state" });
      const saved = state.apps.find((a: { appId: string }) => a.appId === appId);
      saved.config.limits = { users: 1 };
      const imported = await call(other, "importState", { method: "PUT", url: "/_mock/v1/state", payload: state });
      expect(imported.response.statusCode).toBe(204);
      const { body } = await call(other, "getApp", { method: "GET", url: `/_mock/v1/apps/${appId}` });
      expect(body.users).toBe(3);
      const refused = await call(other, "login", {
        method: "POST",
        url: `${base}/app/${appId}/auth/providers/anon-user/login`,
        payload: {},
      });
      expect(refused.body.error).toBe("maximum number of users (1) reached");
    } finally {
      await other.close();
    }
  });
});
