/**
 * Round trips of sessions on PostgreSQL: a refresh token's request reads its session and its user
 * from the database (a session ended on any instance is refused at once: decision 0020), both in
 * one round trip, a refresh with them the user's custom data; a function that cannot see the
 * custom data is called without reading it; a first login makes its user with its identities in one statement; a user's
 * deletion is one round trip after its authentication.
 */
import type { FastifyInstance } from "fastify";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { StoredSession, StoredUser } from "../../src/store/store.ts";
import { anonymousLogin, base, bearer, call, emailUser, newApp, testApp } from "../helpers/app.ts";
import {
  adminQuery,
  emulatorDatabase,
  statementsOf,
  type TestDatabase,
  tripsBesideAuthentication,
} from "../helpers/postgres.ts";
import { until } from "../helpers/until.ts";

let database: TestDatabase;
let app: FastifyInstance;

beforeAll(async () => {
  database = await emulatorDatabase("session-statements");
  app = await testApp({ databaseUrl: database.url, signingSecret: "a-test-signing-secret-of-32-chars" });
});

afterAll(async () => {
  await app?.close();
  await database?.drop();
});

const refresh = (token: string) =>
  call(app, "refreshAccessToken", { method: "POST", url: `${base}/auth/session`, headers: bearer(token) });

/** The round trips of a request of `token`'s, answered `status` (but its access token's authentication). */
async function roundTripsOf(
  operationId: string,
  method: "POST" | "DELETE",
  path: string,
  token: string,
  status: number,
) {
  const found = await statementsOf(
    async () =>
      expect(
        (await call(app, operationId, { method, url: `${base}${path}`, headers: bearer(token) })).response.statusCode,
      ).toBe(status),
    { own: true },
  );
  return tripsBesideAuthentication(found);
}

it("refreshes a session in one round trip and ends it in two, its session and user read together", async () => {
  // (The default app's template keeps custom user data: a new access token carries it, read
  // beside the session and the user.)
  const appId = await newApp(app);
  const { refresh_token } = await anonymousLogin(app, appId);
  // (A first refresh may wait for the pool's third connection to be made.)
  expect((await refresh(refresh_token)).response.statusCode).toBe(201);
  expect(await roundTripsOf("refreshAccessToken", "POST", "/auth/session", refresh_token, 201)).toBe(1);
  expect(await roundTripsOf("logOut", "DELETE", "/auth/session", refresh_token, 204)).toBe(2);
  const refused = await refresh(refresh_token);
  expect(refused.response.statusCode).toBe(401);
});

it("calls a function that cannot see the custom user data without reading it", async () => {
  const appId = await newApp(app);
  const { access_token } = await anonymousLogin(app, appId);
  const sum = () =>
    call(app, "callFunction", {
      method: "POST",
      url: `${base}/app/${appId}/functions/call`,
      headers: bearer(access_token),
      payload: { name: "sum", arguments: [{ $numberInt: "1" }, { $numberInt: "2" }] },
    });
  expect((await sum()).body).toEqual({ $numberInt: "3" });
  const found = await statementsOf(async () => expect((await sum()).body).toEqual({ $numberInt: "3" }), {
    own: true,
  });
  expect(tripsBesideAuthentication(found)).toBe(0);
});

it("makes a first login's user with its identity in one statement", async () => {
  const appId = await newApp(app);
  await anonymousLogin(app, appId);
  const { texts, roundTrips } = await statementsOf(() => anonymousLogin(app, appId), { own: true });
  // The address's count of logins; then the user, and the session with its flush and the custom
  // user data, together.
  expect(roundTrips).toBe(2);
  expect(texts.filter((text) => /INSERT INTO (users|identities)/.test(text))).toHaveLength(1);
});

