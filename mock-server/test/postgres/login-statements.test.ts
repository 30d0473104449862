/**
 * A login on PostgreSQL (docs/decisions/0025-counted-sessions.md): after the password check, one
 * statement reads the registration with its user, adds the session, ends the oldest past the
 * app's limit, writes the login time and the count and reads the custom user data, followed in the
 * same round trip by the write that makes it durable; with the registration this instance kept at
 * its last login, checked by that statement, nothing is read before. Each user's count of sessions
 * stays the number of its sessions through every way sessions come and go, on two instances at
 * once, and the limit holds exactly under racing logins.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { hashPassword } from "../../src/state/passwords.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { AppStore, StoredSession } from "../../src/store/store.ts";
import { base, call, newApp, testApp } from "../helpers/app.ts";
import { adminQuery, emulatorDatabase, statementsOf, type TestDatabase } from "../helpers/postgres.ts";

let database: TestDatabase;
let app: FastifyInstance;
let one: PostgresStore;
let two: PostgresStore;

beforeAll(async () => {
  database = await emulatorDatabase("login-statements");
  app = await testApp({ databaseUrl: database.url, signingSecret: "a-test-signing-secret-of-32-chars" });
  [one, two] = await Promise.all([
    PostgresStore.open({ url: database.url }),
    PostgresStore.open({ url: database.url }),
  ]);
});

afterAll(async () => {
  await app?.close();
  await Promise.all([one?.close(), two?.close()]);
  await database?.drop();
});

afterEach(() => {
  vi.restoreAllMocks();
});

const login = (appId: string, username: string, password = "secret-1") =>
  call(app, "login", {
    method: "POST",
    url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
    payload: { username, password },
  });

const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString());

describe("an e-mail/password login", () => {
  it("is one statement after the password check, with its flush in the same round trip, and one round trip once the registration is kept", async () => {
    // The default app's template keeps custom user data (notes-app.profiles, user_id).
    const appId = await newApp(app);
    await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email: "counted@example.com", password: "secret-1", confirmed: true },
    });
    const first = await login(appId, "counted@example.com");
    expect(first.response.statusCode).toBe(200);
    await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/notes-app/profiles`,
      payload: { documents: [{ user_id: first.body.user_id, colour: "teal", visits: { $numberInt: "3" } }] },
    });

    // As on an instance that has not seen the address log in yet:
    app.emulator.store.apps.scope(appId).users.forgetAccount?.("counted@example.com");
    let reply: Awaited<ReturnType<typeof login>> | undefined;
    const { texts, roundTrips } = await statementsOf(async () => {
      reply = await login(appId, "counted@example.com");
    });
    expect(reply!.response.statusCode).toBe(200);
    expect(texts).toHaveLength(3);
    expect(texts[0]).toMatch(/FROM userpass_accounts WHERE app_id = \$1 AND email_key = \$2/);
    expect(texts[1]).toMatch(/INSERT INTO sessions/);
    expect(texts[2]).toMatch(/pg_logical_emit_message/);
    expect(roundTrips).toBe(2);
    // This instance kept it: the next login reads nothing before the statement.
    const kept = await statementsOf(async () => {
      reply = await login(appId, "counted@example.com");
    });
    expect(reply!.response.statusCode).toBe(200);
    expect(kept.texts).toHaveLength(2);
    expect(kept.texts[0]).toMatch(/INSERT INTO sessions/);
    expect(kept.roundTrips).toBe(1);
    // What the statement read with it: the custom user data, in the access token.
    expect(claimsOf(reply!.body.access_token).user_data).toEqual({
      _id: expect.any(Object),
      user_id: first.body.user_id,
      colour: "teal",
      visits: { $numberInt: "3" },
    });
    // A wrong password still stops before any of it.
    const wrong = await statementsOf(() => login(appId, "counted@example.com", "not-it"));
    expect(wrong.texts).toHaveLength(1);
  });

  it("answers a disabled user, a deleted one and a first login as before", async () => {
    const appId = await newApp(app);
    const created = await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email: "later@example.com", password: "secret-1", confirmed: true },
    });
    expect(created.response.statusCode).toBe(201);
    const first = await login(appId, "later@example.com");
    expect(first.response.statusCode).toBe(200);
    const userId = first.body.user_id as string;
    const update = (disabled: boolean) =>
      call(app, "updateUser", {
        method: "PATCH",
        url: `/_mock/v1/apps/${appId}/users/${userId}`,
        payload: { disabled },
      });
    // (Disabling ends the user's sessions.)
    expect((await update(true)).response.statusCode).toBe(200);
    const disabled = await login(appId, "later@example.com");
    expect([disabled.response.statusCode, disabled.body.error_code]).toEqual([401, "UserDisabled"]);
    expect(await sessionsOf(appId, userId)).toEqual({ rows: 0, counted: 0 });
    expect((await update(false)).response.statusCode).toBe(200);
    expect((await login(appId, "later@example.com")).response.statusCode).toBe(200);
    expect(await sessionsOf(appId, userId)).toEqual({ rows: 1, counted: 1 });
    // Its deletion takes the registration: the next login is a wrong password.
    await call(app, "deleteUser", { method: "DELETE", url: `/_mock/v1/apps/${appId}/users/${userId}` });
    const gone = await login(appId, "later@example.com");
    expect([gone.response.statusCode, gone.body.error_code]).toEqual([401, "InvalidPassword"]);
  });

  it("through the registration it kept, sees at once what another instance changed in it", async () => {
    const appId = await newApp(app);
    const email = "kept@example.com";
    await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email, password: "secret-1", confirmed: true },
    });
    const userId = (await login(appId, email)).body.user_id as string;
    // Kept here from this login on.
    expect((await login(appId, email)).response.statusCode).toBe(200);
    const elsewhere = two.apps.scope(appId).users;
    const account = (await elsewhere.accountByEmail(email))!;

    // A new password set on the other instance logs in at once, though the kept hash refuses it;
    // the old one no longer does, though the kept hash accepts it.
    await elsewhere.updateAccount(account.id, { passwordHash: await hashPassword("secret-2", 4) });
    const renewed = await login(appId, email, "secret-2");
    expect([renewed.response.statusCode, renewed.body.user_id]).toEqual([200, userId]);
    await elsewhere.updateAccount(account.id, { passwordHash: await hashPassword("secret-3", 4) });
    const old = await login(appId, email, "secret-2");
    expect([old.response.statusCode, old.body.error_code]).toEqual([401, "InvalidPassword"]);
    expect((await login(appId, email, "secret-1")).response.statusCode).toBe(401);
    expect((await login(appId, email, "secret-3")).response.statusCode).toBe(200);
    expect(await sessionsOf(appId, userId)).toEqual({ rows: 4, counted: 4 });

    // Disabled there (kept again by the login before): refused as disabled.
    await elsewhere.update(userId, { disabled: true });
    const disabled = await login(appId, email, "secret-3");
    expect([disabled.response.statusCode, disabled.body.error_code]).toEqual([401, "UserDisabled"]);
    await elsewhere.update(userId, { disabled: false });
    expect((await login(appId, email, "secret-3")).response.statusCode).toBe(200);

    // The user deleted there and the address registered again: the new registration's password,
    // and its own user.
    await two.apps.scope(appId).deleteUser(userId);
    await elsewhere.addAccount({
      id: newId(),
      email,
      passwordHash: await hashPassword("secret-4", 4),
      confirmed: true,
      userId: null,
      createdAt: 0,
    });
    const before = await login(appId, email, "secret-3");
    expect([before.response.statusCode, before.body.error_code]).toEqual([401, "InvalidPassword"]);
    const again = await login(appId, email, "secret-4");
    expect(again.response.statusCode).toBe(200);
    expect(again.body.user_id).not.toBe(userId);
    expect(await miscounted()).toEqual([]);
  });

  it("starts no session when the registration's password is not the one checked", async () => {
    const appId = await newApp(app);
    await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email: "raced@example.com", password: "secret-1", confirmed: true },
    });
    const userId = (await login(appId, "raced@example.com")).body.user_id as string;
    const scope = one.apps.scope(appId);
    const account = (await scope.users.accountByEmail("raced@example.com"))!;
    const session = { ...sessionOf(userId), providerType: "local-userpass", identityId: account.id };
    const stale = await scope.startRegistrationSession(account.id, "scrypt$4$another$hash", session, 5);
    expect(stale).toMatchObject({ started: false, account: { id: account.id, passwordHash: account.passwordHash } });
    expect(await sessionsOf(appId, userId)).toEqual({ rows: 1, counted: 1 });
    const current = await scope.startRegistrationSession(account.id, account.passwordHash, session, 5);
    expect(current).toMatchObject({ started: true });
    expect(await sessionsOf(appId, userId)).toEqual({ rows: 2, counted: 2 });
  });
});

/** A user's sessions as rows, and as its count. */
async function sessionsOf(appId: string, userId: string): Promise<{ rows: number; counted: number | undefined }> {
  const { rows } = await adminQuery(
    database.url,
    `SELECT (SELECT count(*)::int FROM sessions WHERE app_id = $1 AND user_id = $2) AS rows,
            (SELECT session_count FROM users WHERE app_id = $1 AND id = $2) AS counted`,
    [appId, userId],
  );
  return { rows: rows[0].rows, counted: rows[0].counted ?? undefined };
}

