/**
 * A state export of the PostgreSQL store (`GET /_mock/v1/state`) is the state at one moment, as the
 * in-memory store's is: it reads every table in one read-only transaction of one snapshot, so a
 * write made while it runs is in it whole or not at all — never a later write without an earlier
 * one, a session without its user, a document without the collection's other changes of the time.
 * (Read table by table, an export taken under traffic held what was written after it began in the
 * tables it read last, and missed it in those it had read.) While the database is slow to give the
 * next rows, a client that took all there was so far is not cut as one that stopped reading; when
 * the database fails midway, the reply (its status sent) is cut, and the next export is whole.
 */
import type { FastifyInstance } from "fastify";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newApp, openData } from "../helpers/app.ts";
import { newAccount } from "../helpers/emailjs.ts";
import { listening } from "../helpers/listen.ts";
import { adminQuery, emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";
import { until } from "../helpers/until.ts";

/** How long a reply may send nothing before it is cut (http/unsent-replies.ts), shortened. */
const idleMs = 300;
let database: TestDatabase;
let app: FastifyInstance;
let url: string;
beforeAll(async () => {
  database = await emulatorDatabase("state_export");
  ({ app, url } = await listening({
    databaseUrl: database.url,
    signingSecret: "a-state-export-signing-secret-0123456789",
    unsentReplyIdleMs: idleMs,
  }));
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

/** A connection holding the users table locked (the export waits at it) until it rolls back. */
async function lockedUsers(): Promise<pg.Client> {
  const locker = new pg.Client({ connectionString: database.url });
  await locker.connect();
  await locker.query("BEGIN");
  await locker.query("LOCK TABLE users IN ACCESS EXCLUSIVE MODE");
  return locker;
}

/** Until the export waits for the users table (watched from another connection: a transaction sees one snapshot of pg_stat_activity). */
async function exportWaiting(): Promise<void> {
  const waiting = async () =>
    (
      await adminQuery(
        database.url,
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM users%'",
      )
    ).rows[0].n;
  await expect.poll(waiting, { timeout: 10_000 }).toBe(1);
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
    const locker = await lockedUsers();
    try {
      const exported = call(app, "exportState", { method: "GET", url: "/_mock/v1/state" });
      await exportWaiting();
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

  it("cuts its reply when the database fails midway: the client never holds a state that looks whole", async () => {
    const appId = await newApp(app, openData);
    await insert(appId, [{ _id: "one", text: "in the next export" }]);
    const locker = await lockedUsers();
    try {
      const reply = await fetch(`${url}/_mock/v1/state`);
      expect(reply.status).toBe(200);
      // (Its end is taken at once: it fails while the test is still at the database.)
      const read = reply.text().then(
        () => "whole",
        (error: Error) => error,
      );
      await exportWaiting();
      await adminQuery(
        database.url,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM users%'",
      );
      expect(await read).toBeInstanceOf(Error);
    } finally {
      await locker.query("ROLLBACK");
      await locker.end();
    }
    const { response, body } = await call(app, "exportState", { method: "GET", url: "/_mock/v1/state" });
    expect(response.statusCode).toBe(200);
    const documents = (body as Exported).apps.find((a) => a.appId === appId)?.collections.flatMap((c) => c.documents);
    expect(documents?.map((d) => d._id)).toEqual(["one"]);
  });

  it("keeps a client that took all there was while the database is slow to give the rest", async () => {
    const appId = await newApp(app, openData);
    await insert(appId, [{ _id: "kept", text: "sent after the wait" }]);
    const cutBefore = app.emulator.unsentReplies.cut;
    const locker = await lockedUsers();
    try {
      const reply = await fetch(`${url}/_mock/v1/state`);
      const text = reply.text();
      await exportWaiting();
      // The client has the first pieces and waits for more: three idle times pass with nothing
      // unsent and the reply's watch looking (every idle time / 4).
      const since = Date.now();
      await until(() => Date.now() - since > idleMs * 3, "three idle times", { timeoutMs: idleMs * 10, everyMs: 50 });
      expect(app.emulator.unsentReplies.cut).toBe(cutBefore);
      await locker.query("ROLLBACK");
      const state = JSON.parse(await text) as Exported;
      const documents = state.apps.find((a) => a.appId === appId)?.collections.flatMap((c) => c.documents);
      expect(documents?.map((d) => d._id)).toEqual(["kept"]);
    } finally {
      await locker.end();
    }
  });
});
