/**
 * CORS headers exactly as browsers get them, per area: App Services (the app's allowed origins),
 * EmailJS (any origin), the control API and unknown routes (none); preflights answered before
 * authentication, strict about their required headers, and a 404 where CORS is off.
 */
import Fastify, { type FastifyInstance, type FastifyRequest } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerCors } from "../../src/http/cors.ts";
import { anonymousLogin, base, bearer, newApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
let restricted: string;
const page = "https://notes.example";

beforeAll(async () => {
  app = await testApp();
  restricted = await newApp(app, { allowedRequestOrigins: [page] });
});
afterAll(() => app.close());

const preflight = (url: string, headers: Record<string, string>) => app.inject({ method: "OPTIONS", url, headers });

describe("simple requests", () => {
  it("adds only Vary: Origin when the request has no Origin", async () => {
    const response = await app.inject({ method: "GET", url: `${base}/app/local-app/location` });
    expect(response.statusCode).toBe(200);
    expect(response.headers.vary).toBe("Origin");
    expect(response.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("reflects an allowed origin on App Services routes, errors included", async () => {
    for (const url of [`${base}/app/${restricted}/location`, `${base}/app/${restricted}/functions/call?x=1`]) {
      const response = await app.inject({ method: "GET", url, headers: { origin: page } });
      expect(response.headers["access-control-allow-origin"], url).toBe(page);
      expect(response.headers.vary, url).toBe("Origin");
    }
  });

  it("finds the app of a route without an app id in its path from the bearer token", async () => {
    const { access_token } = await anonymousLogin(app, restricted);
    const profile = (origin: string) =>
      app.inject({ method: "GET", url: `${base}/auth/profile`, headers: { ...bearer(access_token), origin } });
    const allowed = await profile(page);
    expect(allowed.statusCode).toBe(200);
    expect(allowed.headers["access-control-allow-origin"]).toBe(page);
    const refused = await profile("https://evil.example");
    expect(refused.statusCode).toBe(200);
    expect(refused.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("answers EmailJS with Access-Control-Allow-Origin: * with or without an Origin", async () => {
    for (const headers of [{ origin: page }, {}]) {
      const response = await app.inject({ method: "POST", url: "/api/v1.0/email/send", headers, payload: {} });
      expect(response.statusCode).toBe(400);
      expect(response.headers["access-control-allow-origin"]).toBe("*");
      expect(response.headers.vary).toBe("Origin");
    }
  });

  it("adds no CORS headers to control API and unknown routes", async () => {
    for (const url of ["/_mock/v1/health", "/elsewhere"]) {
      const response = await app.inject({ method: "GET", url, headers: { origin: "http://localhost:80" } });
      expect(response.headers["access-control-allow-origin"], url).toBeUndefined();
      expect(response.headers.vary, url).toBe("Origin");
    }
  });
});

describe("preflights", () => {
  it("answers an App Services preflight with 204, the methods, the asked-for headers and max-age", async () => {
    const response = await preflight(`${base}/app/${restricted}/functions/call`, {
      origin: page,
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization,content-type",
    });
    expect(response.statusCode).toBe(204);
    expect(response.body).toBe("");
    expect(response.headers["content-length"]).toBe("0");
    expect(response.headers["access-control-allow-origin"]).toBe(page);
    expect(response.headers["access-control-allow-methods"]).toBe("GET, POST, PUT, DELETE, OPTIONS");
    expect(response.headers["access-control-allow-headers"]).toBe("authorization,content-type");
    expect(response.headers["access-control-max-age"]).toBe("600");
    expect(response.headers.vary).toBe("Origin, Access-Control-Request-Headers");
  });

  it("answers a preflight of a token route (no app id in the path) for any origin", async () => {
    const response = await preflight(`${base}/auth/profile`, {
      origin: "https://elsewhere.example",
      "access-control-request-method": "GET",
    });
    expect(response.statusCode).toBe(204);
    expect(response.headers["access-control-allow-origin"]).toBe("https://elsewhere.example");
    expect(response.headers["access-control-allow-headers"]).toBeUndefined();
  });

  it("answers an EmailJS preflight for any origin", async () => {
    const response = await preflight("/api/v1.0/email/send-form", {
      origin: page,
      "access-control-request-method": "POST",
    });
    expect(response.statusCode).toBe(204);
    expect(response.headers["access-control-allow-origin"]).toBe("*");
    expect(response.headers["access-control-allow-methods"]).toBe("POST");
    expect(response.headers["access-control-max-age"]).toBe("86400");
  });

  it("refuses a preflight without Origin or Access-Control-Request-Method with 400", async () => {
    const incomplete: Record<string, string>[] = [{ origin: page }, { "access-control-request-method": "POST" }];
    for (const headers of incomplete) {
      const response = await preflight("/api/v1.0/email/send", headers);
      expect(response.statusCode).toBe(400);
      expect(response.body).toBe("Invalid Preflight Request");
    }
  });

  it("answers 404 where CORS is off: an origin the app does not allow, the control API", async () => {
    const refused = await preflight(`${base}/app/${restricted}/location`, {
      origin: "https://evil.example",
      "access-control-request-method": "GET",
    });
    expect(refused.statusCode).toBe(404);
    expect(refused.headers["access-control-allow-origin"]).toBeUndefined();
    expect(refused.json().error_code).toBe("NotFound");
    const control = await preflight("/_mock/v1/apps", { origin: page, "access-control-request-method": "POST" });
    expect(control.statusCode).toBe(404);
    expect(control.json().code).toBe("NotFound");
  });
});

describe("a base URL ending in '/' (the path starts with '//')", () => {
  // The SDKs join their base URL and the path: an origin configured as "https://host/" asks for
  // "//api/…". No route matches, and the browser must see that 404, not a CORS failure.
  it("answers EmailJS's preflight and 404 with its CORS headers", async () => {
    const url = "//api/v1.0/email/send";
    const asked = await preflight(url, { origin: page, "access-control-request-method": "POST" });
    expect(asked.statusCode).toBe(204);
    expect(asked.headers["access-control-allow-origin"]).toBe("*");
    const response = await app.inject({ method: "POST", url, headers: { origin: page }, payload: {} });
    expect(response.statusCode).toBe(404);
    expect(response.body).toBe("Not Found");
    expect(response.headers["access-control-allow-origin"]).toBe("*");
  });

  it("answers App Services' with the app's origins, and says why no route matches", async () => {
    const url = `//${base.slice(1)}/app/${restricted}/location`;
    const asked = await preflight(url, { origin: page, "access-control-request-method": "GET" });
    expect(asked.statusCode).toBe(204);
    expect(asked.headers["access-control-allow-origin"]).toBe(page);
    const response = await app.inject({ method: "GET", url, headers: { origin: page } });
    expect(response.statusCode).toBe(404);
    expect(response.headers["access-control-allow-origin"]).toBe(page);
    expect(response.json()).toMatchObject({
      error_code: "NotFound",
      error: `no route matches GET ${url} (the path starts with "//": does the base URL end in "/"?)`,
    });
    const refused = await app.inject({ method: "GET", url, headers: { origin: "https://evil.example" } });
    expect(refused.statusCode).toBe(404);
    expect(refused.headers["access-control-allow-origin"]).toBeUndefined();
  });
});

describe("the CORS plugin without the emulator", () => {
  // http/cors.ts knows URLs and headers, not apps: what an App Services request's origins are
  // comes in as a function (app.ts wires the emulator's), asked only when a browser sends an Origin.
  it("asks the given function for an App Services request's origins, and only when there is an Origin", async () => {
    const asked: string[] = [];
    const bare = Fastify();
    await registerCors(bare, async (request: FastifyRequest) => {
      asked.push(request.url);
      return request.url.includes("/open/") ? [] : [page];
    });
    bare.get(`${base}/app/:appId/location`, async () => ({ ok: true }));
    const get = (appId: string, origin?: string) =>
      bare.inject({ method: "GET", url: `${base}/app/${appId}/location`, headers: origin ? { origin } : {} });

    const withoutOrigin = await get("shop");
    expect(withoutOrigin.headers.vary).toBe("Origin");
    expect(withoutOrigin.headers["access-control-allow-origin"]).toBeUndefined();
    expect(asked).toEqual([]);

    expect((await get("shop", page)).headers["access-control-allow-origin"]).toBe(page);
    expect((await get("shop", "https://evil.example")).headers["access-control-allow-origin"]).toBeUndefined();
    expect((await get("open", "https://any.example")).headers["access-control-allow-origin"]).toBe(
      "https://any.example",
    );
    expect(asked).toHaveLength(3);
    await bare.close();
  });
});
