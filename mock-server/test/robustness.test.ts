/** Bad input gets the documented error and changes nothing: never a 500, never a crash. */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, base, bearer, call, getProfile, newApp, newOpenApp, testApp } from "./helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

describe("malformed requests", () => {
  it("answers 400 for broken JSON, wrong types and non-object bodies", async () => {
    const appId = await newApp(app);
    const url = `${base}/app/${appId}/auth/providers/local-userpass/register`;
    const bodies = [
      '{"email": "a@b.co", "password": ',
      "[1,2,3]",
      '"text"',
      "null",
      '{"email": 5, "password": "secret-1"}',
      '{"email": "a@b.co", "password": ["secret-1"]}',
    ];
    for (const payload of bodies) {
      const { response, body } = await call(app, "registerUser", {
        method: "POST",
        url,
        payload,
        headers: { "content-type": "application/json" },
      });
      expect(response.statusCode, payload).toBe(400);
      expect(body.error, payload).toEqual(expect.any(String));
    }
    expect((await (await app.emulator.apps.get(appId))!.store.counts()).pendingUsers).toBe(0);
  });

  it("reads a null or empty optional field as its absence, as Go's decoder gives its zero value", async () => {
    const { access_token } = await anonymousLogin(app, "local-app");
    const sum = async (payload: string) => {
      const { response, body } = await call(app, "callFunction", {
        method: "POST",
        url: `${base}/app/local-app/functions/call`,
        headers: { ...bearer(access_token), "content-type": "application/json" },
        payload,
      });
      expect(response.statusCode, payload).toBe(200);
      return body;
    };
    expect(await sum('{"name": "sum", "arguments": [1, 2], "service": null}')).toEqual({ $numberInt: "3" });
    expect(await sum('{"name": "sum", "arguments": [1, 2], "service": ""}')).toEqual({ $numberInt: "3" });
    expect(await sum('{"name": "sum", "arguments": null}')).toEqual({ $numberInt: "0" });
    // (A required one is still missing: Go's zero value is the empty string.)
    const unnamed = await call(app, "callFunction", {
      method: "POST",
      url: `${base}/app/local-app/functions/call`,
      headers: { ...bearer(access_token), "content-type": "application/json" },
      payload: '{"name": null, "arguments": []}',
    });
    expect(unnamed.body).toMatchObject({ error: "'name' is a required string" });
    for (const payload of ['{"provider": null, "options": null}', '{"options": {"device": null}}']) {
      const login = await call(app, "login", {
        method: "POST",
        url: `${base}/app/local-app/auth/providers/anon-user/login`,
        headers: { "content-type": "application/json" },
        payload,
      });
      expect(login.response.statusCode, payload).toBe(200);
    }
    const appId = await newApp(app, {
      providers: {
        "local-userpass": { autoConfirm: true, runResetFunction: true, resetFunctionName: "resetPassword" },
      },
    });
    const userpass = `${base}/app/${appId}/auth/providers/local-userpass`;
    await call(app, "registerUser", {
      method: "POST",
      url: `${userpass}/register`,
      payload: { email: "n@example.com", password: "first-secret" },
    });
    // No security answer: the app's reset function refuses, as it does any wrong one.
    const reset = await call(app, "callResetPasswordFunction", {
      method: "POST",
      url: `${userpass}/reset/call`,
      headers: { "content-type": "application/json" },
      payload: '{"email": "n@example.com", "password": "other-secret", "arguments": null}',
    });
    expect(reset.response.statusCode).toBe(400);
    expect(reset.body.error).toBe('failed to reset password for user "n@example.com"');
  });

  it("refuses prototype-pollution keys and documents nested deeper than MongoDB allows", async () => {
    const { access_token } = await anonymousLogin(app, "local-app");
    const polluted = '{"name": "sum", "arguments": [], "__proto__": {"admin": true}}';
    const deep = `{"name": "sum", "arguments": [${"[".repeat(200)}${"]".repeat(200)}]}`;
    for (const payload of [polluted, deep, '{"name":"sum","arguments":[],"constructor":{"prototype":{"x":1}}}']) {
      const { response } = await call(app, "callFunction", {
        method: "POST",
        url: `${base}/app/local-app/functions/call`,
        headers: { ...bearer(access_token), "content-type": "application/json" },
        payload,
      });
      expect(response.statusCode).toBe(400);
    }
    expect(({} as { admin?: boolean }).admin).toBeUndefined();
  });

  it("handles a body up to 18 MB and refuses a larger one with 413", async () => {
    // (17 MB of documents from one anonymous writer: past its own share by default.)
    const appId = await newOpenApp(app, { limits: { documentBytesPerAnonymousUser: 64 * 1024 * 1024 } });
    const { access_token } = await anonymousLogin(app, appId);
    // Two documents: one is held to MongoDB's 16 MiB.
    const big = (bytes: number) => {
      const filler = "x".repeat((bytes - 200) >> 1);
      return JSON.stringify({
        name: "insertMany",
        service: "mongodb-atlas",
        arguments: [{ database: "big", collection: "c", documents: [{ filler }, { filler }] }],
      });
    };
    const ok = await call(app, "callFunction", {
      method: "POST",
      url: `${base}/app/${appId}/functions/call`,
      headers: { ...bearer(access_token), "content-type": "application/json" },
      payload: big(17 * 1024 * 1024),
    });
    expect(ok.response.statusCode).toBe(200);
    const tooBig = await call(app, "callFunction", {
      method: "POST",
      url: `${base}/app/${appId}/functions/call`,
      headers: { ...bearer(access_token), "content-type": "application/json" },
      payload: big(18 * 1024 * 1024 + 1024),
    });
    expect(tooBig.response.statusCode).toBe(413);
    expect(tooBig.body.error_code).toBe("ReadSizeLimitExceeded");
    // The journal notes the large body's size instead of keeping 17 MB of it.
    const journal = (await app.emulator.apps.get(appId))!.journal.list({ operationId: "callFunction" });
    expect(journal.at(-2)?.requestBody).toMatch(/^\[a body of \d+ bytes, not kept\]$/);
  });

  it("refuses a body of another content type with 400, text/plain's too, whatever it holds", async () => {
    const appId = await newApp(app);
    const url = `${base}/app/${appId}/auth/providers/local-userpass/register`;
    const json = JSON.stringify({ email: "a@b.co", password: "secret-1" });
    // (text/plain;charset=UTF-8 is what fetch() sends for a string body without a Content-Type.)
    for (const type of ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "a/b"]) {
      const { response, body } = await call(app, "registerUser", {
        method: "POST",
        url,
        headers: { "content-type": type },
        payload: json,
      });
      expect(response.statusCode, type).toBe(400);
      expect(body, type).toMatchObject({
        error: "unsupported Content-Type: send application/json",
        error_code: "BadRequest",
      });
    }
    expect((await (await app.emulator.apps.get(appId))!.store.counts()).pendingUsers).toBe(0);
  });

  it("accepts realm-core's empty body with a JSON content type on POST /auth/session", async () => {
    const { refresh_token } = await anonymousLogin(app, "local-app");
    const { response } = await call(app, "refreshAccessToken", {
      method: "POST",
      url: `${base}/auth/session`,
      headers: { ...bearer(refresh_token), "content-type": "application/json;charset=utf-8" },
      payload: "",
    });
    expect(response.statusCode).toBe(201);
  });

  it("answers unknown routes loudly in the service's shape", async () => {
    const response = await app.inject({ method: "GET", url: `${base}/app/local-app/nothing-here` });
    expect(response.statusCode).toBe(404);
    expect(response.headers["content-type"]).toBe("application/json");
    expect(response.json().error).toBe(`no route matches GET ${base}/app/local-app/nothing-here`);
  });
});

