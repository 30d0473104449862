/**
 * Readiness while an instance starts: it listens before it opens the database, so while it waits
 * for (or runs) migrations the health check answers 200 and the readiness check 503 `starting`;
 * other requests wait for it to serve (then 503 with `Retry-After`, past a few seconds: unit-tested in
 * test/http/while-starting.test.ts). Here another session holds the migration lock. A
 * production instance also compiles its routes' schemas before it is ready.
 */
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../src/server.ts";
import { migrationLock } from "../../src/store/postgres/migrations.ts";
import { expectFetchContract } from "../helpers/fetch-contract.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/postgres.ts";

let database: TestDatabase | undefined;
let server: RunningServer | undefined;
afterAll(async () => {
  await server?.close();
  await database?.drop();
});

const signingSecret = "readiness-test-signing-secret-0123";

describe("an instance starting on a database", () => {
  it("is alive but not ready until its migrations ran", async () => {
    database = await createTestDatabase("readiness");
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    await holder.query("SELECT pg_advisory_lock($1)", [migrationLock]);
    let listeningAt: (url: string) => void = () => {};
    const url = new Promise<string>((resolve) => (listeningAt = resolve));
    const starting = startServer(
      {
        port: 0,
        logLevel: "silent",
        watchFunctions: false,
        databaseUrl: database.url,
        signingSecret,
      },
      // (Requests wait as long as the test needs: the start after the lock may be slow on a busy host.)
      { onListening: listeningAt, startingHold: { holdMs: 60_000, maxHeld: 10 } },
    );
    let waited: Promise<Response> | undefined;
    try {
      const base = await url;
      const ready = await fetch(`${base}/_mock/v1/ready`);
      expect(ready.status).toBe(503);
      expect(ready.headers.get("retry-after")).toBe("1");
      expect(await expectFetchContract("getReadiness", ready)).toEqual({
        status: "starting",
        reason: "opening the database and bringing its schema up to date",
      });
      const health = await fetch(`${base}/_mock/v1/health`);
      expect(await expectFetchContract("getHealth", health)).toMatchObject({ status: "ok" });
      // A client request waits: answered by the server once it serves.
      waited = fetch(`${base}/api/client/v2.0/app/local-app/location`);
      let answered = false;
      void waited.then(() => (answered = true));
      expect((await fetch(`${base}/_mock/v1/ready`)).status).toBe(503);
      expect(answered).toBe(false);
    } finally {
      await holder.query("SELECT pg_advisory_unlock($1)", [migrationLock]);
      await holder.end();
    }
    server = await starting;
    const location = await waited!;
    expect(location.status).toBe(200);
    await expectFetchContract("getLocation", location);
    const ready = await fetch(`${server.url}/_mock/v1/ready`);
    expect(await expectFetchContract("getReadiness", ready)).toEqual({ status: "ready" });
    expect((await fetch(`${server.url}/api/client/v2.0/app/local-app/location`)).status).toBe(200);
  });
});

describe("a production instance", () => {
  it("compiles every route's schemas before it says it is ready; the harness compiles them on first use", async () => {
    const databases = [await createTestDatabase("readiness-production"), await createTestDatabase("readiness-harness")];
    const options = { port: 0, logLevel: "silent", watchFunctions: false, signingSecret } as const;
    const production = await startServer({ ...options, production: true, databaseUrl: databases[0]!.url });
    const harness = await startServer({ ...options, databaseUrl: databases[1]!.url });
    try {
      expect(await expectFetchContract("getReadiness", await fetch(`${production.url}/_mock/v1/ready`))).toEqual({
        status: "ready",
      });
      expect(await production.app.compileSchemas()).toBe(0);
      expect(await harness.app.compileSchemas()).toBeGreaterThan(100);
      expect(await harness.app.compileSchemas()).toBe(0);
    } finally {
      await production.close();
      await harness.close();
      for (const db of databases) await db.drop();
    }
  });
});
