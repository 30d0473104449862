/**
 * A pool connection that breaks while it is checked out — between two statements of a transaction,
 * the server restarted or the backend terminated — must not take the process down: its statements
 * fail as an outage, it is not given back, and the next statement gets a new connection. (Before,
 * the connection's `error` event had no listener while checked out: an uncaught exception, which
 * killed an instance in the production rehearsal's PostgreSQL restart.) A statement sent once the
 * pool is closed — a request that outlived the shutdown's drain — is an outage too (503), not a 500.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { Database } from "../../src/store/postgres/database.ts";
import { StoreUnavailableError } from "../../src/store/store.ts";
import { adminQuery, emulatorDatabase, postgresAdminUrl, type TestDatabase } from "../helpers/postgres.ts";
import { until } from "../helpers/until.ts";

let database: TestDatabase;
beforeAll(async () => {
  database = await emulatorDatabase("broken-connection");
}, 30_000);
afterAll(() => database?.drop());

it("survives a checked-out connection's backend ending between two statements", async () => {
  const db = new Database({ url: database.url, maxConnections: 2 });
  const uncaught: unknown[] = [];
  const onUncaught = (error: unknown) => uncaught.push(error);
  process.on("uncaughtException", onUncaught);
  try {
    const tx = await db.begin();
    const [{ pid }] = (await tx.client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows as [
      { pid: number },
    ];
    await adminQuery(postgresAdminUrl(), "SELECT pg_terminate_backend($1)", [pid]);
    // The backend is gone once the server no longer lists it; the connection hears of it by itself.
    await until(
      async () =>
        (await adminQuery(postgresAdminUrl(), "SELECT 1 FROM pg_stat_activity WHERE pid = $1", [pid])).rowCount === 0,
      "the backend to end",
    );
    await expect(tx.client.query("SELECT 1")).rejects.toBeInstanceOf(StoreUnavailableError);
    // Its rollback fails quietly and does not give the broken connection back.
    await tx.rollback();
    expect((await db.rows<{ n: number }>("SELECT 1 AS n"))[0]?.n).toBe(1);
    expect(uncaught).toEqual([]);
  } finally {
    process.off("uncaughtException", onUncaught);
    await db.close();
  }
});

it("answers a statement sent after the pool was closed (a request outliving the drain) as an outage", async () => {
  const db = new Database({ url: database.url, maxConnections: 1 });
  await db.close();
  await expect(db.query("SELECT 1")).rejects.toBeInstanceOf(StoreUnavailableError);
  await expect(db.begin()).rejects.toBeInstanceOf(StoreUnavailableError);
});

it("lets the statements under way, and those waiting for a connection, finish before it closes", async () => {
  const db = new Database({ url: database.url, maxConnections: 1 });
  // One statement holds the only connection; the next waits for it; the close comes meanwhile.
  const running = db.query("SELECT pg_sleep(0.2) AS slept");
  const waiting = db.query("SELECT 2 AS n");
  const closed = db.close();
  await expect(running).resolves.toBeDefined();
  expect((await waiting).rows).toEqual([{ n: 2 }]);
  await closed;
  await expect(db.query("SELECT 1")).rejects.toBeInstanceOf(StoreUnavailableError);
});
