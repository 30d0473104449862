/** Profile, refresh, logout, deletion, and every way a token can be wrong. */
import { createHmac } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { maxTokenUserDataBytes } from "../../src/store/store.ts";
import {
  anonymousLogin,
  base,
  bearer,
  beforeNext,
  bothBefore,
  call,
  confirmedRegistration,
  emailUser,
  getProfile,
  newApp,
  testApp,
} from "../helpers/app.ts";
import { logLines } from "../helpers/log-lines.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

const profile = (token: string) => getProfile(app, token);
const refresh = (token: string) =>
  call(app, "refreshAccessToken", { method: "POST", url: `${base}/auth/session`, headers: bearer(token) });
const logOut = (token: string) =>
  call(app, "logOut", { method: "DELETE", url: `${base}/auth/session`, headers: bearer(token) });

function forge(token: string, change: (payload: Record<string, unknown>) => void, key = "not-the-emulator-key") {
  const [header, payload] = token.split(".") as [string, string];
  const claims = JSON.parse(Buffer.from(payload, "base64url").toString());
  change(claims);
  const body = `${header}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}`;
  return `${body}.${createHmac("sha256", key).update(body).digest("base64url")}`;
}

describe("getProfile", () => {
  it("shows the user's identities, data and type", async () => {
    const appId = await newApp(app);
    const session = await emailUser(app, appId, "p@example.com", "secret-1");
    const { body } = await profile(session.access_token);
    expect(body).toMatchObject({
      user_id: session.user_id,
      domain_id: (await app.emulator.apps.get(appId))!.domainId,
      identities: [{ provider_type: "local-userpass", provider_id: expect.stringMatching(/^[0-9a-f]{24}$/) }],
      data: { email: "p@example.com" },
      type: "normal",
    });
    const anon = await anonymousLogin(app, appId);
    expect((await profile(anon.access_token)).body.data).toEqual({});
  });

  it("answers 401 InvalidSession once the access token expired by the app's clock", async () => {
    const appId = await newApp(app);
    const session = await anonymousLogin(app, appId);
    await call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 1800 },
    });
    const { response, body } = await profile(session.access_token);
    expect(response.statusCode).toBe(401);
    expect(body).toMatchObject({ error: "invalid session: access token expired", error_code: "InvalidSession" });
    // The refresh token still works and its new access token is good.
    const renewed = await refresh(session.refresh_token);
    expect(renewed.response.statusCode).toBe(201);
    expect((await profile(renewed.body.access_token)).response.statusCode).toBe(200);
  });

  it.each([
    ["no Authorization header", undefined, "must authenticate first"],
    ["a scheme other than Bearer", "Basic abc", "expected Authorization header with JWT (Bearer schema)"],
    ["a bearer that is not a JWT", "Bearer abc", "expected Authorization header with JWT (Bearer schema)"],
  ])("refuses %s", async (_label, header, error) => {
    const { response, body } = await call(app, "getProfile", {
      method: "GET",
      url: `${base}/auth/profile`,
      headers: header ? { authorization: header } : {},
    });
    expect(response.statusCode).toBe(401);
    expect(body.error).toBe(error);
  });

  it("refuses forged, alg-none, wrong-type and foreign tokens", async () => {
    const appId = await newApp(app);
    const session = await anonymousLogin(app, appId);
    const [, payload] = session.access_token.split(".");
    const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString("base64url")}.${payload}.`;
    const forged = forge(session.access_token, (c) => {
      c.sub = "000000000000000000000000";
    });
    for (const token of [forged, none, session.refresh_token]) {
      const { response, body } = await profile(token);
      expect(response.statusCode).toBe(401);
      expect(body.error_code).toBe("InvalidSession");
    }
  });

  it("refuses the token of a deleted user", async () => {
    const appId = await newApp(app);
    const session = await anonymousLogin(app, appId);
    await call(app, "deleteUser", {
      method: "DELETE",
      url: `${base}/auth/delete`,
      headers: bearer(session.access_token),
    });
    const { response } = await profile(session.access_token);
    expect(response.statusCode).toBe(401);
  });
});

describe("refreshAccessToken and logOut", () => {
  it("logout ends the session: its refresh token and its access token are refused", async () => {
    const appId = await newApp(app);
    const session = await anonymousLogin(app, appId);
    const out = await logOut(session.refresh_token);
    expect(out.response.statusCode).toBe(204);
    const { response, body } = await refresh(session.refresh_token);
    expect(response.statusCode).toBe(401);
    expect(body).toMatchObject({
      error: "invalid session: failed to find refresh token",
      error_code: "InvalidSession",
    });
    const refused = await profile(session.access_token);
    expect(refused.response.statusCode).toBe(401);
    expect(refused.body).toMatchObject({
      error: "invalid session: failed to find refresh token",
      error_code: "InvalidSession",
    });
  });

  it("ends a session two logouts race for once: the later answers as a logout a moment later", async () => {
    const appId = await newApp(app);
    const session = await anonymousLogin(app, appId);
    const sessions = (await app.emulator.apps.get(appId))!.sessions;
    bothBefore(Object.getPrototypeOf(sessions), "remove");
    const both = await Promise.all([logOut(session.refresh_token), logOut(session.refresh_token)]);
    vi.restoreAllMocks();
    const later = await logOut(session.refresh_token);
    expect(later.response.statusCode).toBe(401);
    const { link: _, ...refused } = later.body;
    expect(both.map(({ response }) => response.statusCode).sort()).toEqual([204, 401]);
    expect(both.find(({ response }) => response.statusCode === 401)!.body).toEqual({
      ...refused,
      link: expect.any(String),
    });
  });

  it("refuses a refresh token with a bad signature, and an access token in its place", async () => {
    const appId = await newApp(app);
    const session = await anonymousLogin(app, appId);
    const bad = await refresh(forge(session.refresh_token, () => {}));
    expect(bad.body).toMatchObject({ error: "signature is invalid", error_code: "InvalidSession" });
    const access = await refresh(session.access_token);
    expect(access.response.statusCode).toBe(401);
    expect(access.body.error_code).toBe("InvalidSession");
  });

  it("refuses a session past its lifetime as a session not found, the text realm-web's logOut() lets pass", async () => {
    const appId = await newApp(app, { tokens: { refreshTokenTtlSeconds: 3600 } });
    const first = await emailUser(app, appId, "r@example.com", "secret-1");
    const second = await emailUser(app, appId, "r2@example.com", "secret-1");
    await call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 3600 },
    });
    const gone = { error: "invalid session: failed to find refresh token", error_code: "InvalidSession" };
    const refused = await refresh(first.refresh_token);
    expect(refused.response.statusCode).toBe(401);
    expect(refused.body).toMatchObject(gone);
    const loggedOut = await logOut(second.refresh_token);
    expect(loggedOut.response.statusCode).toBe(401);
    expect(loggedOut.body).toMatchObject(gone);
  });

  it("refuses an access token whose session is past its lifetime as a session not found", async () => {
    const appId = await newApp(app, { tokens: { refreshTokenTtlSeconds: 3600, accessTokenTtlSeconds: 7200 } });
    const session = await emailUser(app, appId, "t@example.com", "secret-1");
    await call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 3600 },
    });
    const { response, body } = await profile(session.access_token);
    expect(response.statusCode).toBe(401);
    expect(body).toMatchObject({
      error: "invalid session: failed to find refresh token",
      error_code: "InvalidSession",
    });
  });

  it("revoking a user's sessions through the control API ends its refresh tokens", async () => {
    const appId = await newApp(app);
    const session = await anonymousLogin(app, appId);
    await call(app, "revokeUserSessions", {
      method: "DELETE",
      url: `/_mock/v1/apps/${appId}/users/${session.user_id}/sessions`,
    });
    expect((await refresh(session.refresh_token)).response.statusCode).toBe(401);
  });

  it("puts custom user data in the access token, reads it again on refresh and at other logins", async () => {
    const appId = await newApp(app);
    const session = await emailUser(app, appId, "cd@example.com", "secret-1");
    await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/notes-app/profiles`,
      payload: { documents: [{ user_id: session.user_id, favouriteColour: "teal", visits: { $numberInt: "3" } }] },
    });
    const { body } = await refresh(session.refresh_token);
    const claims = JSON.parse(Buffer.from(body.access_token.split(".")[1], "base64url").toString());
    expect(claims.user_data).toMatchObject({
      user_id: session.user_id,
      favouriteColour: "teal",
      visits: { $numberInt: "3" },
    });
    // A change to the document shows in the next access token.
    await call(app, "callFunction", {
      method: "POST",
      url: `${base}/app/${appId}/functions/call`,
      headers: bearer(body.access_token),
      payload: {
        name: "updateOne",
        service: "mongodb-atlas",
        arguments: [
          {
            database: "notes-app",
            collection: "profiles",
            query: { user_id: session.user_id },
            update: { $set: { favouriteColour: "plum" } },
          },
        ],
      },
    });
    const again = await refresh(session.refresh_token);
    const next = JSON.parse(Buffer.from(again.body.access_token.split(".")[1], "base64url").toString());
    expect(next.user_data.favouriteColour).toBe("plum");
    // A login by another provider (an API key's) carries it too.
    const { body: key } = await call(app, "createApiKey", {
      method: "POST",
      url: `${base}/auth/api_keys`,
      headers: bearer(session.refresh_token),
      payload: { name: "reader" },
    });
    const { body: keyLogin } = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/api-key/login`,
      payload: { key: key.key },
    });
    const keyed = JSON.parse(Buffer.from(keyLogin.access_token.split(".")[1], "base64url").toString());
    expect(keyed.user_data).toMatchObject({ user_id: session.user_id, favouriteColour: "plum" });
  });

  it(`carries custom user data up to ${maxTokenUserDataBytes} bytes, leaves larger data out of its tokens and says so once`, async () => {
    const { logStream, lines } = logLines();
    const logged = await testApp({ logLevel: "warn", logStream });
    try {
      const appId = await newApp(logged);
      const session = await emailUser(logged, appId, "big@example.com", "secret-1");
      const doc = { _id: "p", user_id: session.user_id, pad: "" };
      // (Strings only: the stored canonical Extended JSON is the document's JSON.)
      const fits = maxTokenUserDataBytes - JSON.stringify(doc).length;
      const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString());
      const login = async () =>
        (
          await call(logged, "login", {
            method: "POST",
            url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
            payload: { username: "big@example.com", password: "secret-1" },
          })
        ).body.access_token as string;
      const refreshed = async () =>
        (
          await call(logged, "refreshAccessToken", {
            method: "POST",
            url: `${base}/auth/session`,
            headers: bearer(session.refresh_token),
          })
        ).body.access_token as string;
      const setPad = (length: number) =>
        call(logged, "replaceDocument", {
          method: "POST",
          url: `/_mock/v1/apps/${appId}/data/notes-app/profiles/replace-one`,
          payload: { filter: { _id: "p" }, replacement: { ...doc, pad: "x".repeat(length) } },
        });
      await call(logged, "insertDocuments", {
        method: "POST",
        url: `/_mock/v1/apps/${appId}/data/notes-app/profiles`,
        payload: { documents: [{ ...doc, pad: "x".repeat(fits) }] },
      });
      for (const token of [await login(), await refreshed()]) expect(claimsOf(token).user_data.pad).toHaveLength(fits);

      for (const length of [fits + 1, 4 * 1024 * 1024]) {
        expect((await setPad(length)).response.statusCode).toBe(200);
        for (const token of [await login(), await refreshed()]) {
          expect(claimsOf(token)).not.toHaveProperty("user_data");
          expect(token.length).toBeLessThan(1_000);
          expect((await getProfile(logged, token)).response.statusCode).toBe(200);
        }
      }
      const said = lines.filter((line) => String(line.msg).includes("is left out of the user's access tokens"));
      expect(said.map((line) => [line.userId, line.bytes])).toEqual([[session.user_id, maxTokenUserDataBytes + 1]]);
    } finally {
      await logged.close();
    }
  });

  it("puts no custom user data in a login's access token when the user has none", async () => {
    const appId = await newApp(app);
    const session = await anonymousLogin(app, appId);
    const claims = JSON.parse(Buffer.from(session.access_token.split(".")[1]!, "base64url").toString());
    expect(claims.sub).toBe(session.user_id);
    expect(claims).not.toHaveProperty("user_data");
  });
});

describe("deleteUser", () => {
  it("a login whose user is deleted before its session starts makes the identity a new user, as a moment later", async () => {
    const signingKey = "a-custom-token-key-of-32-characters!";
    const appId = await newApp(app, { providers: { "custom-token": { enabled: true, signingKey, audience: "late" } } });
    const token = await new SignJWT({ sub: "late-user", aud: "late", exp: Math.floor(Date.now() / 1000) + 600 })
      .setProtectedHeader({ alg: "HS256" })
      .sign(new TextEncoder().encode(signingKey));
    const login = () =>
      call(app, "login", {
        method: "POST",
        url: `${base}/app/${appId}/auth/providers/custom-token/login`,
        payload: { token },
      });
    const first = await login();
    expect(first.response.statusCode, JSON.stringify(first.body)).toBe(200);
    const { store } = (await app.emulator.apps.get(appId))!;
    // The user deleted after the login found it by its identity, before the session starts.
    beforeNext(Object.getPrototypeOf(store), "startSession", () => store.deleteUser(first.body.user_id));
    const { response, body } = await login();
    vi.restoreAllMocks();
    expect(response.statusCode, JSON.stringify(body)).toBe(200);
    expect(body.user_id).not.toBe(first.body.user_id);
    expect(await store.sessions.forUser(first.body.user_id)).toEqual([]);
    const { users } = (await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` })).body;
    expect(
      users.map((u: { id: string; identities: { id: string }[] }) => [u.id, u.identities.map((i) => i.id)]),
    ).toEqual([[body.user_id, ["late-user"]]]);
    const profile = await call(app, "getProfile", {
      method: "GET",
      url: `${base}/auth/profile`,
      headers: bearer(body.access_token),
    });
    expect(profile.body.identities.map((i: { id: string }) => i.id)).toEqual(["late-user"]);

    // A user that goes again as the login goes on: the login tries once more, then gives up.
    const starts = vi.spyOn(Object.getPrototypeOf(store), "startSession").mockResolvedValue(undefined);
    const lost = await login();
    vi.restoreAllMocks();
    expect(starts).toHaveBeenCalledTimes(2);
    expect(lost.response.statusCode).toBe(401);
    expect(lost.body).toMatchObject({ error: "invalid session: user not found", error_code: "InvalidSession" });
  });

  it("a first e-mail/password login whose new user is removed before its session starts: InvalidPassword", async () => {
    const appId = await newApp(app);
    await confirmedRegistration(app, appId, "first@example.com");
    const { store } = (await app.emulator.apps.get(appId))!;
    // The user the login made is removed (with its registration) before the session starts: a
    // moment later the address has no registration.
    beforeNext(Object.getPrototypeOf(store), "startSession", async () => {
      const [made] = (await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` })).body.users;
      expect(
        (await call(app, "removeUser", { method: "DELETE", url: `/_mock/v1/apps/${appId}/users/${made.id}` })).response
          .statusCode,
      ).toBe(204);
    });
    const { response, body } = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
      payload: { username: "first@example.com", password: "secret-1" },
    });
    vi.restoreAllMocks();
    expect([response.statusCode, body.error_code]).toEqual([401, "InvalidPassword"]);
    expect((await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` })).body.users).toEqual(
      [],
    );
  });

  it("deletes the user with its registration, sessions and keys; the follow-up logout fails as realm-web expects", async () => {
    const appId = await newApp(app);
    const session = await emailUser(app, appId, "d@example.com", "secret-1");
    const { response } = await call(app, "deleteUser", {
      method: "DELETE",
      url: `${base}/auth/delete`,
      headers: bearer(session.access_token),
    });
    expect(response.statusCode).toBe(204);
    expect(response.headers["content-type"]).toBeUndefined();
    const out = await logOut(session.refresh_token);
    expect(out.body.error).toContain("failed to find refresh token");
    const again = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
      payload: { username: "d@example.com", password: "secret-1" },
    });
    expect(again.body).toMatchObject({ error: "unauthorized", error_code: "InvalidPassword" });
    // The address can register again.
    const reg = await call(app, "registerUser", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/register`,
      payload: { email: "d@example.com", password: "secret-1" },
    });
    expect(reg.response.statusCode).toBe(201);
  });
});
