/**
 * realm-core's app client (realm-js ≥ 12, Swift, Kotlin, Dart, .NET) sends other requests than
 * realm-web: `Content-Type: application/json;charset=utf-8` and `Accept` on every call (GET and
 * DELETE too, with an empty body), no headers at all on the location request, `provider` in login
 * bodies with its own device fields, its own key order, Int64 limits, `upsert` always. Replayed as
 * the wire reference records them (§1.3, §3.1, §5), each reply checked against the document and
 * against what core reads (exact `application/json`, both tokens JWTs with numeric exp and iat).
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { base, call, newOpenApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

const core = { "content-type": "application/json;charset=utf-8", accept: "application/json" };
const withToken = (token: string) => ({ ...core, authorization: `Bearer ${token}` });

function claims(jwt: string): Record<string, unknown> {
  const parts = jwt.split(".");
  expect(parts).toHaveLength(3);
  expect(parts[2]).not.toBe("");
  return JSON.parse(Buffer.from(parts[1]!, "base64url").toString());
}

describe("realm-core's requests", () => {
  it("log in, read the profile, refresh, make a key and call the service with core's headers and bodies", async () => {
    const appId = await newOpenApp(app, { providers: { "local-userpass": { autoConfirm: true } } });
    const location = await call(app, "getLocation", { method: "GET", url: `${base}/app/${appId}/location` });
    expect(location.response.headers["content-type"]).toBe("application/json");
    expect(location.body).toMatchObject({ hostname: expect.any(String), ws_hostname: expect.any(String) });

    await call(app, "registerUser", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/register`,
      headers: core,
      payload: JSON.stringify({ email: "core@example.com", password: "secret1" }),
    });
    const device = {
      appId,
      platform: "Linux",
      platformVersion: "6.1",
      sdk: "Kotlin",
      sdkVersion: "1.16.0",
      cpuArch: "x86_64",
      deviceName: "unknown",
      deviceVersion: "unknown",
      frameworkName: "",
      frameworkVersion: "",
      coreVersion: "14.10.0",
      bundleId: "com.example",
    };
    const login = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
      headers: core,
      payload: JSON.stringify({
        provider: "local-userpass",
        username: "core@example.com",
        password: "secret1",
        options: { device },
      }),
    });
    expect(login.response.statusCode).toBe(200);
    expect(Object.keys(login.body).sort()).toEqual(["access_token", "device_id", "refresh_token", "user_id"]);
    for (const token of [login.body.access_token, login.body.refresh_token]) {
      expect(claims(token)).toMatchObject({ exp: expect.any(Number), iat: expect.any(Number) });
    }
    const { access_token: access, refresh_token: refresh } = login.body as {
      access_token: string;
      refresh_token: string;
    };

    const profile = await call(app, "getProfile", {
      method: "GET",
      url: `${base}/auth/profile`,
      headers: withToken(access),
      payload: "",
    });
    expect(profile.body.identities[0]).toMatchObject({ id: expect.any(String), provider_type: "local-userpass" });
    expect(profile.body.data).toEqual({ email: "core@example.com" });

    const renewed = await call(app, "refreshAccessToken", {
      method: "POST",
      url: `${base}/auth/session`,
      headers: withToken(refresh),
      payload: "",
    });
    expect(claims(renewed.body.access_token)).toMatchObject({ sub: login.body.user_id, typ: "access" });

    const key = await call(app, "createApiKey", {
      method: "POST",
      url: `${base}/auth/api_keys`,
      headers: withToken(refresh),
      payload: JSON.stringify({ name: "core-key" }),
    });
    expect(key.body._id).toMatch(/^[0-9a-f]{24}$/);
    const listed = await call(app, "listApiKeys", {
      method: "GET",
      url: `${base}/auth/api_keys`,
      headers: withToken(refresh),
      payload: "",
    });
    expect(listed.body).toEqual([{ _id: key.body._id, name: "core-key", disabled: false }]);

    // Core's key order (arguments, name, service), Int64 limit, upsert always sent.
    const action = (name: string, argument: Record<string, unknown>) =>
      call(app, "callFunction", {
        method: "POST",
        url: `${base}/app/${appId}/functions/call`,
        headers: withToken(access),
        payload: JSON.stringify({
          arguments: [{ database: "d", collection: "c", ...argument }],
          name,
          service: "mongodb-atlas",
        }),
      });
    await action("insertOne", { document: { _id: { $numberInt: "1" }, n: { $numberInt: "1" } } });
    expect((await action("count", { query: {}, limit: { $numberLong: "5" } })).body).toEqual({ $numberLong: "1" });
    expect((await action("updateOne", { query: {}, update: { $set: { n: 2 } }, upsert: false })).body).toEqual({
      matchedCount: { $numberInt: "1" },
      modifiedCount: { $numberInt: "1" },
    });
    expect((await action("deleteMany", { query: {} })).body).toEqual({ deletedCount: { $numberInt: "1" } });

    const out = await call(app, "logOut", {
      method: "DELETE",
      url: `${base}/auth/session`,
      headers: withToken(refresh),
      payload: "",
    });
    expect(out.response.statusCode).toBe(204);
  });

  it("get errors core can read: exactly application/json, with error_code and link", async () => {
    const appId = await newOpenApp(app);
    // Core sends the reset body's keys in the order password, token, tokenId.
    const { response, body } = await call(app, "resetPassword", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/reset`,
      headers: core,
      payload: JSON.stringify({ password: "new-secret", token: "nope", tokenId: "nope" }),
    });
    expect(response.statusCode).toBe(400);
    expect(response.headers["content-type"]).toBe("application/json");
    expect(body).toMatchObject({ error: "invalid token data", error_code: "BadRequest", link: expect.any(String) });
    const refused = await call(app, "refreshAccessToken", {
      method: "POST",
      url: `${base}/auth/session`,
      headers: withToken("a.b.c"),
      payload: "",
    });
    expect(refused.response.statusCode).toBe(401);
    expect(refused.response.headers["content-type"]).toBe("application/json");
  });
});
