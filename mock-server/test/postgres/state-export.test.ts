/**
 * A state export of the PostgreSQL store (`GET /_mock/v1/state`) is the state at one moment, as the
 * in-memory store's is: it reads every table in one read-only transaction of one snapshot, so a
 * write made while it runs is in it whole or not at all — never a later write without an earlier
 * one, a session without its user, a document without the collection's other changes of the time.
 * (Read table by table, an export taken under traffic held what was written after it began in the
 * tables it read last, and missed it in those it had read.)
 */
import type { FastifyInstance } from "fastify";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newApp, openData, testApp } from "../helpers/app.ts";
import { newAccount } from "../helpers/emailjs.ts";
import { adminQuery, emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";

let database: TestDatabase;
let app: FastifyInstance;
beforeAll(async () => {
  database = await emulatorDatabase("state_export");
  app = await testApp({ databaseUrl: database.url, signingSecret: "a-state-export-signing-secret-0123456789" });
});
afterAll(async () => {
  await app?.close();
  await database?.drop();
});

async function insert(appId: string, documents: unknown[]) {
  const { response } = await call(app, "insertDocuments", {
    method: "POST",
    url: `/_mock/v1/apps/${appId}/data/notes-app/notes`,
    payload: { documents },
  });
  expect(response.statusCode).toBe(201);
}

type Exported = {
  apps: { appId: string; collections: { documents: { _id: unknown }[] }[] }[];
  emailjsAccounts: { publicKey: string }[];
};

describe("the PostgreSQL store's state export", () => {
  it("is one moment: nothing written after it began is in it, whichever table it reads last", async () => {
    const appId = await newApp(app, openData);
    await insert(appId, [{ _id: "before", text: "written before the export" }]);
    const before = await newAccount(app);

    // The export is held between its reads: another connection keeps the users table locked.
    const locker = new pg.Client({ connectionString: database.url });
    await locker.connect();
    try {
      await locker.query("BEGIN");
      await locker.query("LOCK TABLE users IN ACCESS EXCLUSIVE MODE");
      const exported = call(app, "exportState", { method: "GET", url: "/_mock/v1/state" });
      // (Watched from another connection: a transaction sees one snapshot of pg_stat_activity.)
      const waiting = async () =>
        (
          await adminQuery(
            database.url,
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM users%'",
          )
        ).rows[0].n;
      await expect.poll(waiting, { timeout: 10_000 }).toBe(1);
      // Written while the export waits: a document (a table it read already, read table by table)
      // and an EmailJS account (one it reads last).
      await insert(appId, [{ _id: "during", text: "written while the export ran" }]);
      const during = await newAccount(app);
      await locker.query("ROLLBACK");

      const { response, body } = await exported;
      expect(response.statusCode).toBe(200);
      const state = body as Exported;
      const documents = state.apps.find((a) => a.appId === appId)?.collections.flatMap((c) => c.documents);
      expect(documents?.map((d) => d._id)).toEqual(["before"]);
      const keys = state.emailjsAccounts.map((a) => a.publicKey);
      expect(keys).toContain(before.publicKey);
      expect(keys).not.toContain(during.publicKey);
    } finally {
      await locker.end();
    }
  });
});
