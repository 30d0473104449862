/**
 * Behaviour kept by the benchmark's fixes (docs/benchmarks.md): verified tokens are remembered but
 * still expire and stop working under another signing key; calls to an app's function worker are
 * batched, and many concurrent calls (plain and with MongoDB round trips) each get their own answer.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, base, bearer, call, getProfile, newApp, newOpenApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  // The tests define functions through the control API (function source runs on the host: decision 0010).
  app = await testApp({ allowFunctionSource: true });
});
afterAll(() => app.close());

const profile = (token: string) => getProfile(app, token);

describe("remembered token verdicts", () => {
  it("still checks expiry on every request", async () => {
    const appId = await newApp(app);
    const { access_token } = await anonymousLogin(app, appId);
    expect((await profile(access_token)).response.statusCode).toBe(200);
    expect((await profile(access_token)).response.statusCode).toBe(200);
    await call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 31 * 60 },
    });
    const expired = await profile(access_token);
    expect(expired.response.statusCode).toBe(401);
    expect(expired.body.error).toBe("invalid session: access token expired");
  });

  it("refuses a token of the old key once state with another signing secret is imported", async () => {
    const other = await testApp({ signingSecret: "another signing secret" });
    try {
      const exported = (await call(other, "exportState", { method: "GET", url: "/_mock/v1/state" })).body;
      const target = await testApp();
      try {
        const { access_token: before } = await anonymousLogin(target, "local-app");
        const ok = (await getProfile(target, before)).response;
        expect(ok.statusCode).toBe(200);
        const imported = await call(target, "importState", {
          method: "PUT",
          url: "/_mock/v1/state",
          payload: exported,
        });
        expect(imported.response.statusCode).toBe(204);
        const refused = (await getProfile(target, before)).response;
        expect(refused.statusCode).toBe(401);
      } finally {
        await target.close();
      }
    } finally {
      await other.close();
    }
  });

  it("refuses a token whose signature was changed after the genuine one was remembered", async () => {
    const { access_token } = await anonymousLogin(app, "local-app");
    expect((await profile(access_token)).response.statusCode).toBe(200);
    const signatureAt = access_token.lastIndexOf(".") + 1;
    const first = access_token[signatureAt] === "A" ? "B" : "A";
    const altered = `${access_token.slice(0, signatureAt)}${first}${access_token.slice(signatureAt + 1)}`;
    expect((await profile(altered)).response.statusCode).toBe(401);
  });

  it("refuses other spellings of a genuine signature (stray characters, the last character's unused bits)", async () => {
    const { access_token } = await anonymousLogin(app, "local-app");
    expect((await profile(access_token)).response.statusCode).toBe(200);
    // The last of 43 characters carries 4 bits of the 256-bit signature: flipping its lowest bit
    // decodes to the same bytes.
    const last = access_token.at(-1)!;
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const sameBytes = alphabet[alphabet.indexOf(last) ^ 1];
    for (const spelling of [`${access_token.slice(0, -1)}${sameBytes}`, `${access_token}*`, `${access_token}=`]) {
      expect((await profile(spelling)).response.statusCode).toBe(401);
    }
  });
});

describe("batched function calls", () => {
  // One user's calls all at once, past the caps a user and an address have (call-caps.test.ts).
  const manyCalls = {
    maxFunctionCallsPerAnonymousUser: 300,
    maxFunctionCallsPerUser: 300,
    maxFunctionCallsPerAddress: 300,
  };

  it("answers 300 concurrent calls each with its own result", async () => {
    const appId = await newApp(app, {
      ...manyCalls,
      functions: {
        echo: { source: "exports = async (n) => { await Promise.resolve(); return { n, twice: n * 2 }; };" },
      },
    });
    const { access_token } = await anonymousLogin(app, appId);
    const replies = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        call(app, "callFunction", {
          method: "POST",
          url: `${base}/app/${appId}/functions/call`,
          headers: bearer(access_token),
          payload: { name: i % 3 === 0 ? "sum" : "echo", arguments: [{ $numberInt: String(i) }] },
        }),
      ),
    );
    replies.forEach(({ response, body }, i) => {
      expect(response.statusCode).toBe(200);
      expect(body).toEqual(
        i % 3 === 0
          ? { $numberInt: String(i) }
          : { n: { $numberInt: String(i) }, twice: { $numberInt: String(2 * i) } },
      );
    });
  });

  it("delivers MongoDB answers to the right ones of many concurrent calls", async () => {
    const appId = await newOpenApp(app, {
      ...manyCalls,
      functions: {
        roundTrip: {
          source:
            "exports = async (n) => { const c = context.services.get('mongodb-atlas').db('t').collection('c');" +
            " await c.insertOne({ _id: n, n }); const doc = await c.findOne({ _id: n }); return doc.n; };",
        },
      },
    });
    const { access_token } = await anonymousLogin(app, appId);
    const replies = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        call(app, "callFunction", {
          method: "POST",
          url: `${base}/app/${appId}/functions/call`,
          headers: bearer(access_token),
          payload: { name: "roundTrip", arguments: [{ $numberInt: String(i) }] },
        }),
      ),
    );
    expect(replies.map((r) => r.body)).toEqual(Array.from({ length: 100 }, (_, i) => ({ $numberInt: String(i) })));
  });
});
