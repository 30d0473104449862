/** Logging in with each provider, linking identities, and the tokens that come back. */

import type { FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { maxIdentityIdLength } from "../../src/store/store.ts";
import {
  anonymousLogin,
  base,
  bearer,
  bothBefore,
  call,
  confirmedRegistration,
  emailUser,
  newApp,
  testApp,
} from "../helpers/app.ts";
import { hs256 } from "../helpers/jwt.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

const loginUrl = (appId: string, provider: string, link = false) =>
  `${base}/app/${appId}/auth/providers/${provider}/login${link ? "?link=true" : ""}`;

function decode(token: string) {
  const [header, payload, signature] = token.split(".");
  return {
    header: JSON.parse(Buffer.from(header!, "base64url").toString()),
    payload: JSON.parse(Buffer.from(payload!, "base64url").toString()),
    signature,
  };
}

describe("login", () => {
  it("anon-user: a new user each time, JWTs with the service's claims, device id from the request", async () => {
    const appId = await newApp(app);
    const deviceId = "65a1b2c3d4e5f60718293a4b";
    const { body } = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "anon-user"),
      payload: { options: { device: { sdkVersion: "2.0.1", platform: "node", deviceId: { $oid: deviceId } } } },
    });
    expect(body.device_id).toBe(deviceId);
    const access = decode(body.access_token);
    const refresh = decode(body.refresh_token);
    expect(access.header).toEqual({ alg: "HS256", typ: "JWT" });
    expect(access.payload).toMatchObject({
      sub: body.user_id,
      typ: "access",
      baas_device_id: deviceId,
      stitch_devId: deviceId,
    });
    expect(access.payload.exp - access.payload.iat).toBe(1800);
    expect(refresh.payload).toMatchObject({
      sub: body.user_id,
      typ: "refresh",
      baas_id: access.payload.iss,
      baas_identity: { provider_type: "anon-user" },
      baas_data: null,
    });
    // Anonymous refresh tokens effectively never expire.
    expect(refresh.payload.exp - refresh.payload.iat).toBe(1_576_800_000);
    const second = await anonymousLogin(app, appId);
    expect(second.user_id).not.toBe(body.user_id);
    expect(second.device_id).toMatch(/^[0-9a-f]{24}$/);
  });

  it("reads a login without a body as one with an empty object, as the documentation's curl sends it", async () => {
    const appId = await newApp(app);
    // `curl -X POST …/anon-user/login`: no body, no Content-Type; or a JSON type with nothing after it.
    for (const headers of [{}, { "content-type": "application/json" }]) {
      const { response, body } = await call(app, "login", {
        method: "POST",
        url: loginUrl(appId, "anon-user"),
        headers,
      });
      expect(response.statusCode).toBe(200);
      expect(body.device_id).toMatch(/^[0-9a-f]{24}$/);
    }
    const emailLogin = await call(app, "login", { method: "POST", url: loginUrl(appId, "local-userpass") });
    expect(emailLogin.response.statusCode).toBe(400);
    expect(emailLogin.body).toMatchObject({ error: "'username' is a required string" });
    expect(emailLogin.body.error_code).toBeUndefined();
    // A body that is there and not an object is still refused.
    const literal = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "anon-user"),
      headers: { "content-type": "application/json" },
      payload: "null",
    });
    expect(literal.response.statusCode).toBe(400);
    expect(literal.body).toMatchObject({ error: "request body must be a JSON object", error_code: "BadRequest" });
    expect((await (await app.emulator.apps.get(appId))!.store.counts()).users).toBe(2);
  });

  it("local-userpass: refresh tokens live 60 days; wrong password and unknown user get InvalidPassword", async () => {
    const appId = await newApp(app);
    const session = await emailUser(app, appId, "l@example.com", "secret-1");
    const refresh = decode(session.refresh_token).payload;
    expect(refresh.exp - refresh.iat).toBe(60 * 24 * 3600);
    for (const payload of [
      { username: "l@example.com", password: "wrong-one" },
      { username: "nobody@example.com", password: "secret-1" },
    ]) {
      const { response, body } = await call(app, "login", {
        method: "POST",
        url: loginUrl(appId, "local-userpass"),
        payload,
      });
      expect(response.statusCode).toBe(401);
      expect(body).toMatchObject({ error: "unauthorized", error_code: "InvalidPassword" });
    }
    const missing = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "local-userpass"),
      payload: { username: "l@example.com" },
    });
    expect(missing.response.statusCode).toBe(400);
    expect(missing.body.error).toBe("'password' is a required string");
  });

  it("refuses a password or address longer than any registration's, and an API key longer than any, unhashed", async () => {
    const appId = await newApp(app);
    await emailUser(app, appId, "long@example.com", "secret-1");
    const hashing = vi.spyOn(app.emulator.passwords, "run");
    const keyLookups = vi.spyOn(Object.getPrototypeOf(app.emulator.store.apps.scope(appId).apiKeys), "byHash");
    try {
      for (const payload of [
        { username: "long@example.com", password: "p".repeat(129) },
        { username: `${"a".repeat(250)}@example.com`, password: "secret-1" },
      ]) {
        const { response, body } = await call(app, "login", {
          method: "POST",
          url: loginUrl(appId, "local-userpass"),
          payload,
        });
        expect([response.statusCode, body.error_code]).toEqual([401, "InvalidPassword"]);
      }
      const key = await call(app, "login", {
        method: "POST",
        url: loginUrl(appId, "api-key"),
        payload: { key: "k".repeat(1_000_000) },
      });
      expect([key.response.statusCode, key.body.error]).toEqual([401, "invalid API key"]);
      expect(hashing).not.toHaveBeenCalled();
      expect(keyLookups).not.toHaveBeenCalled();
    } finally {
      vi.restoreAllMocks();
    }
    // The usual ones are checked as always.
    expect(
      (
        await call(app, "login", {
          method: "POST",
          url: loginUrl(appId, "local-userpass"),
          payload: { username: "long@example.com", password: "secret-1" },
        })
      ).response.statusCode,
    ).toBe(200);
  });

  it("the same e-mail user logs in to the same user object every time", async () => {
    const appId = await newApp(app);
    const first = await emailUser(app, appId, "same@example.com", "secret-1");
    const { body } = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "local-userpass"),
      payload: { username: "SAME@example.com", password: "secret-1" },
    });
    expect(body.user_id).toBe(first.user_id);
  });

  it("refuses a disabled provider and an unknown one", async () => {
    const appId = await newApp(app, { providers: { "anon-user": { enabled: false } } });
    for (const provider of ["anon-user", "custom-jwt-okta", "made-up"]) {
      const { response, body } = await call(app, "login", {
        method: "POST",
        url: loginUrl(appId, provider),
        payload: {},
      });
      expect(response.statusCode).toBe(400);
      expect(body).toMatchObject({
        error: `authentication via '${provider}' is unsupported`,
        error_code: "AuthProviderNotFound",
      });
    }
  });

  it("refuses a disabled user (UserDisabled)", async () => {
    const appId = await newApp(app);
    const session = await emailUser(app, appId, "dis@example.com", "secret-1");
    await call(app, "updateUser", {
      method: "PATCH",
      url: `/_mock/v1/apps/${appId}/users/${session.user_id}`,
      payload: { disabled: true },
    });
    const { response, body } = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "local-userpass"),
      payload: { username: "dis@example.com", password: "secret-1" },
    });
    expect(response.statusCode).toBe(401);
    expect(body.error_code).toBe("UserDisabled");
  });

  it("custom-token: HS256 with the app's key, sub as identity, exp by the app's clock, audience, metadata", async () => {
    const key = "a-signing-key-of-some-length";
    const appId = await newApp(app, {
      providers: {
        "custom-token": {
          enabled: true,
          signingKey: key,
          audience: "notes",
          metadataFields: [{ name: "email" }, { name: "profile.name", fieldName: "name" }],
        },
      },
    });
    const now = Math.floor(Date.now() / 1000);
    const good = hs256(
      { sub: "user-7", aud: "notes", exp: now + 600, email: "t@example.com", profile: { name: "Tee" } },
      key,
    );
    const first = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "custom-token"),
      payload: { token: good },
    });
    expect(first.response.statusCode).toBe(200);
    const again = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "custom-token"),
      payload: { token: good },
    });
    expect(again.body.user_id).toBe(first.body.user_id);
    const profile = await call(app, "getProfile", {
      method: "GET",
      url: `${base}/auth/profile`,
      headers: bearer(first.body.access_token),
    });
    expect(profile.body.identities[0]).toMatchObject({ id: "user-7", provider_type: "custom-token" });
    expect(profile.body.data).toEqual({ email: "t@example.com", name: "Tee" });

    const cases = [
      hs256({ sub: "user-7", aud: "notes", exp: now + 600 }, "another-key"),
      hs256({ sub: "user-7", aud: "other", exp: now + 600 }, key),
      hs256({ sub: "user-7", aud: "notes", exp: now - 1 }, key),
      hs256({ aud: "notes", exp: now + 600 }, key),
      `${Buffer.from('{"alg":"none","typ":"JWT"}').toString("base64url")}.${Buffer.from(JSON.stringify({ sub: "x", aud: "notes", exp: now + 600 })).toString("base64url")}.`,
    ];
    for (const token of cases) {
      const { response, body } = await call(app, "login", {
        method: "POST",
        url: loginUrl(appId, "custom-token"),
        payload: { token },
      });
      expect(response.statusCode).toBe(401);
      expect(body.error).toMatch(/^invalid custom auth token/);
      expect(body.error_code).toBe("AuthError");
    }
  });

  it("custom-token: each app from the template has its own random key, the default app too", async () => {
    const enabled = { providers: { "custom-token": { enabled: true } } };
    const [first, second] = [await newApp(app, enabled), await newApp(app, enabled)];
    // The key is a secret: the control API redacts it, so it is read from the emulator itself.
    const keyOf = async (appId: string) =>
      (await app.emulator.apps.get(appId))!.config.providers!["custom-token"]!.signingKey!;
    const [keyA, keyB, defaultKey] = [await keyOf(first), await keyOf(second), await keyOf("local-app")];
    for (const key of [keyA, keyB, defaultKey]) expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(new Set([keyA, keyB, defaultKey]).size).toBe(3);
    const now = Math.floor(Date.now() / 1000);
    const token = (key: string) => hs256({ sub: "user-1", aud: "local-app", exp: now + 600 }, key);
    const login = (appId: string, key: string) =>
      call(app, "login", { method: "POST", url: loginUrl(appId, "custom-token"), payload: { token: token(key) } });
    expect((await login(first, keyA)).response.statusCode).toBe(200);
    // Another app's key, and the development key the template once shipped, open nothing.
    expect((await login(second, keyA)).body.error).toBe("invalid custom auth token: signature is invalid");
    const formerKey = "local-custom-token-signing-key-for-development-only";
    expect((await login(first, formerKey)).response.statusCode).toBe(401);
    // A key given when the app is made is the app's.
    const own = await newApp(app, { providers: { "custom-token": { enabled: true, signingKey: "an-own-key-1" } } });
    expect(await keyOf(own)).toBe("an-own-key-1");
  });

  it("custom-function: the auth function maps the payload to an identity; a throw refuses", async () => {
    const appId = await newApp(app, {
      providers: { "custom-function": { enabled: true, authFunctionName: "authenticate" } },
    });
    const ok = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "custom-function"),
      payload: { username: "Ada", pin: { $numberInt: "333" } },
    });
    expect(ok.response.statusCode).toBe(200);
    const profile = await call(app, "getProfile", {
      method: "GET",
      url: `${base}/auth/profile`,
      headers: bearer(ok.body.access_token),
    });
    expect(profile.body.identities[0]).toMatchObject({ id: "ada", provider_type: "custom-function" });
    const refused = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "custom-function"),
      payload: { username: "Ada", pin: "000" },
    });
    expect(refused.response.statusCode).toBe(401);
    expect(refused.body.error).toContain("wrong pin");
    // The id names an identity in every refresh token of its sessions: at most 1,024 characters.
    const withId = (length: number) =>
      call(app, "login", {
        method: "POST",
        url: loginUrl(appId, "custom-function"),
        // (The template's function wants the name's length, repeated to three digits, as the pin.)
        payload: { username: "a".repeat(length), pin: String(length).repeat(3).slice(0, 3) },
      });
    expect((await withId(maxIdentityIdLength)).response.statusCode).toBe(200);
    const long = await withId(maxIdentityIdLength + 1);
    expect([long.response.statusCode, long.body]).toEqual([
      401,
      expect.objectContaining({
        error: `authentication function failed: the id it returned is longer than ${maxIdentityIdLength} characters`,
        error_code: "InvalidPassword",
      }),
    ]);
  });
});

