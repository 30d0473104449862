/**
 * Anonymous users live 90 days of the app's clock after their creation, as on the hosted service
 * (reference §9.3); from then on every use of one answers as for a deleted user, at once on both
 * stores (before any sweep removes it). Users who signed up, or linked another identity, stay.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  anonymousLogin,
  base,
  bearer,
  call,
  emailUser,
  getProfile,
  mongoAction,
  newApp,
  testApp,
} from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

const day = 24 * 3600;
const refresh = (token: string) =>
  call(app, "refreshAccessToken", { method: "POST", url: `${base}/auth/session`, headers: bearer(token) });
const logOut = (token: string) =>
  call(app, "logOut", { method: "DELETE", url: `${base}/auth/session`, headers: bearer(token) });
const advance = (appId: string, seconds: number) =>
  call(app, "advanceClock", { method: "POST", url: `/_mock/v1/apps/${appId}/clock`, payload: { advanceBy: seconds } });
const listedIds = async (appId: string) =>
  (
    (await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` })).body.users as {
      id: string;
    }[]
  ).map((u) => u.id);
const userCount = async (appId: string) =>
  (await call(app, "getApp", { method: "GET", url: `/_mock/v1/apps/${appId}` })).body.users as number;

/** Every use a client makes of a user's tokens: refresh, profile, a MongoDB action, logout (in that order). */
async function uses(tokens: { access_token: string; refresh_token: string }, appId: string) {
  const answers = [
    await refresh(tokens.refresh_token),
    await getProfile(app, tokens.access_token),
    await mongoAction(app, appId, tokens.access_token, "findOne", { database: "d", collection: "c", query: {} }),
    await logOut(tokens.refresh_token),
  ];
  // Each error links to its own request in the inspector: the rest must be the same.
  return answers.map(({ response, body: { link: _link, ...body } }) => ({ status: response.statusCode, body }));
}

/** The answers of a user deleted through `DELETE auth/delete`, with fresh tokens. */
async function deletedUserAnswers(appId: string) {
  const gone = await anonymousLogin(app, appId);
  const deleted = await call(app, "deleteUser", {
    method: "DELETE",
    url: `${base}/auth/delete`,
    headers: bearer(gone.access_token),
  });
  expect(deleted.response.statusCode).toBe(204);
  return uses(gone, appId);
}

describe("an anonymous user", () => {
  it("works until 90 days after its creation, then answers as a deleted user", async () => {
    const appId = await newApp(app);
    const anon = await anonymousLogin(app, appId);

    await advance(appId, 90 * day - 60);
    const renewed = await refresh(anon.refresh_token);
    expect(renewed.response.statusCode).toBe(201);
    const profile = await getProfile(app, renewed.body.access_token);
    expect(profile.response.statusCode).toBe(200);
    expect(profile.body.user_id).toBe(anon.user_id);
    expect(await listedIds(appId)).toEqual([anon.user_id]);

    await advance(appId, 120);
    const answers = await uses({ access_token: renewed.body.access_token, refresh_token: anon.refresh_token }, appId);
    expect(answers[0]).toMatchObject({ status: 401, body: { error: "invalid session: failed to find refresh token" } });
    expect(answers).toEqual(await deletedUserAnswers(appId));
    // Gone from the control API too (the deleted reference user as well).
    expect(await listedIds(appId)).toEqual([]);
    const found = await call(app, "getUser", { method: "GET", url: `/_mock/v1/apps/${appId}/users/${anon.user_id}` });
    expect(found.response.statusCode).toBe(404);
  });

  it("is gone at 90 days of the app's clock even with a refresh token of 50 years", async () => {
    const appId = await newApp(app);
    const anon = await anonymousLogin(app, appId);
    const claims = JSON.parse(Buffer.from(anon.refresh_token.split(".")[1]!, "base64url").toString());
    // Anonymous refresh tokens effectively never expire: they end with their user.
    expect(claims.exp - claims.iat).toBeGreaterThan(49 * 365 * day);
    await advance(appId, 90 * day);
    expect((await refresh(anon.refresh_token)).body).toMatchObject({
      error: "invalid session: failed to find refresh token",
      error_code: "InvalidSession",
    });
  });
});

