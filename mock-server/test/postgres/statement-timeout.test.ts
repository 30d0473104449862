/**
 * A statement past its time answers the documented error, never 500 (docs/decisions/0018-fair-shares.md):
 * the pool's statement timeout and a read cancelled at its action's deadline both come out as
 * StoreTimeoutError (a MongoDB action answers "operation exceeded time limit", other requests the
 * outage answer), and the cancellation reaches only the statement it was meant for.
 */
import pg from "pg";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { checkDatabaseUrl } from "../../src/store/open-store.ts";
import { Database } from "../../src/store/postgres/database.ts";
import { StoreTimeoutError } from "../../src/store/store.ts";
import { adminQuery, emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";

let database: TestDatabase;
beforeAll(async () => {
  database = await emulatorDatabase("timeouts");
}, 30_000);
afterAll(() => database?.drop());

it("turns the statement timeout into StoreTimeoutError and goes on", async () => {
  const db = new Database({ url: database.url, maxConnections: 1, statementTimeoutMs: 50 });
  try {
    await expect(db.query("SELECT pg_sleep(5)")).rejects.toBeInstanceOf(StoreTimeoutError);
    expect((await db.rows<{ n: number }>("SELECT 1 AS n"))[0]?.n).toBe(1);
  } finally {
    await db.close();
  }
});

it("cancels a read at its deadline, and never the next statement on its connection", async () => {
  // Two connections: the read's, and the one its cancellation goes through.
  const db = new Database({ url: database.url, maxConnections: 2 });
  try {
    // Cancelled without pg's deprecated `Client.activeQuery` (it prints a deprecation warning).
    const activeQuery = vi.spyOn(pg.Client.prototype as unknown as { activeQuery: unknown }, "activeQuery", "get");
    const started = performance.now();
    await expect(db.queryWithin(100, "SELECT pg_sleep(10)")).rejects.toBeInstanceOf(StoreTimeoutError);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(activeQuery).not.toHaveBeenCalled();
    activeQuery.mockRestore();
    await expect(db.queryWithin(-1, "SELECT 1")).rejects.toBeInstanceOf(StoreTimeoutError);
    // Reads that finish just at their deadline, and the statements queued right behind them.
    const attempts = Array.from({ length: 20 }, (_, i) =>
      db.queryWithin(5 + (i % 5), "SELECT pg_sleep(0.004)").then(
        () => "done",
        (error: unknown) => (error instanceof StoreTimeoutError ? "cancelled" : `failed: ${error}`),
      ),
    );
    const others = Array.from({ length: 20 }, () => db.rows<{ n: number }>("SELECT 2 AS n"));
    expect((await Promise.all(attempts)).every((outcome) => outcome === "done" || outcome === "cancelled")).toBe(true);
    expect((await Promise.all(others)).map((rows) => rows[0]?.n)).toEqual(Array(20).fill(2));
  } finally {
    await db.close();
  }
});

it("works and cancels through a Unix socket named by `?host=` in a URL with a user", async (context) => {
  // Where the server listens besides TCP (none when its folder's path was too long for a socket).
  const [{ unix_socket_directories: folders }] = (await adminQuery(database.url, "SHOW unix_socket_directories")).rows;
  const [{ port }] = (await adminQuery(database.url, "SHOW port")).rows;
  const folder = String(folders).split(",")[0]?.trim();
  if (!folder) return context.skip("the server listens on no Unix socket");
  const tcp = new URL(database.url);
  const url = `postgres://${tcp.username}@/${tcp.pathname.slice(1)}?host=${folder}&port=${port}`;
  expect(checkDatabaseUrl(url)).toBeNull();
  const db = new Database({ url, maxConnections: 2 });
  try {
    const [row] = await db.rows<{ local: boolean }>("SELECT inet_client_addr() IS NULL AS local");
    expect(row?.local).toBe(true);
    await expect(db.queryWithin(100, "SELECT pg_sleep(10)")).rejects.toBeInstanceOf(StoreTimeoutError);
    const running = await adminQuery(
      database.url,
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(10)' AND state = 'active'",
    );
    expect(running.rows[0].n).toBe(0);
  } finally {
    await db.close();
  }
});
