/**
 * The production code path of Google, Apple and Facebook sign-ins, against the fake identity
 * provider run as a separate process (`cli.js idp`) and reached only through its URLs: discovery
 * documents, key sets and token endpoints over HTTP, Apple's client-secret JWT made from a `.p8`
 * key (and checked by the provider), Facebook's Graph API. Every check an ID token must pass is
 * shown failing: signature, issuer, audience, expiry, nonce.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { base, call, getProfile, testApp } from "../helpers/app.ts";
import {
  type EmulatorProcess,
  ensureBuilt,
  killAll,
  startIdentityProviderProcess,
} from "../helpers/emulator-process.ts";
import { expectFetchContract } from "../helpers/fetch-contract.ts";
import { beginUrl, fragmentOf, local, location, loginUrl, userAuthOf, webRedirect } from "../helpers/oauth2.ts";

const appId = "remote-app";
const tenant = "production";
let idp: EmulatorProcess;
let app: FastifyInstance;
let folder: string;

function appFolder(dir: string, appleKey: string) {
  mkdirSync(join(dir, "auth"), { recursive: true });
  writeFileSync(join(dir, "realm_config.json"), JSON.stringify({ app_id: appId, name: "remote" }));
  const provider = (type: string, clientId: string, extra: Record<string, unknown> = {}) => ({
    name: type,
    type,
    disabled: false,
    config: { clientId, ...extra },
    secret_config: { clientSecret: `${type}-secret` },
    metadata_fields: [{ name: "name" }, { name: "email" }],
    redirect_uris: [webRedirect],
  });
  writeFileSync(
    join(dir, "auth", "providers.json"),
    JSON.stringify({
      "oauth2-google": provider("oauth2-google", "remote.apps.googleusercontent.example"),
      "oauth2-apple": provider("oauth2-apple", "example.remote.web", { teamId: "TEAM123456", keyId: "KEY1234567" }),
      "oauth2-facebook": provider("oauth2-facebook", "200000000000002"),
    }),
  );
  writeFileSync(
    join(dir, "secrets.json"),
    JSON.stringify({
      "oauth2-google-secret": "google-secret-of-the-app",
      "oauth2-apple-secret": appleKey,
      "oauth2-facebook-secret": "facebook-secret-of-the-app",
    }),
  );
}

const p8 = () =>
  generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();

beforeAll(async () => {
  await ensureBuilt();
  folder = mkdtempSync(join(tmpdir(), "oauth2-remote-"));
  appFolder(folder, p8());
  // The provider knows the app's clients (as registering the app with Google, Apple and Facebook does).
  idp = await startIdentityProviderProcess(["--app", folder]);
  app = await testApp({ identityProvider: `${idp.url}/_mock/idp/${tenant}`, appDirs: [folder] });
}, 60_000);

afterAll(async () => {
  await app?.close();
  await idp?.stop();
  killAll();
  rmSync(folder, { recursive: true, force: true });
});

/** A token from the provider process's control API (its own contract checked). */
async function mint(request: Record<string, unknown>) {
  const response = await fetch(`${idp.url}/_mock/v1/apps/${tenant}/identity-provider/tokens`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "ada@example.com", name: "Ada Lovelace", ...request }),
  });
  return (await expectFetchContract("mintIdentityProviderToken", response)) as { token: string; sub: string };
}

const login = (provider: string, payload: Record<string, unknown>) =>
  call(app, "login", { method: "POST", url: loginUrl(appId, provider), payload });

/** The browser flow, the provider's pages fetched from its process, the emulator's steps injected. */
async function browserSignIn(provider: string, email: string) {
  const begin = await call(app, "beginOAuthLogin", { method: "GET", url: beginUrl(appId, provider) });
  const authorize = location(begin.response);
  expect(authorize.startsWith(`${idp.url}/_mock/idp/${tenant}/${provider}/authorize?`)).toBe(true);
  await expectFetchContract("showIdpAuthorization", await fetch(authorize));
  const fields = Object.fromEntries(new URL(authorize).searchParams);
  const answer = await fetch(authorize.split("?")[0]!, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ ...fields, choice: "new", email, name: "Ada Lovelace" }),
  });
  await expectFetchContract("submitIdpAuthorization", answer);
  if (answer.status === 302) {
    const back = await call(app, "finishOAuthLogin", { method: "GET", url: local(answer.headers.get("location")!) });
    return fragmentOf(location(back.response));
  }
  const html = await answer.text();
  const form = Object.fromEntries(
    [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
      m[1]!,
      m[2]!.replaceAll("&quot;", '"').replaceAll("&amp;", "&"),
    ]),
  );
  const back = await call(app, "finishOAuthLoginForm", {
    method: "POST",
    url: `${base}/auth/callback`,
    headers: { "content-type": "application/x-www-form-urlencoded" },
    payload: new URLSearchParams(form).toString(),
  });
  return fragmentOf(location(back.response));
}

