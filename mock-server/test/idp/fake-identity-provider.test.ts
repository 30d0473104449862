/**
 * The harness's fake identity provider on its own terms: the OpenID Connect and Graph API
 * endpoints behave as a provider's would (and refuse what a provider refuses), its pages are
 * plain accessible forms with every value escaped, and the control API adds accounts and mints
 * tokens per app.
 */
import { createHash } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { base, call, newApp, testApp } from "../helpers/app.ts";
import { mint } from "../helpers/oauth2.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

const idp = (appId: string, provider: string) => `/_mock/idp/${appId}/${provider}`;
const googleClient = "local-app.apps.googleusercontent.example";
const form = { "content-type": "application/x-www-form-urlencoded" };
const encode = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const callback = "http://127.0.0.1:4000/api/client/v2.0/auth/callback";

function authorizeQuery(extra: Record<string, string> = {}) {
  return new URLSearchParams({
    client_id: googleClient,
    redirect_uri: callback,
    response_type: "code",
    scope: "openid email profile",
    state: "s1",
    nonce: "n1",
    ...extra,
  }).toString();
}

/** A code for `email`, through the picker (a new account), with the request's extra parameters. */
async function codeFor(appId: string, email: string, extra: Record<string, string> = {}) {
  const fields = Object.fromEntries(new URLSearchParams(authorizeQuery(extra)));
  const { response } = await call(app, "submitIdpAuthorization", {
    method: "POST",
    url: `${idp(appId, "oauth2-google")}/authorize`,
    headers: form,
    payload: encode({ ...fields, choice: "new", email, name: "Ada Lovelace" }),
  });
  expect(response.statusCode).toBe(302);
  const back = new URL(String(response.headers.location));
  expect(back.origin + back.pathname).toBe(callback);
  expect(back.searchParams.get("state")).toBe("s1");
  return back.searchParams.get("code")!;
}

const exchange = (appId: string, fields: Record<string, string>) =>
  call(app, "exchangeIdpCode", {
    method: "POST",
    url: `${idp(appId, "oauth2-google")}/token`,
    headers: form,
    payload: encode(fields),
  });