it("keeps nothing of a new user when another owns one of its identities", async () => {
  const store = await PostgresStore.open({ url: database.url });
  try {
    await store.apps.create({ appId: "claims", domainId: "domain-claims", createdAt: 0, appDir: null, config: {} });
    const users = store.apps.scope("claims").users;
    const userOf = (id: string, identities: string[]): StoredUser => ({
      id,
      type: "normal",
      disabled: false,
      createdAt: 0,
      identities: identities.map((identity) => ({ id: identity, provider_type: "custom-token", provider_id: "p" })),
      data: {},
    });
    expect((await users.create(userOf("owner", ["taken"]))).ok).toBe(true);
    // The first identity is claimed before the second is found taken: the foreign key refuses it.
    const claim = await users.create(userOf("newcomer", ["free", "taken"]));
    expect(claim).toMatchObject({ ok: false, owner: { id: "owner" } });
    const rows = async (sql: string) => (await adminQuery(database.url, sql)).rows;
    expect(await rows("SELECT id FROM users WHERE app_id = 'claims' ORDER BY id")).toEqual([{ id: "owner" }]);
    expect(await rows("SELECT user_id FROM identities WHERE app_id = 'claims'")).toEqual([{ user_id: "owner" }]);
    // All of them free: the user and both identities.
    expect((await users.create(userOf("second", ["free", "other"]))).ok).toBe(true);
    expect((await users.get("second"))?.identities.map((identity) => identity.id)).toEqual(["free", "other"]);

    // A first login's user with its session, in one round trip: the session started when the user
    // was made, not when its identity was taken; a user made whose session failed is told as made.
    const scope = store.apps.scope("claims");
    const sessionOf = (id: string, userId: string): StoredSession => ({
      id,
      userId,
      deviceId: "device",
      providerType: "custom-token",
      identityId: "identity",
      createdAt: 0,
      expiresAt: 1e15,
    });
    const both = await scope.createAndStart!(userOf("third", ["third"]), sessionOf("s-third", "third"), 1);
    expect(both).toMatchObject({ claim: { ok: true }, started: {} });
    expect((await scope.sessions.get("s-third"))?.userId).toBe("third");
    const lost = await scope.createAndStart!(userOf("fourth", ["taken"]), sessionOf("s-fourth", "fourth"), 2);
    expect(lost).toEqual({ claim: { ok: false, owner: expect.objectContaining({ id: "owner" }) } });
    expect(await scope.sessions.get("s-fourth")).toBeUndefined();
    // (The session's id taken: its statement fails after the user's committed.)
    const failed = await scope.createAndStart!(userOf("fifth", ["fifth"]), sessionOf("s-third", "fifth"), 3);
    expect(failed).toEqual({ claim: { ok: true, user: expect.objectContaining({ id: "fifth" }) } });
    expect(await scope.users.get("fifth")).toBeDefined();
    expect((await scope.sessions.get("s-third"))?.userId).toBe("third");
  } finally {
    await store.close();
  }
});

it("deletes a user in one round trip after its authentication, its sessions ended on every instance", async () => {
  const appId = await newApp(app);
  const { access_token, refresh_token, user_id } = await anonymousLogin(app, appId);
  const other = await PostgresStore.open({ url: database.url });
  const heard: unknown[] = [];
  other.apps.onSessionsEnded((ofApp, ended) => {
    if (ofApp === appId) heard.push(ended);
  });
  expect(await roundTripsOf("deleteUser", "DELETE", "/auth/delete", access_token, 204)).toBe(1);
  expect((await refresh(refresh_token)).response.statusCode).toBe(401);
  const rows = async (sql: string) => (await adminQuery(database.url, sql, [appId])).rows;
  expect(await rows("SELECT id FROM users WHERE app_id = $1")).toEqual([]);
  expect(await rows("SELECT id FROM sessions WHERE app_id = $1")).toEqual([]);
  expect(await rows("SELECT user_id FROM identities WHERE app_id = $1")).toEqual([]);
  try {
    // (Another instance ends the streams of the user's sessions when it hears of their end.)
    await until(() => heard.length > 0, "the sessions' end, on the other instance");
    expect(heard).toEqual([{ userId: user_id }]);
  } finally {
    await other.close();
  }
});

it("starts no session of an API key disabled by a transaction its login waited for", async () => {
  const appId = await newApp(app, { providers: { "api-key": { enabled: true } } });
  const owner = await emailUser(app, appId, "held@example.com", "secret-1");
  const { body: key } = await call(app, "createApiKey", {
    method: "POST",
    url: `${base}/auth/api_keys`,
    headers: bearer(owner.refresh_token),
    payload: { name: "held" },
  });
  // Another transaction holds the user's row (as a key's disabling does) and disables the key; the
  // login's statement waits for the row, then must see the key as it is after that commit.
  const held = new pg.Client({ connectionString: database.url });
  await held.connect();
  try {
    await held.query("BEGIN");
    await held.query("SELECT 1 FROM users WHERE app_id = $1 AND id = $2 FOR UPDATE", [appId, owner.user_id]);
    await held.query("UPDATE api_keys SET disabled = true WHERE app_id = $1 AND id = $2", [appId, key._id]);
    const login = call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/api-key/login`,
      payload: { key: key.key },
    });
    await until(async () => {
      const { rows } = await adminQuery(
        database.url,
        "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
      );
      return rows.length > 0;
    }, "the login waiting for the user's row");
    await held.query("COMMIT");
    const { response, body } = await login;
    expect(response.statusCode).toBe(401);
    expect(body).toMatchObject({ error: "invalid API key", error_code: "AuthError" });
  } finally {
    await held.end();
  }
  const { rows } = await adminQuery(database.url, "SELECT id FROM sessions WHERE app_id = $1 AND api_key_id = $2", [
    appId,
    key._id,
  ]);
  expect(rows).toEqual([]);
});
