/** Whole-state export and import: lossless round trip (sessions keep working), and a bad import changes nothing. */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { base, bearer, call, emailUser, newApp, testApp } from "../helpers/app.ts";
import { mailOf, newAccount, sendEmail } from "../helpers/emailjs.ts";

let source: FastifyInstance;
let target: FastifyInstance;
beforeAll(async () => {
  source = await testApp();
  target = await testApp();
});
afterAll(async () => {
  await source.close();
  await target.close();
});

const exportState = async (app: FastifyInstance) => {
  const { response, body } = await call(app, "exportState", { method: "GET", url: "/_mock/v1/state" });
  expect(response.statusCode).toBe(200);
  return body as Record<string, unknown> & { apps: { appId: string }[]; emailjsAccounts: { publicKey: string }[] };
};
const importState = (app: FastifyInstance, payload: unknown) =>
  call(app, "importState", { method: "PUT", url: "/_mock/v1/state", payload: payload as Record<string, unknown> });
const withoutTime = ({ exportedAt: _exportedAt, ...rest }: Record<string, unknown>) => rest;

describe("state export and import", () => {
  it("round-trips everything losslessly; imported sessions, keys and passwords keep working", async () => {
    // An app with every kind of record: users (active and pending), sessions, an API key, tokens, data, mail, a moved clock.
    const appId = await newApp(source, {
      providers: { "local-userpass": { emailConfirmationUrl: "http://web.example/confirm" } },
    });
    const ada = await emailUser(source, appId, "ada@example.com", "correct horse");
    const key = await call(source, "createApiKey", {
      method: "POST",
      url: `${base}/auth/api_keys`,
      headers: bearer(ada.refresh_token),
      payload: { name: "ci" },
    });
    expect(key.response.statusCode).toBe(201);
    await call(source, "registerUser", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/register`,
      payload: { email: "pending@example.com", password: "secret-123" },
    });
    await call(source, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/notes-app/notes`,
      payload: {
        documents: [
          {
            _id: { $oid: "65a1b2c3d4e5f60718293a50" },
            title: "First",
            at: { $date: "2026-11-22T10:00:00Z" },
            n: { $numberLong: "1234567890123" },
          },
          // U+0000 and U+E000: what PostgreSQL's text cannot hold, and the store's escape for it.
          { title: "Second\u0000\uE000", tags: ["a", "b"], nested: { deep: { value: 1.5 } } },
        ],
      },
    });
    await call(source, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 60 },
    });
    const account = await newAccount(source, {
      publicKey: "state-key",
      requirePrivateKey: true,
      privateKey: "state-private-key",
    });
    await sendEmail(source, {
      user_id: "state-key",
      service_id: "local_service",
      template_id: "local_template",
      accessToken: account.privateKey,
      template_params: { to_email: "ann@example.com", message: "see https://web.example/x \u0000" },
    });
    await call(source, "advanceEmailJsClock", {
      method: "POST",
      url: "/_mock/v1/emailjs/accounts/state-key/clock",
      payload: { advanceBy: 3 },
    });

    const exported = await exportState(source);
    expect(exported.apps.map((a) => a.appId)).toContain(appId);
    const { response } = await importState(target, exported);
    expect(response.statusCode).toBe(204);
    expect(withoutTime(await exportState(target))).toEqual(withoutTime(exported));

    // Sessions from the source work on the target (same signing secret), so do refresh tokens, API keys and passwords.
    const profile = await call(target, "getProfile", {
      method: "GET",
      url: `${base}/auth/profile`,
      headers: bearer(ada.access_token),
    });
    expect(profile.response.statusCode).toBe(200);
    expect(profile.body.user_id).toBe(ada.user_id);
    const refreshed = await call(target, "refreshAccessToken", {
      method: "POST",
      url: `${base}/auth/session`,
      headers: bearer(ada.refresh_token),
    });
    expect(refreshed.response.statusCode).toBe(201);
    const viaKey = await call(target, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/api-key/login`,
      payload: { key: key.body.key },
    });
    expect(viaKey.response.statusCode).toBe(200);
    const login = await call(target, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
      payload: { username: "ada@example.com", password: "correct horse" },
    });
    expect(login.response.statusCode).toBe(200);
    const docs = await call(target, "listDocuments", {
      method: "GET",
      url: `/_mock/v1/apps/${appId}/data/notes-app/notes`,
    });
    expect(docs.body.documents[0]).toEqual({
      _id: { $oid: "65a1b2c3d4e5f60718293a50" },
      title: "First",
      at: { $date: { $numberLong: String(Date.parse("2026-11-22T10:00:00Z")) } },
      n: { $numberLong: "1234567890123" },
    });
    const clock = await call(target, "getClock", { method: "GET", url: `/_mock/v1/apps/${appId}/clock` });
    expect(clock.body.offsetMs).toBe(60_000);
    // The EmailJS account still checks its private key and keeps its mail.
    const send = (accessToken: string) =>
      sendEmail(target, {
        user_id: "state-key",
        service_id: "local_service",
        template_id: "local_template",
        accessToken,
        template_params: { to_email: "bob@example.com" },
      });
    expect((await send("wrong-key")).response.statusCode).toBe(403);
    expect((await send("state-private-key")).response.statusCode).toBe(200);
    const mail = await mailOf(target, "state-key");
    expect(mail.map((m) => m.to)).toEqual(["ann@example.com", "bob@example.com"]);
    expect(mail[0]?.links).toEqual(["https://web.example/x"]);
    expect(mail[0]?.text).toContain("\u0000");
    expect(docs.body.documents[1].title).toBe("Second\u0000\uE000");
  });

  it("keeps imported links working, those saved without the registration they are for too", async () => {
    const appId = await newApp(source);
    const register = (app: FastifyInstance, email: string) =>
      call(app, "registerUser", {
        method: "POST",
        url: `${base}/app/${appId}/auth/providers/local-userpass/register`,
        payload: { email, password: "secret-123" },
      });
    await register(source, "named@example.com");
    await register(source, "saved-before@example.com");
    const exported = await exportState(source);
    const tokens = (exported.apps.find((a) => a.appId === appId) as unknown as { authTokens: Token[] }).authTokens;
    type Token = { email: string; accountId?: string; token: string; tokenId: string };
    expect(tokens.map((t) => typeof t.accountId)).toEqual(["string", "string"]);
    delete tokens[1]!.accountId;
    expect((await importState(target, exported)).response.statusCode).toBe(204);
    for (const { token, tokenId } of tokens) {
      const confirmed = await call(target, "confirmUser", {
        method: "POST",
        url: `${base}/app/${appId}/auth/providers/local-userpass/confirm`,
        payload: { token, tokenId },
      });
      expect(confirmed.response.statusCode).toBe(200);
    }
  });

  it("replaces the whole state: nothing of the previous state remains", async () => {
    const app = await testApp();
    try {
      const appId = await newApp(app);
      const { response } = await importState(app, {
        ...(await exportState(source)),
        apps: [],
        emailjsAccounts: [],
        mail: [],
      });
      expect(response.statusCode).toBe(204);
      expect((await call(app, "getApp", { method: "GET", url: `/_mock/v1/apps/${appId}` })).response.statusCode).toBe(
        404,
      );
      expect(
        (await call(app, "listEmailJsAccounts", { method: "GET", url: "/_mock/v1/emailjs/accounts" })).body.accounts,
      ).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it("reads an Int64 past the range in a saved state as the double it was written from", async () => {
    // (This server wrote 2^63, a double, as the library does until it wrote such numbers exactly;
    // the library would read that text wrapped around, as -9223372036854775616.)
    const app = await testApp();
    try {
      const good = await exportState(source);
      const firstApp = good.apps[0]!;
      const saved = { $numberLong: "9223372036854776000" };
      const collections = [{ database: "d", collection: "big", documents: [{ _id: 1, n: saved }] }];
      const { response } = await importState(app, { ...good, apps: [{ ...firstApp, collections }] });
      expect(response.statusCode).toBe(204);
      const docs = await call(app, "listDocuments", {
        method: "GET",
        url: `/_mock/v1/apps/${firstApp.appId}/data/d/big`,
      });
      expect(docs.body.documents).toEqual([{ _id: { $numberInt: "1" }, n: { $numberDouble: "9223372036854776000" } }]);
      // A state saved now holds such numbers exactly: 1.5 × 2^61 is not "3458764513820541000".
      await call(app, "insertDocuments", {
        method: "POST",
        url: `/_mock/v1/apps/${firstApp.appId}/data/d/big`,
        payload: { documents: [{ _id: 2, n: { $numberDouble: "3458764513820540928" } }] },
      });
      const again = (await exportState(app)) as unknown as {
        apps: { collections: { collection: string; documents: unknown[] }[] }[];
      };
      expect(again.apps[0]!.collections.find((c) => c.collection === "big")!.documents).toEqual([
        { _id: { $numberInt: "1" }, n: { $numberDouble: "9223372036854776000" } },
        { _id: { $numberInt: "2" }, n: { $numberLong: "3458764513820540928" } },
      ]);
    } finally {
      await app.close();
    }
  });

  it("refuses a bad import with 400 and changes nothing", async () => {
    const good = await exportState(source);
    const before = withoutTime(await exportState(target));
    const firstApp = good.apps[0]!;
    const firstAccount = good.emailjsAccounts[0]!;
    const mail = good.mail as Record<string, unknown>[];
    expect(mail.length).toBeGreaterThan(0);
    const bad: unknown[] = [
      {},
      { ...good, format: "something-else" },
      { ...good, version: 2 },
      { ...good, apps: [firstApp, firstApp] },
      { ...good, emailjsAccounts: [firstAccount, firstAccount] },
      {
        ...good,
        apps: [{ ...firstApp, collections: [{ database: "d", collection: "c", documents: [{ _id: 1 }, { _id: 1 }] }] }],
      },
      {
        ...good,
        apps: [
          { ...firstApp, collections: [{ database: "d", collection: "c", documents: [{ x: { $oid: "nope" } }] }] },
        ],
      },
      // What the control API's own entries refuse: an app id createApp refuses, a namespace
      // insertDocuments refuses, two messages of one id.
      ...["", "bad/id", "x".repeat(5_000)].map((appId) => ({ ...good, apps: [{ ...firstApp, appId }] })),
      { ...good, apps: [{ ...firstApp, collections: [{ database: "db$", collection: "c", documents: [] }] }] },
      { ...good, mail: [mail[0], mail[0]] },
    ];
    for (const payload of bad) {
      const { response, body } = await importState(target, payload);
      expect([response.statusCode, body.code]).toEqual([400, "ValidationError"]);
    }
    const raw = await call(target, "importState", {
      method: "PUT",
      url: "/_mock/v1/state",
      headers: { "content-type": "application/json" },
      payload: "{nope",
    });
    expect(raw.response.statusCode).toBe(400);
    expect(withoutTime(await exportState(target))).toEqual(before);
  });
});