describe("OAuth 2.0 providers reached over HTTP (the production code path)", () => {
  it("Google and Apple ID tokens verify through the provider's discovery document and key set", async () => {
    for (const provider of ["oauth2-google", "oauth2-apple"]) {
      const minted = await mint({ provider, kind: "id_token" });
      const { response, body } = await login(provider, { id_token: minted.token });
      expect(response.statusCode).toBe(200);
      const profile = (await getProfile(app, body.access_token)).body;
      expect(profile.identities[0]).toMatchObject({ id: minted.sub, provider_type: provider });
    }
  });

  it.each([
    ["signature", { signedBy: "stranger" }, "signature is invalid"],
    ["issuer", { issuer: "https://accounts.google.com" }, "issuer does not match"],
    ["audience", { audience: "another.apps.googleusercontent.example" }, "audience does not match"],
    ["expiry", { expiresInSeconds: -1 }, "token is expired"],
  ])("refuses an ID token whose %s is wrong", async (_what, overrides, reason) => {
    const minted = await mint({ provider: "oauth2-google", kind: "id_token", ...overrides });
    const { response, body } = await login("oauth2-google", { id_token: minted.token });
    expect(response.statusCode).toBe(401);
    expect(body).toMatchObject({ error: `invalid OAuth 2.0 token: ${reason}`, error_code: "AuthError" });
  });

  it("exchanges a Google code at the token endpoint with the client secret", async () => {
    const code = await mint({ provider: "oauth2-google", kind: "authCode" });
    expect((await login("oauth2-google", { authCode: code.token })).response.statusCode).toBe(200);
  });

  it("checks a Facebook access token with debug_token and reads /me", async () => {
    const token = await mint({ provider: "oauth2-facebook", kind: "accessToken" });
    const { body } = await login("oauth2-facebook", { accessToken: token.token });
    expect((await getProfile(app, body.access_token)).body.data).toEqual({
      name: "Ada Lovelace",
      email: "ada@example.com",
    });
    const stranger = await mint({ provider: "oauth2-facebook", kind: "accessToken", audience: "300000000000003" });
    expect((await login("oauth2-facebook", { accessToken: stranger.token })).body.error).toBe(
      "invalid OAuth 2.0 token: audience does not match",
    );
  });

  it.each(["oauth2-google", "oauth2-apple", "oauth2-facebook"])(
    "%s: the whole browser flow through the provider process",
    async (provider) => {
      const fragment = await browserSignIn(provider, `${provider}@example.com`);
      expect(fragment._baas_error).toBeUndefined();
      const profile = (await getProfile(app, userAuthOf(fragment).accessToken)).body;
      expect(profile.data).toEqual({ name: "Ada Lovelace", email: `${provider}@example.com` });
    },
  );

  it("refuses the ID token a code brings when its nonce is not the flow's", async () => {
    const begin = await call(app, "beginOAuthLogin", { method: "GET", url: beginUrl(appId, "oauth2-apple") });
    const authorize = new URL(location(begin.response));
    const code = await mint({
      provider: "oauth2-apple",
      kind: "authCode",
      redirectUri: authorize.searchParams.get("redirect_uri"),
      nonce: "not-the-flow-nonce",
    });
    const back = await call(app, "finishOAuthLogin", {
      method: "GET",
      url: `${base}/auth/callback?${new URLSearchParams({ code: code.token, state: authorize.searchParams.get("state")! })}`,
    });
    expect(fragmentOf(location(back.response))._baas_error).toBe("invalid OAuth 2.0 token: nonce does not match");
  });

  it("Apple refuses a client-secret JWT signed with another key", async () => {
    // The same app, but its .p8 key is not the one the provider knows.
    const other = mkdtempSync(join(tmpdir(), "oauth2-other-key-"));
    try {
      appFolder(other, p8());
      const withOtherKey = await testApp({ identityProvider: `${idp.url}/_mock/idp/${tenant}`, appDirs: [other] });
      try {
        const begin = await withOtherKey.inject({ method: "GET", url: beginUrl(appId, "oauth2-apple") });
        const authorize = new URL(String(begin.headers.location));
        const code = await mint({
          provider: "oauth2-apple",
          kind: "authCode",
          redirectUri: authorize.searchParams.get("redirect_uri"),
        });
        const back = await withOtherKey.inject({
          method: "GET",
          url: `${base}/auth/callback?${new URLSearchParams({ code: code.token, state: authorize.searchParams.get("state")! })}`,
        });
        expect(fragmentOf(String(back.headers.location))._baas_error).toBe(
          "error exchanging access code with OAuth2 provider",
        );
      } finally {
        await withOtherKey.close();
      }
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it("answers a provider that cannot be reached as a provider failure, at the redirect and on POST login", async () => {
    const closed = await testApp({ identityProvider: "http://127.0.0.1:9/_mock/idp/none", appDirs: [folder] });
    try {
      const begin = await closed.inject({ method: "GET", url: beginUrl(appId, "oauth2-google") });
      expect(begin.statusCode).toBe(302);
      expect(fragmentOf(String(begin.headers.location))).toMatchObject({
        _baas_state: "abcdefghijkl",
        _baas_error: "error fetching info from OAuth2 provider",
      });
      const login = await closed.inject({
        method: "POST",
        url: loginUrl(appId, "oauth2-facebook"),
        payload: { accessToken: "EAAx" },
      });
      expect(login.statusCode).toBe(401);
      expect(login.json()).toMatchObject({
        error: "error fetching info from OAuth2 provider",
        error_code: "AuthError",
      });
    } finally {
      await closed.close();
    }
  });
});

describe("the provider run alone", () => {
  it("routes a path whose percent-encoding is malformed to the tenant the URL standard reads in it", async () => {
    for (const [tenant, written] of [
      ["%ZZ", "%25ZZ"],
      ["%C3%28", "%EF%BF%BD("],
    ]) {
      const response = await fetch(`${idp.url}/_mock/idp/${tenant}/oauth2-google/.well-known/openid-configuration`);
      expect(response.status, tenant).toBe(200);
      expect((await response.json()).issuer, tenant).toBe(`${idp.url}/_mock/idp/${written}/oauth2-google`);
    }
  });
});
