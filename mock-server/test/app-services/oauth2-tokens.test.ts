/**
 * Google, Apple and Facebook through `POST …/login`: the tokens a provider's own SDK hands a
 * client (Google Identity Services' ID token or code, Apple's ID token, the Facebook SDK's access
 * token), minted by the harness's fake identity provider and checked as a real one's would be.
 */

import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maxProviderTokenLength } from "../../src/oauth2/authenticate.ts";
import { anonymousLogin, bearer, call, getProfile, newApp, testApp } from "../helpers/app.ts";
import { loginUrl, mint } from "../helpers/oauth2.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

const login = (appId: string, provider: string, payload: Record<string, unknown>, headers = {}) =>
  call(app, "login", { method: "POST", url: loginUrl(appId, provider), payload, headers });

const ada = { email: "ada@example.com", name: "Ada Lovelace" };

describe("OAuth 2.0 token flows", () => {
  it("oauth2-google with an ID token: a user keyed by the provider's sub, profile data per metadata_fields", async () => {
    const appId = await newApp(app);
    const minted = await mint(app, appId, { provider: "oauth2-google", kind: "id_token", ...ada });
    expect(minted.sub).toMatch(/^1\d{20}$/);
    const { response, body } = await login(appId, "oauth2-google", { id_token: minted.token });
    expect(response.statusCode).toBe(200);
    const profile = (await getProfile(app, body.access_token)).body;
    expect(profile.identities).toEqual([
      { id: minted.sub, provider_type: "oauth2-google", provider_id: expect.stringMatching(/^[0-9a-f]{24}$/) },
    ]);
    // The template asks for name, email and picture; the account has no picture.
    expect(profile.data).toEqual({ name: "Ada Lovelace", email: "ada@example.com" });

    // A returning account signs in as the same user.
    const again = await mint(app, appId, { provider: "oauth2-google", kind: "id_token", email: "ADA@example.com" });
    expect(again.sub).toBe(minted.sub);
    const second = await login(appId, "oauth2-google", { id_token: again.token });
    expect(second.body.user_id).toBe(body.user_id);
  });

  it("oauth2-google with an authorization code of Google Identity Services' code flow", async () => {
    const appId = await newApp(app);
    const code = await mint(app, appId, { provider: "oauth2-google", kind: "authCode", ...ada });
    const { body } = await login(appId, "oauth2-google", { authCode: code.token });
    const profile = (await getProfile(app, body.access_token)).body;
    expect(profile.identities[0]).toMatchObject({ id: code.sub, provider_type: "oauth2-google" });
    // A code is good once.
    const reused = await login(appId, "oauth2-google", { authCode: code.token });
    expect(reused.response.statusCode).toBe(401);
    expect(reused.body).toMatchObject({
      error: "error exchanging access code with OAuth2 provider",
      error_code: "AuthError",
    });
  });

  it("oauth2-apple with an ID token (Apple's subject, e-mail only)", async () => {
    const appId = await newApp(app);
    const minted = await mint(app, appId, { provider: "oauth2-apple", kind: "id_token", ...ada });
    expect(minted.sub).toMatch(/^\d{6}\.[0-9a-f]{32}\.\d{4}$/);
    const { body } = await login(appId, "oauth2-apple", { id_token: minted.token });
    const profile = (await getProfile(app, body.access_token)).body;
    expect(profile.identities[0]).toMatchObject({ id: minted.sub, provider_type: "oauth2-apple" });
    expect(profile.data).toEqual({ email: "ada@example.com" });
  });

  it("oauth2-facebook with an access token: checked with debug_token, profile from /me", async () => {
    const appId = await newApp(app, {
      providers: { "oauth2-facebook": { metadataFields: [{ name: "first_name" }, { name: "email" }] } },
    });
    const minted = await mint(app, appId, { provider: "oauth2-facebook", kind: "accessToken", ...ada });
    const { body } = await login(appId, "oauth2-facebook", { accessToken: minted.token });
    const profile = (await getProfile(app, body.access_token)).body;
    expect(profile.identities[0]).toMatchObject({ id: minted.sub, provider_type: "oauth2-facebook" });
    expect(profile.data).toEqual({ first_name: "Ada", email: "ada@example.com" });
  });

  it.each([
    ["an expired ID token", { expiresInSeconds: -60 }, "token is expired"],
    ["a forged ID token (a key not in the JWKS)", { signedBy: "stranger" }, "signature is invalid"],
    ["another app's ID token", { audience: "someone-else.apps.googleusercontent.com" }, "audience does not match"],
    ["another issuer's ID token", { issuer: "https://evil.example" }, "issuer does not match"],
  ])("refuses %s (401 AuthError, nothing created)", async (_what, overrides, reason) => {
    const appId = await newApp(app);
    const minted = await mint(app, appId, { provider: "oauth2-google", kind: "id_token", ...ada, ...overrides });
    const { response, body } = await login(appId, "oauth2-google", { id_token: minted.token });
    expect(response.statusCode).toBe(401);
    expect(body).toMatchObject({ error: `invalid OAuth 2.0 token: ${reason}`, error_code: "AuthError" });
    const users = await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` });
    expect(users.body.users).toEqual([]);
  });

  it("expires ID tokens on the app's clock", async () => {
    const appId = await newApp(app);
    const minted = await mint(app, appId, { provider: "oauth2-apple", kind: "id_token", ...ada });
    await call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 3601 },
    });
    const { body } = await login(appId, "oauth2-apple", { id_token: minted.token });
    expect(body.error).toBe("invalid OAuth 2.0 token: token is expired");
  });

  it("refuses malformed tokens and Facebook tokens that are unknown, expired or another app's", async () => {
    const appId = await newApp(app);
    expect((await login(appId, "oauth2-google", { id_token: "not.a.jwt" })).body.error).toBe(
      "invalid OAuth 2.0 token: malformed token",
    );
    expect((await login(appId, "oauth2-facebook", { accessToken: "EAAnope" })).body.error).toBe(
      "invalid OAuth 2.0 token: the access token is not valid",
    );
    const other = await mint(app, appId, {
      provider: "oauth2-facebook",
      kind: "accessToken",
      ...ada,
      audience: "999999999999999",
    });
    expect((await login(appId, "oauth2-facebook", { accessToken: other.token })).body.error).toBe(
      "invalid OAuth 2.0 token: audience does not match",
    );
    const expired = await mint(app, appId, {
      provider: "oauth2-facebook",
      kind: "accessToken",
      ...ada,
      expiresInSeconds: 0,
    });
    const { response, body } = await login(appId, "oauth2-facebook", { accessToken: expired.token });
    expect(response.statusCode).toBe(401);
    expect(body.error).toBe("invalid OAuth 2.0 token: the access token is not valid");
  });

  it(`refuses a token or code past ${maxProviderTokenLength} characters before any work on it`, async () => {
    const appId = await newApp(app);
    const long = "A".repeat(maxProviderTokenLength + 1);
    for (const [provider, field] of [
      ["oauth2-google", "id_token"],
      ["oauth2-apple", "id_token"],
      ["oauth2-facebook", "accessToken"],
    ] as const) {
      const { response, body } = await login(appId, provider, { [field]: long });
      expect([response.statusCode, body.error], provider).toEqual([
        401,
        `invalid OAuth 2.0 token: the token is longer than ${maxProviderTokenLength} characters`,
      ]);
    }
    const code = await login(appId, "oauth2-google", { authCode: long });
    expect([code.response.statusCode, code.body.error]).toEqual([
      401,
      "error exchanging access code with OAuth2 provider",
    ]);
    // A token of the provider's usual size is checked as always.
    const minted = await mint(app, appId, { provider: "oauth2-google", kind: "id_token", ...ada });
    expect((await login(appId, "oauth2-google", { id_token: minted.token })).response.statusCode).toBe(200);
  });

  it("asks for the credential field of each provider, and refuses a provider that is off", async () => {
    const appId = await newApp(app, { providers: { "oauth2-apple": { enabled: false } } });
    const missing = await login(appId, "oauth2-google", {});
    expect(missing.response.statusCode).toBe(400);
    expect(missing.body.error).toBe("'id_token' is a required string");
    expect((await login(appId, "oauth2-facebook", { id_token: "x" })).body.error).toBe(
      "'accessToken' is a required string",
    );
    const off = await login(appId, "oauth2-apple", { id_token: "x" });
    expect(off.response.statusCode).toBe(400);
    expect(off.body).toMatchObject({ error: "authentication via 'oauth2-apple' is unsupported" });
  });

  it("requires the required metadata fields and keeps to domain_restrictions", async () => {
    const appId = await newApp(app, {
      providers: {
        "oauth2-google": { metadataFields: [{ name: "picture", required: true }] },
        "oauth2-apple": { domainRestrictions: ["example.org"] },
      },
    });
    const google = await mint(app, appId, { provider: "oauth2-google", kind: "id_token", ...ada });
    expect((await login(appId, "oauth2-google", { id_token: google.token })).body).toMatchObject({
      error: "the required metadata field 'picture' is missing",
      error_code: "AuthError",
    });
    const apple = await mint(app, appId, { provider: "oauth2-apple", kind: "id_token", ...ada });
    expect((await login(appId, "oauth2-apple", { id_token: apple.token })).body.error).toBe(
      "accounts of the e-mail domain 'example.com' may not sign in to this app",
    );
    const allowed = await mint(app, appId, { provider: "oauth2-apple", kind: "id_token", email: "grace@example.org" });
    expect((await login(appId, "oauth2-apple", { id_token: allowed.token })).response.statusCode).toBe(200);
  });

  it("keeps the profile current: a later login brings the provider's new name", async () => {
    const appId = await newApp(app);
    const first = await mint(app, appId, { provider: "oauth2-google", kind: "id_token", ...ada });
    await login(appId, "oauth2-google", { id_token: first.token });
    const renamed = await mint(app, appId, {
      provider: "oauth2-google",
      kind: "id_token",
      email: ada.email,
      name: "Ada King",
    });
    const { body } = await login(appId, "oauth2-google", { id_token: renamed.token });
    expect((await getProfile(app, body.access_token)).body.data.name).toBe("Ada King");
  });

  it("links a provider's identity to a signed-in user (?link=true), and refuses one another user has", async () => {
    const appId = await newApp(app);
    const guest = await anonymousLogin(app, appId);
    const minted = await mint(app, appId, { provider: "oauth2-google", kind: "id_token", ...ada });
    const linked = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "oauth2-google", true),
      headers: bearer(guest.access_token),
      payload: { id_token: minted.token },
    });
    expect(linked.response.statusCode).toBe(200);
    expect(linked.body.user_id).toBe(guest.user_id);
    expect(linked.body.refresh_token).toBeUndefined();
    const profile = (await getProfile(app, linked.body.access_token)).body;
    expect(profile.identities.map((i: { provider_type: string }) => i.provider_type)).toEqual([
      "anon-user",
      "oauth2-google",
    ]);
    // Signing in with it now signs in as the guest's user.
    const again = await mint(app, appId, { provider: "oauth2-google", kind: "id_token", ...ada });
    expect((await login(appId, "oauth2-google", { id_token: again.token })).body.user_id).toBe(guest.user_id);

    const other = await anonymousLogin(app, appId);
    const taken = await call(app, "login", {
      method: "POST",
      url: loginUrl(appId, "oauth2-google", true),
      headers: bearer(other.access_token),
      payload: { id_token: again.token },
    });
    expect(taken.response.statusCode).toBe(401);
    expect(taken.body).toMatchObject({
      error: "a user already exists with the specified provider",
      error_code: "AuthError",
    });
  });

  it("gives concurrent first logins of one account one user", async () => {
    const appId = await newApp(app);
    const tokens = await Promise.all(
      [1, 2, 3, 4].map(() => mint(app, appId, { provider: "oauth2-facebook", kind: "accessToken", ...ada })),
    );
    const logins = await Promise.all(tokens.map((t) => login(appId, "oauth2-facebook", { accessToken: t.token })));
    expect(new Set(logins.map((l) => l.body.user_id)).size).toBe(1);
    // Each of them signed in, with a session of its own that works.
    expect(logins.map((l) => l.response.statusCode)).toEqual([200, 200, 200, 200]);
    for (const l of logins) expect((await getProfile(app, l.body.access_token)).response.statusCode).toBe(200);
    expect(new Set(logins.map((l) => l.body.refresh_token)).size).toBe(4);
    const users = await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` });
    expect(users.body.users).toHaveLength(1);
  });
});
