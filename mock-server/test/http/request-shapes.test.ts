/**
 * Regressions found by the fuzzer: a stray body (any content type, malformed, nested too deep or
 * larger than the limit) on an operation without a request body is ignored, not a 400/413 the
 * document does not list; a path parameter outside the document's lengths is not found (the error
 * the document lists), not a 400, however long; a path whose percent-encoding is malformed is read
 * as the URL standard reads it (a stray `%` is itself, bytes that are not UTF-8 are U+FFFD), and
 * answered as any other path is: the service's own shape, its request id and CORS headers.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, base, bearer, call, mongoAction, newOpenApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

const strayBodies: [string, string][] = [
  ["application/json", '{"bad"'],
  ["application/json", `${"[".repeat(5000)}${"]".repeat(5000)}`],
  ["application/json", '{"__proto__":{"polluted":true}}'],
  ["text/plain", "hello"],
  ["application/json, text/plain", "{}"],
  ["multipart/form-data", "--x--"],
];

describe("operations without a request body", () => {
  it.each(strayBodies)("log out with a stray %s body", async (type, payload) => {
    const { refresh_token } = await anonymousLogin(app, "local-app");
    const { response } = await call(app, "logOut", {
      method: "DELETE",
      url: `${base}/auth/session`,
      headers: { ...bearer(refresh_token), "content-type": type },
      payload,
    });
    expect(response.statusCode).toBe(204);
  });

  it("refresh a session whatever body comes with it, even one past the size limit", async () => {
    const { refresh_token } = await anonymousLogin(app, "local-app");
    for (const [type, payload] of [...strayBodies, ["application/json", "x".repeat(18 * 1024 * 1024 + 10)]]) {
      const { response } = await call(app, "refreshAccessToken", {
        method: "POST",
        url: `${base}/auth/session`,
        headers: { ...bearer(refresh_token), "content-type": type! },
        payload: payload!,
      });
      expect(response.statusCode, type).toBe(201);
    }
  });

  it("reset an app through the control API with a malformed body", async () => {
    const { response } = await call(app, "resetApp", {
      method: "POST",
      url: "/_mock/v1/apps/local-app/reset",
      headers: { "content-type": "application/json" },
      payload: "{not json",
    });
    expect(response.statusCode).toBe(204);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it("still refuses a malformed body where the operation takes one", async () => {
    const { response } = await call(app, "registerUser", {
      method: "POST",
      url: `${base}/app/local-app/auth/providers/local-userpass/register`,
      headers: { "content-type": "application/json" },
      payload: '{"bad"',
    });
    expect(response.statusCode).toBe(400);
  });
});

describe("path parameters outside the document's lengths", () => {
  it("are an unknown app, API key or account", async () => {
    const long = "a".repeat(129);
    for (const id of [long, "b".repeat(501), "c".repeat(20_000)]) {
      const location = await call(app, "getLocation", { method: "GET", url: `${base}/app/${id}/location` });
      expect(location.response.statusCode).toBe(404);
      expect(location.body.error).toBe(`cannot find app using Client App ID '${id}'`);
    }

    const { refresh_token } = await anonymousLogin(app, "local-app");
    for (const id of ["", long]) {
      const disable = await call(app, "disableApiKey", {
        method: "PUT",
        url: `${base}/auth/api_keys/${id}/disable`,
        headers: bearer(refresh_token),
      });
      expect(disable.response.statusCode, `'${id}'`).toBe(404);
      expect(disable.body.error_code).toBe("APIKeyNotFound");
    }

    for (const id of [long, "d".repeat(20_000)]) {
      const control = await call(app, "getApp", { method: "GET", url: `/_mock/v1/apps/${id}` });
      expect(control.response.statusCode).toBe(404);
      expect(control.body.code).toBe("NotFound");
    }
  });
});

describe("paths whose percent-encoding is malformed", () => {
  const origin = "https://notes.example";
  it("name what the URL standard reads in them: a stray '%' is itself, bytes not UTF-8 are U+FFFD", async () => {
    for (const [id, read] of [
      ["%ZZ", "%ZZ"],
      ["50%", "50%"],
      ["%", "%"],
      ["%E2%82", "\uFFFD"],
      ["%C3%28%2F", "\uFFFD(/"],
      ["%E2%82%AC%", "€%"],
    ]) {
      const { response, body } = await call(app, "getLocation", {
        method: "GET",
        url: `${base}/app/${id}/location?x=1`,
        headers: { origin },
      });
      expect(response.statusCode, id).toBe(404);
      expect(body, id).toEqual({ error: `cannot find app using Client App ID '${read}'` });
      expect(response.headers["x-request-id"], id).toEqual(expect.any(String));
      expect(response.headers["access-control-allow-origin"], id).toBe(origin);
    }
  });

  it("reach the route they name, and the control API's names", async () => {
    // (No route: no operation, and the path in the answer as it was sent.)
    const unrouted = await app.inject({ method: "GET", url: `${base}/auth/profile%?a=%` });
    expect(unrouted.statusCode).toBe(404);
    expect(unrouted.json()).toEqual({
      error: `no route matches GET ${base}/auth/profile%`,
      error_code: "NotFound",
      link: "http://localhost:80/_mock/",
    });
    // An HTTPS endpoint's route, and the journal shows the path as it was sent.
    const endpoint = await call(app, "callEndpointGet", { method: "GET", url: "/app/local-app/endpoint/notes/stats%" });
    expect(endpoint.response.statusCode).toBe(404);
    expect(endpoint.body.error).toBe("no endpoint at route '/notes/stats%'");
    const journal = await call(app, "listRequests", { method: "GET", url: "/_mock/v1/apps/local-app/requests" });
    expect(journal.body.requests).toContainEqual(
      expect.objectContaining({
        id: endpoint.response.headers["x-request-id"],
        path: "/app/local-app/endpoint/notes/stats%",
      }),
    );
    const appId = await newOpenApp(app);
    const { access_token } = await anonymousLogin(app, appId);
    const document = { n: 1 };
    const inserted = await mongoAction(app, appId, access_token, "insertOne", {
      database: "d",
      collection: "50%",
      document,
    });
    expect(inserted.response.statusCode).toBe(200);
    const listed = await call(app, "listDocuments", { method: "GET", url: `/_mock/v1/apps/${appId}/data/d/50%` });
    expect(listed.response.statusCode).toBe(200);
    expect(listed.body.documents).toEqual([{ _id: expect.anything(), n: { $numberInt: "1" } }]);
    const control = await call(app, "getApp", { method: "GET", url: "/_mock/v1/apps/100%ZZ" });
    expect(control.response.statusCode).toBe(404);
    expect(control.body).toEqual({ error: "no app with id '100%ZZ'", code: "NotFound" });
  });
});

describe("a query parameter given more than once", () => {
  it("is read as its first value, as the service's Go handlers read it", async () => {
    const appId = await newOpenApp(app);
    // (Read as an array, it was `400 "querystring/link must be string"`.)
    const login = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/anon-user/login?link=false&link=true`,
      payload: {},
    });
    expect(login.response.statusCode).toBe(200);
    const linking = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/anon-user/login?link=true&link=false`,
      payload: {},
    });
    expect(linking.response.statusCode).toBe(401);
    expect(linking.body.error_code).toBe("MissingAuthReq");
    await anonymousLogin(app, appId);
    const users = await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users?limit=1&limit=5` });
    expect(users.response.statusCode).toBe(200);
    expect(users.body.users).toHaveLength(1);
  });
});