/** Every user whose count is not its number of sessions (none, always). */
async function miscounted(): Promise<unknown[]> {
  const { rows } = await adminQuery(
    database.url,
    `SELECT u.app_id, u.id, u.session_count, count(s.id)::int AS rows FROM users u
       LEFT JOIN sessions s ON s.app_id = u.app_id AND s.user_id = u.id
      GROUP BY u.app_id, u.id, u.session_count HAVING u.session_count <> count(s.id)`,
  );
  return rows;
}

let apps = 0;
let ids = 0;
const newId = () => (++ids).toString(16).padStart(24, "0");

/** An app on both stores with one user; the user's sessions start through either. */
async function storesApp(sessionsPerUser: number): Promise<{ appId: string; userId: string; scopes: AppStore[] }> {
  const appId = `counted-${++apps}`;
  await one.apps.create({
    appId,
    domainId: `domain-${appId}`,
    createdAt: 0,
    appDir: null,
    config: { limits: { sessionsPerUser } },
  });
  const userId = newId();
  const scopes = [one.apps.scope(appId), two.apps.scope(appId)];
  await scopes[0]!.users.create({
    id: userId,
    type: "normal",
    disabled: false,
    // Made now: an anonymous user made long ago is past its lifetime, and the emulator's retention
    // sweep (on this database, at a random point of its first 10 minutes) would remove it.
    createdAt: Date.now(),
    identities: [{ id: `anon-${userId}`, provider_type: "anon-user", provider_id: "p" }],
    data: {},
  });
  return { appId, userId, scopes };
}