describe("login?link=true", () => {
  it("links e-mail/password to an anonymous user, which keeps its id", async () => {
    const appId = await newApp(app, { providers: { "local-userpass": { autoConfirm: true } } });
    const anon = await anonymousLogin(app, appId);
    await call(app, "registerUser", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/register`,
      payload: { email: "up@example.com", password: "secret-1" },
    });
    const { response, body } = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "local-userpass", true),
      headers: bearer(anon.access_token),
      payload: { username: "up@example.com", password: "secret-1" },
    });
    expect(response.statusCode).toBe(200);
    expect(body.user_id).toBe(anon.user_id);
    expect(body.refresh_token).toBeUndefined();
    const profile = await call(app, "getProfile", {
      method: "GET",
      url: `${base}/auth/profile`,
      headers: bearer(body.access_token),
    });
    expect(profile.body.identities.map((i: { provider_type: string }) => i.provider_type)).toEqual([
      "anon-user",
      "local-userpass",
    ]);
    expect(profile.body.data.email).toBe("up@example.com");
    const direct = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "local-userpass"),
      payload: { username: "up@example.com", password: "secret-1" },
    });
    expect(direct.body.user_id).toBe(anon.user_id);
  });

  it("refuses an identity of another user, a second e-mail identity, anonymous credentials and a missing token", async () => {
    const appId = await newApp(app);
    const ada = await emailUser(app, appId, "ada@example.com", "secret-1");
    await emailUser(app, appId, "bob@example.com", "secret-1");
    const anon = await anonymousLogin(app, appId);
    const taken = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "local-userpass", true),
      headers: bearer(anon.access_token),
      payload: { username: "ada@example.com", password: "secret-1" },
    });
    expect(taken.response.statusCode).toBe(401);
    expect(taken.body).toMatchObject({
      error: "a user already exists with the specified provider",
      error_code: "AuthError",
    });

    // A confirmed registration without a user object yet: linking it to Ada, who has an e-mail identity.
    await confirmedRegistration(app, appId, "cy@example.com");
    const second = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "local-userpass", true),
      headers: bearer(ada.access_token),
      payload: { username: "cy@example.com", password: "secret-1" },
    });
    expect(second.response.statusCode).toBe(401);
    // The service's code for these two refusals, as realm-kotlin's error mapping reads them.
    expect(second.body).toMatchObject({
      error: "linking a local-userpass identity is not allowed when one is already linked",
      error_code: "InternalServerError",
    });

    const anonymous = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "anon-user", true),
      headers: bearer(ada.access_token),
      payload: {},
    });
    expect(anonymous.body).toMatchObject({
      error: "linking an anonymous identity is not allowed",
      error_code: "InternalServerError",
    });

    const noToken = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "local-userpass", true),
      payload: { username: "ada@example.com", password: "secret-1" },
    });
    expect(noToken.response.statusCode).toBe(401);
  });

  describe("two links to one user at once", () => {
    afterEach(() => vi.restoreAllMocks());

    it("attach one e-mail/password identity: the other is refused and nothing of it is kept", async () => {
      const appId = await newApp(app);
      // Confirmed registrations without user objects yet.
      for (const email of ["ada@example.com", "bob@example.com"]) await confirmedRegistration(app, appId, email);
      const anon = await anonymousLogin(app, appId);
      // Both past the check of the user's identities before either adds its own.
      bothBefore(Object.getPrototypeOf(app.emulator.store.apps.scope(appId).users), "addIdentity");
      const links = await Promise.all(
        ["ada@example.com", "bob@example.com"].map((username) =>
          call(app, "login", {
            method: "POST",
            url: loginUrl(appId, "local-userpass", true),
            headers: bearer(anon.access_token),
            payload: { username, password: "secret-1" },
          }),
        ),
      );
      vi.restoreAllMocks();
      const [linked, refused] = links[0]!.response.statusCode === 200 ? links : [links[1]!, links[0]!];
      expect([linked!.response.statusCode, refused!.response.statusCode]).toEqual([200, 401]);
      expect(refused!.body).toMatchObject({
        error: "linking a local-userpass identity is not allowed when one is already linked",
        error_code: "InternalServerError",
      });
      const profile = await call(app, "getProfile", {
        method: "GET",
        url: `${base}/auth/profile`,
        headers: bearer(linked!.body.access_token),
      });
      expect(profile.body.identities.map((i: { provider_type: string }) => i.provider_type)).toEqual([
        "anon-user",
        "local-userpass",
      ]);
      // The refused address signs in as a user of its own, not as the linked one.
      const [linkedEmail, refusedEmail] =
        links[0] === linked ? ["ada@example.com", "bob@example.com"] : ["bob@example.com", "ada@example.com"];
      expect(profile.body.data.email).toBe(linkedEmail);
      const own = await call(app, "login", {
        method: "POST",
        url: loginUrl(appId, "local-userpass"),
        payload: { username: refusedEmail, password: "secret-1" },
      });
      expect(own.response.statusCode).toBe(200);
      expect(own.body.user_id).not.toBe(anon.user_id);
    });
  });
});
