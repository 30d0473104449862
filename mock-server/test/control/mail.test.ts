/** The captured mail: filters, server-side `wait` (released by the first match, timed out cleanly, cancelled by a disconnect), get and clear. */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { base, call, newApp, testApp } from "../helpers/app.ts";
import { newAccount, sendEmail } from "../helpers/emailjs.ts";
import { expectFetchContract } from "../helpers/fetch-contract.ts";
import { listening } from "../helpers/listen.ts";
import { until } from "../helpers/until.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(async () => {
  await app.close();
});

const listMail = async (query: string) =>
  (await call(app, "listMail", { method: "GET", url: `/_mock/v1/mail${query}` })).body.messages as Record<
    string,
    string
  >[];

const register = (appId: string, email: string) =>
  call(app, "registerUser", {
    method: "POST",
    url: `${base}/app/${appId}/auth/providers/local-userpass/register`,
    payload: { email, password: "correct horse" },
  });

const emailJs = (publicKey: string, to: string, template_id = "local_template") =>
  sendEmail(app, {
    user_id: publicKey,
    service_id: "local_service",
    template_id,
    template_params: { to_email: to, message: "Hi" },
  });

describe("listMail", () => {
  it("filters by recipient (case-insensitive), app, account, source, kind and since", async () => {
    const appId = await newApp(app, {
      providers: { "local-userpass": { emailConfirmationUrl: "http://web.example/confirm" } },
    });
    const { publicKey } = await newAccount(app);
    await register(appId, "ada@example.com");
    await emailJs(publicKey, "Ada@Example.com");
    await emailJs(publicKey, "bob@example.com");

    const confirm = await listMail(`?appId=${appId}`);
    expect(confirm).toHaveLength(1);
    expect(confirm[0]).toMatchObject({ source: "app-services", appId, kind: "confirm", to: "ada@example.com" });
    expect(confirm[0]?.token).toEqual(expect.any(String));
    expect(confirm[0]?.links).toEqual([expect.stringMatching(/^http:\/\/web\.example\/confirm\?token=/)]);

    expect((await listMail(`?account=${publicKey}`)).map((m) => m.to)).toEqual(["Ada@Example.com", "bob@example.com"]);
    expect((await listMail(`?to=ADA@example.com&account=${publicKey}`)).map((m) => m.to)).toEqual(["Ada@Example.com"]);
    expect(await listMail(`?to=ada@example.com&source=app-services&appId=${appId}`)).toHaveLength(1);
    expect(await listMail(`?kind=local_template&account=${publicKey}`)).toHaveLength(2);
    expect(await listMail(`?kind=confirm&account=${publicKey}`)).toHaveLength(0);
    const first = (await listMail(`?account=${publicKey}`))[0]!;
    expect((await listMail(`?account=${publicKey}&since=${first.id}`)).map((m) => m.to)).toEqual(["bob@example.com"]);
    expect(
      await listMail(`?account=${publicKey}&since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`),
    ).toEqual([]);
  });

  it("answers the newest `limit` matches, oldest first, and how many match", async () => {
    const appId = await newApp(app);
    const emails = ["l1@example.com", "l2@example.com", "l3@example.com", "l4@example.com", "l5@example.com"];
    for (const email of emails) await register(appId, email);
    const page = async (query: string) =>
      (await call(app, "listMail", { method: "GET", url: `/_mock/v1/mail?appId=${appId}${query}` })).body as {
        messages: { id: string; to: string }[];
        total: number;
      };
    const newest = await page("&limit=2");
    expect(newest.messages.map((m) => m.to)).toEqual(emails.slice(3));
    expect(newest.total).toBe(5);
    const all = await page("");
    expect([all.messages.map((m) => m.to), all.total]).toEqual([emails, 5]);
    const searched = await page("&search=L2@&limit=1");
    expect([searched.messages.map((m) => m.to), searched.total]).toEqual([["l2@example.com"], 1]);
    const since = await page(`&since=${all.messages[1]!.id}&limit=2`);
    expect([since.messages.map((m) => m.to), since.total]).toEqual([emails.slice(3), 3]);
    for (const limit of ["0", "10001"]) {
      const refused = await call(app, "listMail", { method: "GET", url: `/_mock/v1/mail?limit=${limit}` });
      expect(refused.response.statusCode, limit).toBe(400);
    }
  });

  it("rejects a bad wait or source (400)", async () => {
    for (const query of ["?wait=-1", "?wait=60001", "?wait=soon", "?source=smtp"]) {
      const { response } = await call(app, "listMail", { method: "GET", url: `/_mock/v1/mail${query}` });
      expect(response.statusCode).toBe(400);
    }
  });
});

