/**
 * A state import refuses what the control API's own entries refuse, with 400, changing nothing.
 * Regression (found by fuzzing): a state whose EmailJS account has a negative rate limit was
 * imported, and from then on every account listing broke its documented schema.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

describe("importing state", () => {
  it("refuses an EmailJS account with a negative rate limit, keeping the current state", async () => {
    const { body: state } = await call(app, "exportState", { method: "GET", url: "/_mock/v1/state" });
    const account = { ...state.emailjsAccounts[0], publicKey: "negative-rate", rateLimitPerSecond: -2.5 };
    const { response, body } = await call(app, "importState", {
      method: "PUT",
      url: "/_mock/v1/state",
      payload: { ...state, emailjsAccounts: [...state.emailjsAccounts, account] },
    });
    expect(response.statusCode).toBe(400);
    expect(body.error).toMatch(/rateLimitPerSecond must be >= 0/);
    const { body: listed } = await call(app, "listEmailJsAccounts", {
      method: "GET",
      url: "/_mock/v1/emailjs/accounts",
    });
    expect(listed.accounts.map((a: { publicKey: string }) => a.publicKey)).not.toContain("negative-rate");
  });

  it("refuses a document whose _id an insert refuses: an array, or a field named like an operator", async () => {
    const { body: state } = await call(app, "exportState", { method: "GET", url: "/_mock/v1/state" });
    const holding = (documents: unknown[]) => ({
      ...state,
      apps: state.apps.map((one: { collections: unknown[] }, i: number) =>
        i === 0 ? { ...one, collections: [...one.collections, { database: "d", collection: "odd", documents }] } : one,
      ),
    });
    for (const [documents, refusal] of [
      [[{ _id: { $ne: null }, n: 1 }], "_id fields may not contain '$'-prefixed fields: $ne is not valid for storage."],
      [[{ _id: { a: [{ $gt: 1 }] } }], "_id fields may not contain '$'-prefixed fields: $gt is not valid for storage."],
      [[{ _id: [1] }], "can't use an array for _id"],
    ] as const) {
      const { response, body } = await call(app, "importState", {
        method: "PUT",
        url: "/_mock/v1/state",
        payload: holding([...documents]),
      });
      expect(response.statusCode).toBe(400);
      expect(body.error).toBe(`cannot import this state: a document of d.odd: ${refusal}`);
    }
    const { body: after } = await call(app, "exportState", { method: "GET", url: "/_mock/v1/state" });
    expect(after.apps.map((one: { collections: unknown[] }) => one.collections)).toEqual(
      state.apps.map((one: { collections: unknown[] }) => one.collections),
    );
  });

  it("refuses captured mail whose links are not http(s): the inspector shows them as links", async () => {
    const { body: state } = await call(app, "exportState", { method: "GET", url: "/_mock/v1/state" });
    const message = {
      id: "m-900",
      source: "emailjs",
      kind: "emailjs",
      account: state.emailjsAccounts[0].publicKey,
      to: "ann@example.com",
      from: "app@example.com",
      subject: "Hi",
      html: "<p>Hi</p>",
      text: "Hi",
      links: ["javascript:alert(1)"],
      attachments: [],
      createdAt: new Date(0).toISOString(),
    };
    const { response, body } = await call(app, "importState", {
      method: "PUT",
      url: "/_mock/v1/state",
      payload: { ...state, mail: [...state.mail, message] },
    });
    expect(response.statusCode).toBe(400);
    // (Refused by the request's own validation, against the same document.)
    expect(body).toMatchObject({
      code: "ValidationError",
      error: expect.stringMatching(/mail\/\d+\/links\/0 must match pattern/),
    });
  });

  it("refuses a clock set back (a negative offset), as the control API's clock refuses it", async () => {
    const { body: state } = await call(app, "exportState", { method: "GET", url: "/_mock/v1/state" });
    for (const payload of [
      { ...state, apps: state.apps.map((one: object) => ({ ...one, clockOffsetMs: -60_000 })) },
      {
        ...state,
        emailjsAccounts: state.emailjsAccounts.map((one: object) => ({ ...one, clockOffsetMs: -1 })),
      },
    ]) {
      const { response, body } = await call(app, "importState", { method: "PUT", url: "/_mock/v1/state", payload });
      expect(response.statusCode).toBe(400);
      expect(body.error).toMatch(/clockOffsetMs must be >= 0/);
    }
    const { body: after } = await call(app, "exportState", { method: "GET", url: "/_mock/v1/state" });
    expect(after.apps.map((one: { clockOffsetMs: number }) => one.clockOffsetMs)).toEqual(
      state.apps.map((one: { clockOffsetMs: number }) => one.clockOffsetMs),
    );
  });
});