const sessionOf = (userId: string, apiKeyId?: string): StoredSession => ({
  id: newId(),
  userId,
  deviceId: newId(),
  providerType: apiKeyId ? "api-key" : "anon-user",
  identityId: `anon-${userId}`,
  createdAt: 0,
  expiresAt: 1e15,
  ...(apiKeyId ? { apiKeyId } : {}),
});

describe("each user's count of sessions", () => {
  for (const limit of [1, 3]) {
    it(`keeps exactly the limit of ${limit} when 24 logins of one user race on two instances`, async () => {
      const { appId, userId, scopes } = await storesApp(limit);
      await Promise.all(
        Array.from({ length: 24 }, (_, i) => scopes[i % 2]!.startSession(sessionOf(userId), 1_000 + i)),
      );
      expect(await sessionsOf(appId, userId)).toEqual({ rows: limit, counted: limit });
      expect(await miscounted()).toEqual([]);
    });
  }

  it("follows logouts, revocations, API keys and deletions, racing logins on two instances", async () => {
    const { appId, userId, scopes } = await storesApp(5);
    const [a, b] = scopes as [AppStore, AppStore];
    const started: StoredSession[] = [];
    for (let i = 0; i < 8; i++) {
      const session = sessionOf(userId);
      started.push(session);
      await a.startSession(session, i);
    }
    expect(await sessionsOf(appId, userId)).toEqual({ rows: 5, counted: 5 });
    // Logouts of the oldest sessions left (and of ones the limit ended) while logins race them.
    await Promise.all([
      ...started.map((s, i) => (i % 2 ? a : b).sessions.remove(s.id)),
      ...Array.from({ length: 6 }, (_, i) => (i % 2 ? b : a).startSession(sessionOf(userId), 100 + i)),
    ]);
    expect((await sessionsOf(appId, userId)).rows).toBeLessThanOrEqual(5);
    expect(await miscounted()).toEqual([]);
    // An API key's sessions end with the key.
    const key = { id: newId(), userId, name: "k", keyHash: newId(), disabled: false, createdAt: 0 };
    expect(await a.apiKeys.add(key, 10)).toBe("ok");
    await b.startSession(sessionOf(userId, key.id), 200);
    await b.startSession(sessionOf(userId, key.id), 201);
    expect(await a.apiKeys.remove(key.id)).toBe(true);
    expect(await miscounted()).toEqual([]);
    // Every session of the user, then the user.
    await b.sessions.removeForUser(userId);
    expect(await sessionsOf(appId, userId)).toEqual({ rows: 0, counted: 0 });
    await a.startSession(sessionOf(userId), 300);
    expect(await b.deleteUser(userId)).toBe(true);
    expect(await sessionsOf(appId, userId)).toEqual({ rows: 0, counted: undefined });
    expect(await miscounted()).toEqual([]);
  });
});
