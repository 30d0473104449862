/**
 * How much mail an app holds is counted by the database: the control API's app summaries (the
 * inspector's sidebar asks for them at every page it shows) read no message, however much mail a
 * production database keeps (30 days of it, by default); a listing's page reads only its rows.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MailFilter } from "../../src/store/store.ts";
import { base, call, newApp, testApp } from "../helpers/app.ts";
import { emulatorDatabase, statementsOf, type TestDatabase } from "../helpers/postgres.ts";

/** Only the statements of the work itself, not those of the delivery and retention timers meanwhile. */
const own = { own: true };
let database: TestDatabase;
let app: FastifyInstance;
let appId: string;
let otherId: string;
beforeAll(async () => {
  database = await emulatorDatabase("mail_counts");
  app = await testApp({ databaseUrl: database.url, signingSecret: "a-mail-count-signing-secret-0123456789" });
  appId = await newApp(app, { providers: { "local-userpass": { enabled: true, autoConfirm: false } } });
  otherId = await newApp(app, { providers: { "local-userpass": { enabled: true, autoConfirm: false } } });
  const register = (id: string, email: string) =>
    call(app, "registerUser", {
      method: "POST",
      url: `${base}/app/${id}/auth/providers/local-userpass/register`,
      payload: { email, password: "correct horse" },
    });
  for (const email of ["a@example.com", "b@example.com", "Carol@Example.com"]) await register(appId, email);
  await register(otherId, "a@example.com");
  await call(app, "sendResetPasswordEmail", {
    method: "POST",
    url: `${base}/app/${appId}/auth/providers/local-userpass/reset/send`,
    payload: { email: "a@example.com" },
  });
});
afterAll(async () => {
  await app?.close();
  await database?.drop();
});

describe("counting an app's mail on PostgreSQL", () => {
  it("is one count in the database: no message is read", async () => {
    const { texts } = await statementsOf(async () => {
      const { body } = await call(app, "getApp", { method: "GET", url: `/_mock/v1/apps/${appId}` });
      expect(body.mail).toBe(3);
    }, own);
    const mailReads = texts.filter((text) => /\bFROM mail\b/.test(text));
    expect(mailReads).toHaveLength(1);
    expect(mailReads[0]).toMatch(/count\(\*\)/);
    expect(mailReads[0]).not.toMatch(/\bdoc\b/);
  });

  it("counts what a listing with the same filter holds", async () => {
    const all = await app.emulator.store.mail.list({});
    const [second] = all;
    const filters: MailFilter[] = [
      {},
      { appId },
      { appId: otherId },
      { to: "CAROL@example.com" },
      { to: "a@example.com", appId },
      { kind: "confirm" },
      { kind: "reset", appId },
      { source: "app-services" },
      { since: second!.id },
      { since: new Date(Date.parse(second!.createdAt) - 1).toISOString() },
      { search: "carol" },
      { search: "reset", appId },
    ];
    for (const filter of filters) {
      const listed = (await app.emulator.store.mail.list(filter)).length;
      expect(await app.emulator.store.mail.count(filter), JSON.stringify(filter)).toBe(listed);
    }
  });

  it("reads only a page's rows for a listing's newest page", async () => {
    let page: { messages: { to: string }[]; total: number } | undefined;
    const { texts } = await statementsOf(async () => {
      page = (await call(app, "listMail", { method: "GET", url: `/_mock/v1/mail?appId=${appId}&limit=2` })).body;
    }, own);
    expect(page!.messages).toHaveLength(2);
    expect(page!.total).toBe(3);
    const reads = texts.filter((text) => /\bFROM mail\b/.test(text));
    expect(reads.find((text) => /\bdoc\b/.test(text))).toMatch(/LIMIT/);
  });
  it("searches the searched fields alone, and reads whole only the messages of the page", async () => {
    let page: { messages: unknown[]; total: number } | undefined;
    const { texts } = await statementsOf(async () => {
      page = (await call(app, "listMail", { method: "GET", url: "/_mock/v1/mail?search=EXAMPLE.com&limit=2" })).body;
    }, own);
    const all = await app.emulator.store.mail.list({});
    expect(all.length).toBeGreaterThan(2);
    expect(page!.messages).toEqual(all.slice(-2));
    expect(page!.total).toBe(all.length);
    const reads = texts.filter((text) => /\bFROM mail\b/.test(text));
    // The search's scans (the page's and the count's) read the subject, recipients and text.
    const scans = reads.filter((text) => text.startsWith("DECLARE"));
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) expect(scan).not.toMatch(/SELECT (id, )?doc\b|\bdoc AS|, doc\b/);
    // Whole messages: the page's two, by their ids.
    const whole = reads.filter((text) => /SELECT doc\b/.test(text));
    expect(whole).toEqual(["SELECT doc FROM mail WHERE id = ANY($1::bigint[]) ORDER BY id"]);
  });
});