describe("listMail with wait", () => {
  it("answers at once when a message already matches", async () => {
    const { publicKey } = await newAccount(app);
    await emailJs(publicKey, "ann@example.com");
    const started = performance.now();
    expect(await listMail(`?account=${publicKey}&wait=30000`)).toHaveLength(1);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it("holds the request until a matching message arrives, then answers with it", async () => {
    const { publicKey } = await newAccount(app);
    const { mail } = app.emulator.store;
    const before = mail.pendingWaits;
    const started = performance.now();
    const waiting = call(app, "listMail", {
      method: "GET",
      url: `/_mock/v1/mail?account=${publicKey}&to=late@example.com&wait=30000`,
    });
    await until(() => mail.pendingWaits === before + 1, "the wait to be registered");
    // A message for someone else does not release it.
    await emailJs(publicKey, "other@example.com");
    expect(mail.pendingWaits).toBe(before + 1);
    await emailJs(publicKey, "late@example.com");
    const { response, body } = await waiting;
    expect(response.statusCode).toBe(200);
    expect(body.messages.map((m: { to: string }) => m.to)).toEqual(["late@example.com"]);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(mail.pendingWaits).toBe(before);
  });

  it("times out cleanly with no messages", async () => {
    const { publicKey } = await newAccount(app);
    const started = performance.now();
    const { response, body } = await call(app, "listMail", {
      method: "GET",
      url: `/_mock/v1/mail?account=${publicKey}&wait=60`,
    });
    expect(response.statusCode).toBe(200);
    expect(body).toEqual({ messages: [], total: 0 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(55);
    expect(app.emulator.store.mail.pendingWaits).toBe(0);
  });

  it("is cancelled when the client goes away, and the server keeps serving", async () => {
    const server = await listening();
    try {
      const { mail } = server.app.emulator.store;
      const gone = new AbortController();
      const request = fetch(`${server.url}/_mock/v1/mail?to=nobody@example.com&wait=60000`, { signal: gone.signal });
      await until(() => mail.pendingWaits === 1, "the wait to be registered");
      gone.abort();
      await expect(request).rejects.toThrow();
      await until(() => mail.pendingWaits === 0, "the wait to be released");
      const health = await fetch(`${server.url}/_mock/v1/health`);
      await expectFetchContract("getHealth", health);
      expect(health.status).toBe(200);
    } finally {
      await server.app.close();
    }
  });

  it("is released when the emulator stops", async () => {
    const server = await listening();
    const { mail } = server.app.emulator.store;
    const request = fetch(`${server.url}/_mock/v1/mail?to=nobody@example.com&wait=60000`).catch(
      (error: Error) => error,
    );
    await until(() => mail.pendingWaits === 1, "the wait to be registered");
    await server.app.close();
    await request;
    await until(() => mail.pendingWaits === 0, "the wait to be released");
  });
});

describe("getMail and clearMail", () => {
  it("reads one message, 404 for an unknown id", async () => {
    const { publicKey } = await newAccount(app);
    await emailJs(publicKey, "ann@example.com");
    const [message] = await listMail(`?account=${publicKey}`);
    const { response, body } = await call(app, "getMail", { method: "GET", url: `/_mock/v1/mail/${message!.id}` });
    expect(response.statusCode).toBe(200);
    expect(body).toEqual(message);
    // Ids this server never writes: far beyond any number, or another spelling of the message's.
    const spelledDifferently = String(message!.id).replace("m-", "m-0");
    for (const id of ["m-999999", "m-99999999999999999999", spelledDifferently, "m-1.0", "m--1"]) {
      const missing = await call(app, "getMail", { method: "GET", url: `/_mock/v1/mail/${id}` });
      expect([missing.response.statusCode, missing.body.code], id).toEqual([404, "NotFound"]);
    }
    expect(await listMail(`?account=${publicKey}&since=m-99999999999999999999`)).toEqual([]);
    // A `since` that is neither a time nor a message id is refused, not taken as no bound (a typo
    // would have a test read old mail instead of waiting for the new).
    for (const since of ["2026-13-45", "yesterday", "1", "2026-11-30", "m-"]) {
      const { response, body } = await call(app, "listMail", {
        method: "GET",
        url: `/_mock/v1/mail?account=${publicKey}&wait=2000&since=${encodeURIComponent(since)}`,
      });
      expect([response.statusCode, body.code], since).toEqual([400, "ValidationError"]);
    }
  });

  it("deletes one account's or one app's mail, or all of it", async () => {
    const a = await newAccount(app);
    const b = await newAccount(app);
    const appId = await newApp(app);
    await emailJs(a.publicKey, "ann@example.com");
    await emailJs(b.publicKey, "bob@example.com");
    await register(appId, "cy@example.com");
    const clear = (query: string) => call(app, "clearMail", { method: "DELETE", url: `/_mock/v1/mail${query}` });
    expect((await clear(`?account=${a.publicKey}`)).response.statusCode).toBe(204);
    expect(await listMail(`?account=${a.publicKey}`)).toEqual([]);
    expect(await listMail(`?account=${b.publicKey}`)).toHaveLength(1);
    await clear(`?appId=${appId}`);
    expect(await listMail(`?appId=${appId}`)).toEqual([]);
    expect(await listMail(`?account=${b.publicKey}`)).toHaveLength(1);
    await clear("");
    expect(await listMail("")).toEqual([]);
  });
});
