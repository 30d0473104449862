/**
 * Regressions found by the fuzzer: a stray body (any content type, malformed, nested too deep or
 * larger than the limit) on an operation without a request body is ignored, not a 400/413 the
 * document does not list; a path parameter outside the document's lengths is not found (the error
 * the document lists), not a 400.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, base, bearer, call, testApp } from "../helpers/app.ts";

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
    const location = await call(app, "getLocation", { method: "GET", url: `${base}/app/${long}/location` });
    expect(location.response.statusCode).toBe(404);
    expect(location.body.error).toBe(`cannot find app using Client App ID '${long}'`);

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

    const control = await call(app, "getApp", { method: "GET", url: `/_mock/v1/apps/${long}` });
    expect(control.response.statusCode).toBe(404);
    expect(control.body.code).toBe("NotFound");
  });
});
