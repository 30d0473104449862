/**
 * On a database, one client address (or user) runs at most half the instance's connections'
 * worth of MongoDB actions at once, whatever its users: the others' actions always find a
 * connection. (An address's 32 actions held all 20 connections; everyone else's waited for one,
 * timed out, or answered that the database could not be reached, and readiness failed too.)
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, mongoAction, newApp, testApp } from "../helpers/app.ts";

let app: Awaited<ReturnType<typeof testApp>>;
beforeAll(async () => {
  app = await testApp({ databasePoolSize: 6 });
}, 30_000);
afterAll(() => app?.close());

const shared = { database: "db", collection: "shared" };

const loginFrom = async (appId: string, address: string) => (await anonymousLogin(app, appId, address)).access_token;
const fromAddress = (appId: string, token: string, address: string, name: string, argument: object) =>
  mongoAction(app, appId, token, name, argument as Record<string, unknown>, address);

describe("a client address's MongoDB actions on a database", () => {
  it("hold at most half the connections, so another address's action still gets one", async () => {
    const appId = await newApp(app, { rules: { default: { read: true, write: true, insert: true, delete: true } } });
    const runtime = (await app.emulator.apps.get(appId))!;
    const many = await Promise.all([1, 2, 3].map(() => loginFrom(appId, "203.0.113.5")));
    const elsewhere = await loginFrom(appId, "198.51.100.7");
    await fromAddress(appId, many[0]!, "203.0.113.5", "insertOne", { ...shared, document: { _id: 1, n: 0 } });
    // A session of the database's own holds the document's row: every update of it waits in the
    // database, holding a connection.
    const holder = new pg.Client({ connectionString: app.emulator.options.databaseUrl! });
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM documents WHERE app_id = $1 AND coll = 'shared' FOR UPDATE", [appId]);
      const updates = many.flatMap((token) =>
        [0, 1, 2, 3].map(() =>
          fromAddress(appId, token, "203.0.113.5", "updateOne", {
            ...shared,
            query: { _id: 1 },
            update: { $inc: { n: 1 } },
          }),
        ),
      );
      // Twelve sent: each user runs three (half the six connections) and one waits in its own
      // line; of the nine, the address runs three (waiting for the row) and six wait their turn.
      await expect.poll(() => runtime.actionTurns.counts("address:")).toEqual({ running: 3, waiting: 6 });
      expect(runtime.actionTurns.counts("user:")).toEqual({ running: 9, waiting: 3 });
      // Another address's action finds a connection meanwhile.
      const found = await fromAddress(appId, elsewhere, "198.51.100.7", "find", { ...shared, query: {} });
      expect(found.response.statusCode).toBe(200);
      await holder.query("COMMIT");
      for (const done of await Promise.all(updates)) expect(done.response.statusCode).toBe(200);
    } finally {
      await holder.end();
    }
    const { body } = await fromAddress(appId, elsewhere, "198.51.100.7", "findOne", { ...shared, query: { _id: 1 } });
    expect(body).toEqual({ _id: { $numberInt: "1" }, n: { $numberInt: "12" } });
  }, 30_000);
});