describe("users who are not anonymous", () => {
  it("stay past 90 days: an e-mail/password user and an anonymous user who linked an e-mail identity", async () => {
    const appId = await newApp(app, {
      providers: { "local-userpass": { autoConfirm: true } },
      tokens: { refreshTokenTtlSeconds: 180 * day },
    });
    const ada = await emailUser(app, appId, "ada@example.com", "secret-1");
    const linked = await anonymousLogin(app, appId);
    await call(app, "registerUser", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/register`,
      payload: { email: "linked@example.com", password: "secret-1" },
    });
    const link = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/login?link=true`,
      headers: bearer(linked.access_token),
      payload: { username: "linked@example.com", password: "secret-1" },
    });
    expect(link.response.statusCode).toBe(200);
    const young = await anonymousLogin(app, appId);

    await advance(appId, 91 * day);
    for (const user of [ada, linked]) {
      const renewed = await refresh(user.refresh_token);
      expect(renewed.response.statusCode).toBe(201);
      const profile = await getProfile(app, renewed.body.access_token);
      expect(profile.response.statusCode).toBe(200);
      expect(profile.body.user_id).toBe(user.user_id);
    }
    expect((await refresh(young.refresh_token)).response.statusCode).toBe(401);
    expect(await listedIds(appId)).toEqual([ada.user_id, linked.user_id]);
  });
});

describe("removal", () => {
  it("when the app's clock passes their 90 days, with their sessions, freeing their places", async () => {
    const appId = await newApp(app, { limits: { users: 3 } });
    const old = await anonymousLogin(app, appId);
    await emailUser(app, appId, "stays@example.com", "secret-1");
    await advance(appId, 60 * day);
    const younger = await anonymousLogin(app, appId);
    expect(await userCount(appId)).toBe(3);
    const full = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/anon-user/login`,
      payload: {},
    });
    expect(full.response.statusCode).toBe(403);

    await advance(appId, 30 * day + 60);
    // (The clock's move answers first; the removal follows it, in one statement on PostgreSQL.)
    await expect.poll(() => userCount(appId)).toBe(2);
    const runtime = (await app.emulator.apps.get(appId))!;
    expect(await runtime.users.get(old.user_id)).toBeUndefined();
    expect(await runtime.sessions.forUser(old.user_id)).toEqual([]);
    expect(await runtime.users.get(younger.user_id)).toBeDefined();
    expect(await listedIds(appId)).not.toContain(old.user_id);
    await anonymousLogin(app, appId);
    expect(await userCount(appId)).toBe(3);
  });

  it("before a new user is refused at the users limit, of those past their 90 days the sweep has not reached yet", async () => {
    const appId = await newApp(app, { limits: { users: 2 } });
    await emailUser(app, appId, "stays@example.com", "secret-1");
    // Ended by real time since the last sweep (every 10 minutes): still holding a place.
    const runtime = (await app.emulator.apps.get(appId))!;
    await runtime.users.create({
      id: "0000000000000000000000aa",
      type: "normal",
      disabled: false,
      createdAt: Date.now() - 91 * day * 1000,
      identities: [{ id: "ended-anon", provider_type: "anon-user", provider_id: runtime.providerId("anon-user") }],
      data: {},
    });
    expect(await userCount(appId)).toBe(2);
    const login = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/anon-user/login`,
      payload: {},
    });
    expect(login.response.statusCode).toBe(200);
    expect(await runtime.users.get("0000000000000000000000aa")).toBeUndefined();
    // A registration too, once the app is full of users who are all alive: refused.
    const full = await call(app, "registerUser", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/register`,
      payload: { email: "late@example.com", password: "secret-2" },
    });
    expect(full.response.statusCode).toBe(403);
  });

  it("a state imported with an anonymous user past its 90 days does not bring it back", async () => {
    const appId = await newApp(app);
    const anon = await anonymousLogin(app, appId);
    const kept = await anonymousLogin(app, appId);
    const { body: state } = await call(app, "exportState", { method: "GET", url: "/_mock/v1/state" });
    const exported = state.apps.find((a: { appId: string }) => a.appId === appId);
    const user = exported.users.find((u: { id: string }) => u.id === anon.user_id);
    user.createdAt -= 90 * day * 1000;
    const imported = await call(app, "importState", { method: "PUT", url: "/_mock/v1/state", payload: state });
    expect(imported.response.statusCode).toBe(204);

    expect(await listedIds(appId)).toEqual([kept.user_id]);
    expect((await refresh(anon.refresh_token)).body.error).toBe("invalid session: failed to find refresh token");
    expect((await refresh(kept.refresh_token)).response.statusCode).toBe(201);
    // Either store removes it with the import (a `--data-dir` state loaded at start is imported so).
    expect(await userCount(appId)).toBe(1);
  });
});