describe("limits", () => {
  it("answers 429 past the app's concurrent-request cap", async () => {
    const appId = await newApp(app, { maxConcurrentRequests: 2 });
    const { access_token } = await anonymousLogin(app, appId);
    // Two requests in flight (held open by the test): the third is over the cap.
    const runtime = (await app.emulator.apps.get(appId))!;
    runtime.inFlight = 2;
    const { response, body } = await call(app, "getProfile", {
      method: "GET",
      url: `${base}/auth/profile`,
      headers: bearer(access_token),
    });
    expect(response.statusCode).toBe(429);
    expect(body.error_code).toBe("TooManyRequests");
    runtime.inFlight = 0;
    expect((await getProfile(app, access_token)).response.statusCode).toBe(200);
  });
});

describe("isolation", () => {
  it("keeps apps created in parallel apart: users, tokens, data and mail", async () => {
    const [a, b] = await Promise.all([newOpenApp(app), newOpenApp(app)]);
    const [sa, sb] = await Promise.all([anonymousLogin(app, a), anonymousLogin(app, b)]);
    await Promise.all(
      [a, b].map((appId) =>
        call(app, "registerUser", {
          method: "POST",
          url: `${base}/app/${appId}/auth/providers/local-userpass/register`,
          payload: { email: "same@example.com", password: "secret-1" },
        }),
      ),
    );
    expect(await app.emulator.store.mail.list({ appId: a })).toHaveLength(1);
    expect(await app.emulator.store.mail.list({ appId: b })).toHaveLength(1);
    await call(app, "callFunction", {
      method: "POST",
      url: `${base}/app/${a}/functions/call`,
      headers: bearer(sa.access_token),
      payload: {
        name: "insertOne",
        service: "mongodb-atlas",
        arguments: [{ database: "d", collection: "c", document: { in: "a" } }],
      },
    });
    const inB = await call(app, "callFunction", {
      method: "POST",
      url: `${base}/app/${b}/functions/call`,
      headers: bearer(sb.access_token),
      payload: { name: "find", service: "mongodb-atlas", arguments: [{ database: "d", collection: "c", query: {} }] },
    });
    expect(inB.body).toEqual([]);
    // A token of app A is refused on app B's routes.
    const crossed = await call(app, "callFunction", {
      method: "POST",
      url: `${base}/app/${b}/functions/call`,
      headers: bearer(sa.access_token),
      payload: { name: "sum", arguments: [] },
    });
    expect(crossed.response.statusCode).toBe(401);
    // Each app's clock is its own.
    await call(app, "advanceClock", { method: "POST", url: `/_mock/v1/apps/${b}/clock`, payload: { advanceBy: 3600 } });
    expect((await getProfile(app, sa.access_token)).response.statusCode).toBe(200);
    expect((await getProfile(app, sb.access_token)).response.statusCode).toBe(401);
  });
});

