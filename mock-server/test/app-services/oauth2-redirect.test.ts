/**
 * The browser flow of Google, Apple and Facebook sign-ins (realm-web's
 * `Credentials.google({redirectUrl})`): `GET …/login` → the provider's page (here the fake
 * identity provider's picker) → `/auth/callback` → `<redirect>#_baas_…`. Every step's reply is
 * contract-checked.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, base, bearer, call, getProfile, newApp, testApp } from "../helpers/app.ts";
import {
  beginUrl,
  browserSignIn,
  fragmentOf,
  local,
  location,
  mint,
  throughProvider,
  userAuthOf,
  webRedirect,
} from "../helpers/oauth2.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

const begin = (appId: string, provider: string, query: Parameters<typeof beginUrl>[2] = {}, headers = {}) =>
  call(app, "beginOAuthLogin", { method: "GET", url: beginUrl(appId, provider, query), headers });

const callback = (query: Record<string, string>) =>
  call(app, "finishOAuthLogin", { method: "GET", url: `${base}/auth/callback?${new URLSearchParams(query)}` });

describe("the OAuth 2.0 browser flow", () => {
  it("sends the browser to the provider with everything OpenID Connect asks for", async () => {
    const appId = await newApp(app);
    const { response, body } = await begin(appId, "oauth2-google");
    expect(response.statusCode).toBe(302);
    expect(body).toBeUndefined();
    const url = new URL(location(response));
    expect(url.pathname).toBe(`/_mock/idp/${appId}/oauth2-google/authorize`);
    const q = Object.fromEntries(url.searchParams);
    expect(q).toMatchObject({
      client_id: "local-app.apps.googleusercontent.example",
      redirect_uri: "http://localhost:80/api/client/v2.0/auth/callback",
      response_type: "code",
      scope: "openid email profile",
      code_challenge_method: "S256",
    });
    expect(q.nonce).toMatch(/^[\w-]{20,}$/);
    expect(q.code_challenge).toMatch(/^[\w-]{43}$/);
    // The flow travels sealed: nothing of it is readable in the state.
    expect(q.state!.split(".")).toHaveLength(5);
    expect(q.state).not.toContain("abcdefghijkl");
  });

  it("signs a new account in and back at the redirect with the tokens; the account returns as the same user", async () => {
    const appId = await newApp(app);
    const device = Buffer.from(
      JSON.stringify({ sdkVersion: "2.0.1", deviceId: { $oid: "65a1b2c3d4e5f60718293a4b" } }),
    ).toString("base64");
    const { location: end, fragment } = await browserSignIn(
      app,
      appId,
      "oauth2-google",
      { email: "ada@example.com", name: "Ada Lovelace" },
      { device },
    );
    expect(end.startsWith(`${webRedirect}#`)).toBe(true);
    expect(fragment).toMatchObject({ _baas_client_app_id: appId, _baas_state: "abcdefghijkl" });
    expect(fragment._baas_error).toBeUndefined();
    const auth = userAuthOf(fragment);
    expect(auth.deviceId).toBe("65a1b2c3d4e5f60718293a4b");
    const profile = (await getProfile(app, auth.accessToken)).body;
    expect(profile.user_id).toBe(auth.userId);
    expect(profile.identities[0]).toMatchObject({ provider_type: "oauth2-google" });
    expect(profile.data).toEqual({ name: "Ada Lovelace", email: "ada@example.com" });
    // The refresh token works.
    const refreshed = await call(app, "refreshAccessToken", {
      method: "POST",
      url: `${base}/auth/session`,
      headers: bearer(auth.refreshToken),
    });
    expect(refreshed.response.statusCode).toBe(201);

    // The picker now lists the account; choosing it again is the same user.
    const second = await begin(appId, "oauth2-google");
    const page = await call(app, "showIdpAuthorization", { method: "GET", url: local(location(second.response)) });
    expect(page.body).toContain("ada@example.com");
    const again = await throughProvider(app, location(second.response), { email: "ada@example.com" });
    expect(userAuthOf(fragmentOf(location(again))).userId).toBe(auth.userId);
  });

  it("Sign in with Apple: a form post back, the name taken from it the first time", async () => {
    const appId = await newApp(app);
    const first = await browserSignIn(app, appId, "oauth2-apple", { email: "grace@example.com", name: "Grace Hopper" });
    const auth = userAuthOf(first.fragment);
    expect((await getProfile(app, auth.accessToken)).body.data).toEqual({
      name: "Grace Hopper",
      email: "grace@example.com",
    });
    // Apple sends the name once; the profile keeps it.
    const second = await browserSignIn(app, appId, "oauth2-apple", { email: "grace@example.com" });
    const again = userAuthOf(second.fragment);
    expect(again.userId).toBe(auth.userId);
    expect((await getProfile(app, again.accessToken)).body.data.name).toBe("Grace Hopper");
  });

  it("Facebook: its dialog, a code exchanged at the Graph API, the account checked with debug_token", async () => {
    const appId = await newApp(app);
    const begun = await begin(appId, "oauth2-facebook");
    const url = new URL(location(begun.response));
    expect(url.searchParams.get("scope")).toBe("email public_profile");
    expect(url.searchParams.has("nonce")).toBe(false);
    const { fragment } = await browserSignIn(app, appId, "oauth2-facebook", { email: "ada@example.com", name: "Ada" });
    const profile = (await getProfile(app, userAuthOf(fragment).accessToken)).body;
    expect(profile.identities[0]).toMatchObject({
      provider_type: "oauth2-facebook",
      id: expect.stringMatching(/^\d{16}$/),
    });
  });

  it("a cancelled sign-in goes back to the redirect with _baas_error", async () => {
    const appId = await newApp(app);
    for (const provider of ["oauth2-google", "oauth2-apple", "oauth2-facebook"] as const) {
      const { fragment } = await browserSignIn(app, appId, provider, "cancel");
      expect(fragment).toMatchObject({ _baas_client_app_id: appId, _baas_state: "abcdefghijkl" });
      expect(fragment._baas_ua).toBeUndefined();
      expect(fragment._baas_error).toMatch(/^error from OAuth2 provider: (access_denied|user_cancelled_authorize)$/);
    }
    const users = await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` });
    expect(users.body.users).toEqual([]);
  });

  it("never redirects to a URI outside the provider's redirect_uris", async () => {
    const appId = await newApp(app);
    const { response, body } = await begin(appId, "oauth2-google", { redirect: "https://evil.example/" });
    expect(response.statusCode).toBe(400);
    expect(response.headers.location).toBeUndefined();
    expect(body).toMatchObject({
      error: "redirect URI 'https://evil.example/' is not one of the redirect_uris of 'oauth2-google'",
      error_code: "BadRequest",
    });
    // Exactly: a trailing slash makes another URI.
    expect((await begin(appId, "oauth2-google", { redirect: `${webRedirect}/` })).response.statusCode).toBe(400);
    const notOAuth = await begin(appId, "local-userpass");
    expect(notOAuth.response.statusCode).toBe(400);
    expect(notOAuth.body.error).toBe("'local-userpass' does not sign in through a redirect");
    const missing = await call(app, "beginOAuthLogin", {
      method: "GET",
      url: `${base}/app/${appId}/auth/providers/oauth2-google/login?redirect=${encodeURIComponent(webRedirect)}`,
    });
    expect(missing.response.statusCode).toBe(400);
  });

  it("a provider that is off answers at the (allowed) redirect", async () => {
    const appId = await newApp(app, { providers: { "oauth2-google": { enabled: false } } });
    const { response } = await begin(appId, "oauth2-google");
    expect(response.statusCode).toBe(302);
    expect(fragmentOf(location(response))).toMatchObject({
      _baas_state: "abcdefghijkl",
      _baas_error: "authentication via 'oauth2-google' is unsupported",
    });
  });

  it("refuses a callback whose state is missing, forged or more than 10 minutes old (400, no redirect)", async () => {
    const appId = await newApp(app);
    const missing = await callback({ code: "c" });
    expect(missing.response.statusCode).toBe(400);
    expect(missing.body.error).toBe("invalid OAuth 2.0 state: the state parameter is missing");
    const forged = await callback({ code: "c", state: "eyJhbGciOiJkaXIifQ..aaaa.bbbb.cccc" });
    expect(forged.body).toMatchObject({
      error: "invalid OAuth 2.0 state: it was not made by this service",
      error_code: "BadRequest",
    });
    const begun = await begin(appId, "oauth2-google");
    const state = new URL(location(begun.response)).searchParams.get("state")!;
    await call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 601 },
    });
    const late = await callback({ code: "c", state });
    expect(late.response.statusCode).toBe(400);
    expect(late.body.error).toBe("invalid OAuth 2.0 state: the sign-in took longer than 10 minutes; start again");
    // Another emulator (another signing secret) cannot open it either.
    const other = await testApp();
    try {
      const there = await other.inject({ method: "GET", url: `${base}/auth/callback?code=c&state=${state}` });
      expect(there.statusCode).toBe(400);
    } finally {
      await other.close();
    }
  });

  it("checks the nonce of the ID token the code brings, and takes a code once", async () => {
    const appId = await newApp(app);
    const begun = await begin(appId, "oauth2-google");
    const authorize = new URL(location(begun.response));
    const state = authorize.searchParams.get("state")!;
    const redirectUri = authorize.searchParams.get("redirect_uri")!;
    // A code whose ID token carries another nonce (as a replayed or injected one would).
    const code = await mint(app, appId, {
      provider: "oauth2-google",
      kind: "authCode",
      email: "ada@example.com",
      redirectUri,
      nonce: "another-nonce",
    });
    const { response } = await callback({ code: code.token, state });
    expect(response.statusCode).toBe(302);
    expect(fragmentOf(location(response))._baas_error).toBe("invalid OAuth 2.0 token: nonce does not match");
    const reused = await callback({ code: code.token, state });
    expect(fragmentOf(location(reused.response))._baas_error).toBe("error exchanging access code with OAuth2 provider");
  });

  it("links through the browser flow: X-BAAS-Location for realm-web's fetch, then _baas_link=ok", async () => {
    const appId = await newApp(app);
    const guest = await anonymousLogin(app, appId);
    const { response, body } = await begin(
      appId,
      "oauth2-google",
      { link: "true", providerRedirectHeader: "true" },
      bearer(guest.access_token),
    );
    expect(response.statusCode).toBe(200);
    expect(body).toBeUndefined();
    expect(response.headers["content-type"]).toBeUndefined();
    const authorize = String(response.headers["x-baas-location"]);
    const end = await throughProvider(app, authorize, { email: "ada@example.com", name: "Ada" });
    const fragment = fragmentOf(location(end));
    expect(fragment._baas_link).toBe("ok");
    const auth = userAuthOf(fragment);
    expect(auth).toMatchObject({ userId: guest.user_id, refreshToken: "", deviceId: guest.device_id });
    const profile = (await getProfile(app, auth.accessToken)).body;
    expect(profile.identities.map((i: { provider_type: string }) => i.provider_type)).toEqual([
      "anon-user",
      "oauth2-google",
    ]);

    // Without the access token a link is refused at the start; an ended session at the end.
    const unauthenticated = await begin(appId, "oauth2-google", { link: "true", providerRedirectHeader: "true" });
    expect(unauthenticated.response.statusCode).toBe(401);
    const other = await anonymousLogin(app, appId);
    const started = await begin(
      appId,
      "oauth2-apple",
      { link: "true", providerRedirectHeader: "true" },
      bearer(other.access_token),
    );
    await call(app, "logOut", { method: "DELETE", url: `${base}/auth/session`, headers: bearer(other.refresh_token) });
    const gone = await throughProvider(app, String(started.response.headers["x-baas-location"]), {
      email: "grace@example.com",
    });
    expect(fragmentOf(location(gone))._baas_error).toBe("invalid session: the user to link signed out or was removed");
  });

  it("lets a browser page read X-BAAS-Location of a credentialed cross-origin link request", async () => {
    const appId = await newApp(app);
    const origin = "http://127.0.0.1:5173";
    const preflight = await app.inject({
      method: "OPTIONS",
      url: beginUrl(appId, "oauth2-google", { link: "true", providerRedirectHeader: "true" }),
      headers: { origin, "access-control-request-method": "GET", "access-control-request-headers": "authorization" },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers).toMatchObject({
      "access-control-allow-origin": origin,
      "access-control-allow-credentials": "true",
    });
    const guest = await anonymousLogin(app, appId);
    const { response } = await begin(
      appId,
      "oauth2-google",
      { link: "true", providerRedirectHeader: "true" },
      { ...bearer(guest.access_token), origin },
    );
    expect(response.headers).toMatchObject({
      "access-control-allow-origin": origin,
      "access-control-allow-credentials": "true",
      "access-control-expose-headers": "X-BAAS-Location",
    });
    // Other operations do not allow credentials.
    const other = await app.inject({ method: "GET", url: `${base}/app/${appId}/location`, headers: { origin } });
    expect(other.headers["access-control-allow-origin"]).toBe(origin);
    expect(other.headers["access-control-allow-credentials"]).toBeUndefined();
  });

  it("a link whose identity another user has goes back with the error", async () => {
    const appId = await newApp(app);
    await browserSignIn(app, appId, "oauth2-google", { email: "ada@example.com" });
    const guest = await anonymousLogin(app, appId);
    const { response } = await begin(
      appId,
      "oauth2-google",
      { link: "true", providerRedirectHeader: "true" },
      bearer(guest.access_token),
    );
    const end = await throughProvider(app, String(response.headers["x-baas-location"]), { email: "ada@example.com" });
    expect(fragmentOf(location(end))._baas_error).toBe("a user already exists with the specified provider");
  });

  it("journals the flow without its secrets (codes, ID tokens)", async () => {
    const appId = await newApp(app);
    await browserSignIn(app, appId, "oauth2-google", { email: "ada@example.com" });
    const minted = await mint(app, appId, { provider: "oauth2-google", kind: "id_token", email: "ada@example.com" });
    await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/oauth2-google/login`,
      payload: { id_token: minted.token },
    });
    const { body } = await call(app, "listRequests", { method: "GET", url: `/_mock/v1/apps/${appId}/requests` });
    const text = JSON.stringify(body);
    expect(text).not.toContain(minted.token);
    const callback = body.requests.find((r: { operationId: string }) => r.operationId === "finishOAuthLogin");
    expect(callback.path).toMatch(/code=%5Bredacted%5D|code=\[redacted\]/);
    const login = body.requests.find((r: { operationId: string }) => r.operationId === "login");
    expect(login.requestBody).toEqual({ id_token: "[redacted]" });
  });

  it("answers a disabled user at the redirect", async () => {
    const appId = await newApp(app);
    const { fragment } = await browserSignIn(app, appId, "oauth2-google", { email: "ada@example.com" });
    const { userId } = userAuthOf(fragment);
    await call(app, "updateUser", {
      method: "PATCH",
      url: `/_mock/v1/apps/${appId}/users/${userId}`,
      payload: { disabled: true },
    });
    const again = await browserSignIn(app, appId, "oauth2-google", { email: "ada@example.com" });
    expect(again.fragment._baas_error).toBe("user disabled");
  });
});