describe("the fake identity provider", () => {
  it("publishes a discovery document per provider (PKCE for Google, none for Apple) and its key", async () => {
    const appId = await newApp(app);
    const google = await call(app, "getIdpConfiguration", {
      method: "GET",
      url: `${idp(appId, "oauth2-google")}/.well-known/openid-configuration`,
    });
    expect(google.body).toMatchObject({
      issuer: `http://localhost:80${idp(appId, "oauth2-google")}`,
      token_endpoint: `http://localhost:80${idp(appId, "oauth2-google")}/token`,
      id_token_signing_alg_values_supported: ["RS256"],
      code_challenge_methods_supported: ["S256"],
    });
    const apple = await call(app, "getIdpConfiguration", {
      method: "GET",
      url: `${idp(appId, "oauth2-apple")}/.well-known/openid-configuration`,
    });
    expect(apple.body.code_challenge_methods_supported).toBeUndefined();
    const keys = await call(app, "getIdpKeys", { method: "GET", url: `${idp(appId, "oauth2-google")}/jwks` });
    expect(keys.body.keys).toHaveLength(1);
    expect(keys.body.keys[0]).toMatchObject({ kty: "RSA", alg: "RS256", use: "sig" });
    expect(keys.body.keys[0].d).toBeUndefined();
    const minted = await mint(app, appId, { provider: "oauth2-google", kind: "id_token", email: "ada@example.com" });
    expect(decodeProtectedHeader(minted.token).kid).toBe(keys.body.keys[0].kid);

    const notAProvider = await call(app, "exchangeIdpCode", {
      method: "POST",
      url: `${idp(appId, "custom-function")}/token`,
      headers: form,
      payload: encode({ grant_type: "authorization_code" }),
    });
    expect(notAProvider.response.statusCode).toBe(404);
    expect(notAProvider.body.error_description).toBe("'custom-function' is not a provider this one stands in for");
    // A JSON body where a form is documented: read as far as it goes, never a server error.
    const jsonBody = await call(app, "exchangeIdpCode", {
      method: "POST",
      url: `${idp(appId, "oauth2-google")}/token`,
      payload: { grant_type: "authorization_code" },
    });
    expect(jsonBody.response.statusCode).toBe(401);
    expect(jsonBody.body.error).toBe("invalid_client");
    const unknown = await call(app, "getIdpKeys", { method: "GET", url: `${idp("nope", "oauth2-google")}/jwks` });
    expect(unknown.response.statusCode).toBe(404);
    expect(unknown.body).toEqual({ error: "invalid_request", error_description: "no app with id 'nope'" });
  });

  it("shows an accessible account picker, every value escaped", async () => {
    const appId = await newApp(app);
    await call(app, "createIdentityProviderAccount", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/identity-provider/accounts`,
      payload: { email: "mallory@example.com", name: '<img src=x onerror="alert(1)">' },
    });
    const { response, body } = await call(app, "showIdpAuthorization", {
      method: "GET",
      url: `${idp(appId, "oauth2-google")}/authorize?${authorizeQuery({ state: '"><script>x</script>' })}`,
    });
    expect(response.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(response.headers["cache-control"]).toBe("no-store");
    const html = body as string;
    expect(html).toContain('<html lang="en">');
    expect(html).toContain("<h1>Sign in with Google</h1>");
    expect(html).toContain('<h2 id="accounts-heading">Choose an account</h2>');
    expect(html).toContain('<label for="email">E-mail address</label>');
    expect(html).toContain('<label for="name">Name</label>');
    expect(html).toContain('<button type="submit">Cancel</button>');
    expect(html).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    expect(html).not.toContain("<img");
    expect(html).not.toContain("<script>");
    expect(html).toContain("script-src 'none'");
  });

  it("refuses a request no provider would answer, without redirecting", async () => {
    const appId = await newApp(app);
    const bad = async (extra: Record<string, string>, error: string) => {
      const { response, body } = await call(app, "showIdpAuthorization", {
        method: "GET",
        url: `${idp(appId, "oauth2-google")}/authorize?${authorizeQuery(extra)}`,
      });
      expect(response.statusCode).toBe(400);
      expect(response.headers.location).toBeUndefined();
      expect(body.error).toBe(error);
    };
    await bad({ client_id: "someone-else" }, "unauthorized_client");
    await bad({ redirect_uri: "javascript:alert(1)" }, "invalid_request");
    await bad({ response_type: "token" }, "unsupported_response_type");
    await bad({ code_challenge: "abc", code_challenge_method: "plain" }, "invalid_request");
  });

  it("asks again, saying why, for an e-mail address that is not one", async () => {
    const appId = await newApp(app);
    const fields = Object.fromEntries(new URLSearchParams(authorizeQuery()));
    const { response, body } = await call(app, "submitIdpAuthorization", {
      method: "POST",
      url: `${idp(appId, "oauth2-google")}/authorize`,
      headers: form,
      payload: encode({ ...fields, choice: "new", email: "not-an-address", name: "X" }),
    });
    expect(response.statusCode).toBe(200);
    expect(body).toContain('role="alert">&quot;not-an-address&quot; is not an e-mail address.</p>');
    expect(body).toContain('aria-invalid="true" aria-describedby="email-error"');
  });

  it("exchanges a code once, for its client, redirect URI and PKCE verifier only", async () => {
    const appId = await newApp(app);
    const secret = "harness-google-client-secret";
    const base_ = {
      grant_type: "authorization_code",
      client_id: googleClient,
      client_secret: secret,
      redirect_uri: callback,
    };
    const verifier = "a-verifier-of-enough-length-to-be-a-pkce-verifier-ok";
    const challenge = createHash("sha256").update(verifier).digest("base64url");

    const code = await codeFor(appId, "ada@example.com", { code_challenge: challenge, code_challenge_method: "S256" });
    expect((await exchange(appId, { ...base_, code, code_verifier: "wrong" })).body.error).toBe("invalid_grant");
    // A failed exchange used the code up.
    expect((await exchange(appId, { ...base_, code, code_verifier: verifier })).body.error).toBe("invalid_grant");

    const second = await codeFor(appId, "ada@example.com", {
      code_challenge: challenge,
      code_challenge_method: "S256",
    });
    const ok = await exchange(appId, { ...base_, code: second, code_verifier: verifier });
    expect(ok.response.statusCode).toBe(200);
    expect(ok.body).toMatchObject({ token_type: "Bearer", expires_in: 3600, id_token: expect.any(String) });

    const third = await codeFor(appId, "ada@example.com");
    const wrongSecret = await exchange(appId, { ...base_, code: third, client_secret: "guess" });
    expect(wrongSecret.response.statusCode).toBe(401);
    expect(wrongSecret.body.error).toBe("invalid_client");
    const elsewhere = await exchange(appId, { ...base_, code: third, redirect_uri: "http://127.0.0.1:9/cb" });
    expect(elsewhere.body).toEqual({
      error: "invalid_grant",
      error_description: "redirect_uri does not match the authorization request",
    });
    expect((await exchange(appId, { ...base_, grant_type: "password", code: "x" })).body.error).toBe(
      "unsupported_grant_type",
    );
  });

  it("answers Facebook's Graph API: code exchange, debug_token with the app token, /me", async () => {
    const appId = await newApp(app);
    const graph = idp(appId, "oauth2-facebook");
    const wrong = await call(app, "exchangeIdpFacebookCode", {
      method: "GET",
      url: `${graph}/oauth/access_token?client_id=100000000000001&client_secret=guess&code=c&redirect_uri=${callback}`,
    });
    expect(wrong.response.statusCode).toBe(400);
    expect(wrong.body.error).toMatchObject({ type: "OAuthException", message: "Error validating client secret." });
    const token = await mint(app, appId, {
      provider: "oauth2-facebook",
      kind: "accessToken",
      email: "ada@example.com",
    });
    const badApp = await call(app, "debugIdpToken", {
      method: "GET",
      url: `${graph}/debug_token?input_token=${token.token}&access_token=100000000000001|guess`,
    });
    expect(badApp.body.error.code).toBe(190);
    const debug = await call(app, "debugIdpToken", {
      method: "GET",
      url: `${graph}/debug_token?input_token=${token.token}&access_token=100000000000001|harness-facebook-client-secret`,
    });
    expect(debug.body.data).toMatchObject({ is_valid: true, app_id: "100000000000001", user_id: token.sub });
    const me = await call(app, "getIdpUser", {
      method: "GET",
      url: `${graph}/me?access_token=${token.token}&fields=id,email`,
    });
    expect(me.body).toEqual({ id: token.sub, email: "ada@example.com" });
    const bad = await call(app, "getIdpUser", { method: "GET", url: `${graph}/me?access_token=nope` });
    expect(bad.response.statusCode).toBe(400);
    const onToken = await call(app, "exchangeIdpCode", {
      method: "POST",
      url: `${graph}/token`,
      headers: form,
      payload: encode({ grant_type: "authorization_code" }),
    });
    expect(onToken.body.error).toBe("unsupported_grant_type");
  });
});

describe("the fake identity provider's control API", () => {
  it("adds accounts (or renames one), lists them oldest first, forgets them when the app is reset", async () => {
    const appId = await newApp(app);
    const url = `/_mock/v1/apps/${appId}/identity-provider/accounts`;
    const created = await call(app, "createIdentityProviderAccount", {
      method: "POST",
      url,
      payload: { email: "Ada@Example.com", name: "Ada" },
    });
    expect(created.response.statusCode).toBe(201);
    expect(created.body).toMatchObject({
      email: "ada@example.com",
      name: "Ada",
      subjects: { "oauth2-google": expect.stringMatching(/^1\d{20}$/) },
    });
    const renamed = await call(app, "createIdentityProviderAccount", {
      method: "POST",
      url,
      payload: { email: "ada@example.com", name: "Ada Lovelace" },
    });
    expect(renamed.response.statusCode).toBe(200);
    expect(renamed.body.subjects).toEqual(created.body.subjects);
    await call(app, "createIdentityProviderAccount", { method: "POST", url, payload: { email: "grace@example.com" } });
    const list = await call(app, "listIdentityProviderAccounts", { method: "GET", url });
    expect(list.body.accounts.map((a: { email: string; name: string }) => [a.email, a.name])).toEqual([
      ["ada@example.com", "Ada Lovelace"],
      ["grace@example.com", "grace"],
    ]);
    await call(app, "resetApp", { method: "POST", url: `/_mock/v1/apps/${appId}/reset` });
    expect((await call(app, "listIdentityProviderAccounts", { method: "GET", url })).body.accounts).toEqual([]);
  });

  it("refuses what it cannot mint, and unknown apps", async () => {
    const appId = await newApp(app);
    const refused = async (payload: Record<string, unknown>, status: number) => {
      const { response } = await call(app, "mintIdentityProviderToken", {
        method: "POST",
        url: `/_mock/v1/apps/${appId}/identity-provider/tokens`,
        payload,
      });
      expect(response.statusCode).toBe(status);
    };
    await refused({ provider: "oauth2-google", kind: "accessToken", email: "a@example.com" }, 400);
    await refused({ provider: "oauth2-facebook", kind: "id_token", email: "a@example.com" }, 400);
    await refused({ provider: "oauth2-google", kind: "id_token", email: "not an address" }, 400);
    const none = await call(app, "listIdentityProviderAccounts", {
      method: "GET",
      url: "/_mock/v1/apps/nope/identity-provider/accounts",
    });
    expect(none.response.statusCode).toBe(404);
  });
});

describe("the fake identity provider in production mode", () => {
  it("is not there: no provider routes, and its control routes are refused", async () => {
    const production = await testApp({ production: true, controlToken: "a-control-token-for-tests" });
    try {
      const page = await production.inject({ method: "GET", url: "/_mock/idp/local-app/oauth2-google/jwks" });
      expect(page.statusCode).toBe(404);
      const control = await call(production, "listIdentityProviderAccounts", {
        method: "GET",
        url: "/_mock/v1/apps/local-app/identity-provider/accounts",
        headers: { authorization: "Bearer a-control-token-for-tests" },
      });
      expect(control.response.statusCode).toBe(403);
      expect(control.body.code).toBe("NotInProduction");
    } finally {
      await production.close();
    }
  });
});

describe("form bodies", () => {
  it("are taken only where the documents take them", async () => {
    const appId = await newApp(app);
    const { response } = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/anon-user/login`,
      headers: form,
      payload: "a=1",
    });
    expect(response.statusCode).toBe(400);
  });
});
