/**
 * The service's limits, exactly: request bodies up to 18 MB are handled and one byte more is the
 * documented 413 (EmailJS: its own 413; the control API, which lists no 413, a 400); and the
 * per-app cap on concurrent requests, with requests really held open (a fault's delay holds them),
 * answers 429 past the cap, for that app only, and frees a slot when a request ends or its client
 * goes away. No sleeps: every wait is on a condition.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bodyLimit } from "../src/app.ts";
import { anonymousLogin, base, bearer, call, newApp, newOpenApp } from "./helpers/app.ts";
import { expectFetchContract } from "./helpers/fetch-contract.ts";
import { listening } from "./helpers/listen.ts";
import { until } from "./helpers/until.ts";

let app: FastifyInstance;
let url: string;
beforeAll(async () => {
  ({ app, url } = await listening());
});
afterAll(() => app.close());

/**
 * A JSON body of exactly `bytes` bytes: an insertMany of two documents whose fillers take up the
 * rest (each under MongoDB's 16 MiB limit on one document).
 */
function insertOfSize(bytes: number, extra: Record<string, unknown> = {}): string {
  const shell = (filler: string) =>
    JSON.stringify({
      name: "insertMany",
      service: "mongodb-atlas",
      arguments: [
        {
          database: "limits",
          collection: "big",
          documents: [{ filler: filler.slice(0, filler.length >> 1) }, { filler: filler.slice(filler.length >> 1) }],
        },
      ],
      ...extra,
    });
  const text = shell("x".repeat(bytes - shell("").length));
  expect(Buffer.byteLength(text)).toBe(bytes);
  return text;
}

describe("request size", () => {
  it("handles an App Services body of exactly 18 MB and answers 413 one byte past it", async () => {
    // (18 MB of documents from one anonymous writer: past its own share by default.)
    const appId = await newOpenApp(app, { limits: { documentBytesPerAnonymousUser: 64 * 1024 * 1024 } });
    const { access_token } = await anonymousLogin(app, appId);
    const send = (payload: string) =>
      call(app, "callFunction", {
        method: "POST",
        url: `${base}/app/${appId}/functions/call`,
        headers: { ...bearer(access_token), "content-type": "application/json" },
        payload,
      });
    expect(bodyLimit).toBe(18 * 1024 * 1024);
    const atLimit = await send(insertOfSize(bodyLimit));
    expect(atLimit.response.statusCode).toBe(200);
    const over = await send(insertOfSize(bodyLimit + 1));
    expect(over.response.statusCode).toBe(413);
    expect(over.body.error_code).toBe("ReadSizeLimitExceeded");
  });

  it("answers EmailJS's 413 text past 18 MB, and the control API's 400", async () => {
    const emailjs = await call(app, "sendEmail", {
      method: "POST",
      url: "/api/v1.0/email/send",
      headers: { "content-type": "application/json", origin: "http://127.0.0.1:5173" },
      payload: insertOfSize(bodyLimit + 1, { user_id: "local-public-key" }),
    });
    expect(emailjs.response.statusCode).toBe(413);
    expect(emailjs.body).toBe("Variables size limit. The maximum allowed variables size is 50Kb");
    const control = await call(app, "insertDocuments", {
      method: "POST",
      url: "/_mock/v1/apps/local-app/data/limits/big",
      headers: { "content-type": "application/json" },
      payload: `{"documents":[${insertOfSize(bodyLimit)}]}`,
    });
    expect(control.response.statusCode).toBe(400);
    expect(control.body.code).toBe("ValidationError");
  });
});

describe("concurrent requests per app", () => {
  async function profileCall(token: string, signal?: AbortSignal) {
    const response = await fetch(`${url}${base}/auth/profile`, { headers: bearer(token), signal });
    return { status: response.status, body: (await expectFetchContract("getProfile", response)) as any };
  }

  it("answers 429 past the cap while requests are held open, for that app only, then recovers", async () => {
    const appId = await newApp(app, { maxConcurrentRequests: 3 });
    const runtime = (await app.emulator.apps.get(appId))!;
    const { access_token } = await anonymousLogin(app, appId);
    const { access_token: otherToken } = await anonymousLogin(app, "local-app");
    // The next three profile calls are held for a while by the emulator itself.
    await call(app, "addFault", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/faults`,
      payload: { operationId: "getProfile", delayMs: 1500, times: 3 },
    });
    const held = [1, 2, 3].map(() => profileCall(access_token));
    await until(() => runtime.inFlight === 3, "three requests held in flight");

    const refused = await profileCall(access_token);
    expect(refused.status).toBe(429);
    expect(refused.body.error_code).toBe("TooManyRequests");
    // Another app has its own cap.
    expect((await profileCall(otherToken)).status).toBe(200);

    // The held ones complete normally, and the slots are free again.
    expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200, 200]);
    await until(() => runtime.inFlight === 0, "the held requests to leave the count");
    expect((await profileCall(access_token)).status).toBe(200);
    const journal = runtime.journal.list({ operationId: "getProfile" }).map((e) => e.status);
    expect(journal.filter((s) => s === 429)).toHaveLength(1);
  });

  it("frees a slot when a held request's client goes away", async () => {
    const appId = await newApp(app, { maxConcurrentRequests: 1 });
    const runtime = (await app.emulator.apps.get(appId))!;
    const { access_token } = await anonymousLogin(app, appId);
    await call(app, "addFault", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/faults`,
      payload: { operationId: "getProfile", delayMs: 1500, times: 1 },
    });
    const leaving = new AbortController();
    const abandoned = profileCall(access_token, leaving.signal).catch((error: Error) => error.name);
    await until(() => runtime.inFlight === 1, "one request held in flight");
    expect((await profileCall(access_token)).status).toBe(429);
    leaving.abort();
    expect(await abandoned).toBe("AbortError");
    await until(() => runtime.inFlight === 0, "the abandoned request to leave the count");
    expect((await profileCall(access_token)).status).toBe(200);
  });
});