describe("CORS", () => {
  it("answers preflights and sends CORS headers on App Services routes, errors included", async () => {
    const preflight = await app.inject({
      method: "OPTIONS",
      url: `${base}/app/local-app/auth/providers/anon-user/login`,
      headers: {
        origin: "http://127.0.0.1:5173",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type,authorization",
      },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers["access-control-allow-origin"]).toBe("http://127.0.0.1:5173");
    expect(String(preflight.headers["access-control-allow-headers"])).toContain("authorization");
    const error = await app.inject({
      method: "GET",
      url: `${base}/app/nope/location`,
      headers: { origin: "http://127.0.0.1:5173" },
    });
    expect(error.statusCode).toBe(404);
    expect(error.headers["access-control-allow-origin"]).toBe("http://127.0.0.1:5173");
  });

  it("limits origins to the app's allowedRequestOrigins when it names them, also on token routes", async () => {
    const appId = await newApp(app, { allowedRequestOrigins: ["https://notes.example"] });
    const allowed = await app.inject({
      method: "GET",
      url: `${base}/app/${appId}/location`,
      headers: { origin: "https://notes.example" },
    });
    expect(allowed.headers["access-control-allow-origin"]).toBe("https://notes.example");
    const refused = await app.inject({
      method: "GET",
      url: `${base}/app/${appId}/location`,
      headers: { origin: "https://evil.example" },
    });
    expect(refused.headers["access-control-allow-origin"]).toBeUndefined();
    const { access_token } = await anonymousLogin(app, appId);
    const profile = await app.inject({
      method: "GET",
      url: `${base}/auth/profile`,
      headers: { ...bearer(access_token), origin: "https://evil.example" },
    });
    expect(profile.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("refuses control calls from another origin's page", async () => {
    const { response, body } = await call(app, "listApps", {
      method: "GET",
      url: "/_mock/v1/apps",
      headers: { origin: "https://evil.example" },
    });
    expect(response.statusCode).toBe(403);
    expect(body.code).toBe("ForbiddenOrigin");
    expect(response.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("answers the health check whatever the origin (it tells nothing and changes nothing)", async () => {
    const { response, body } = await call(app, "getHealth", {
      method: "GET",
      url: "/_mock/v1/health",
      headers: { origin: "https://evil.example" },
    });
    expect(response.statusCode).toBe(200);
    expect(body.status).toBe("ok");
    expect(response.headers["access-control-allow-origin"]).toBeUndefined();
  });
});
