/**
 * The abuse limits on PostgreSQL: two instances on one database count the same attempts (several
 * instances allow what one would), in windows timed by the database; ended windows are swept.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../src/store/postgres/database.ts";
import { PgRateLimits } from "../../src/store/postgres/rate-limits.ts";
import { type EmulatorProcess, ensureBuilt, killAll, startEmulatorProcess } from "../helpers/emulator-process.ts";
import { expectFetchContract } from "../helpers/fetch-contract.ts";
import { emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";
import { until } from "../helpers/until.ts";

const secret = "shared-limits-signing-secret-0123456789";
let database: TestDatabase;
let a: EmulatorProcess;
let b: EmulatorProcess;

beforeAll(async () => {
  await ensureBuilt();
  database = await emulatorDatabase("limits");
  const args = ["--database", database.url, "--signing-secret", secret, "--password-hash-cost", "4"];
  // Three attempts in two seconds per operation, app and address (five attempts take ~0.1 s).
  [a, b] = await Promise.all([
    startEmulatorProcess([...args, "--auth-rate-limit", "3/2s"]),
    startEmulatorProcess([...args, "--auth-rate-limit", "3/2s"]),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  killAll();
  await database?.drop();
});

async function wrongLogin(on: EmulatorProcess, appId: string) {
  const response = await fetch(`${on.url}/api/client/v2.0/app/${appId}/auth/providers/local-userpass/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "nobody@example.com", password: "not-the-password" }),
  });
  await expectFetchContract("login", response);
  return { status: response.status, retryAfter: response.headers.get("retry-after") };
}

describe("abuse limits on two instances of one database", () => {
  it("count the attempts made through either, and allow them again when the window ends", async () => {
    const created = await fetch(`${a.url}/_mock/v1/apps`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ config: {} }),
    });
    const { appId } = (await expectFetchContract("createApp", created)) as { appId: string };
    // Alternating: each instance alone would allow all five (three each).
    const attempts = [];
    for (const on of [a, b, a, b, a]) attempts.push(await wrongLogin(on, appId));
    const statuses = attempts.map((attempt) => attempt.status);
    // The window may end during the run on a slow machine: then the count starts again.
    const refused = statuses.indexOf(429);
    expect(refused, statuses.join(" ")).toBeGreaterThanOrEqual(3);
    expect(statuses.slice(0, 3), statuses.join(" ")).toEqual([401, 401, 401]);
    expect(Number(attempts[refused]!.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(attempts[refused]!.retryAfter)).toBeLessThanOrEqual(2);
    // The window ends (the database's clock): attempts are allowed again, on either instance.
    await until(async () => (await wrongLogin(b, appId)).status === 401, "the window to end", { everyMs: 100 });
  });
});

describe("the database's counters", () => {
  it("count per key in windows, and sweep ended windows", async () => {
    const db = new Database({ url: database.url });
    try {
      const limits = new PgRateLimits(db);
      expect(await limits.hit("k1", 60_000)).toMatchObject({ hits: 1 });
      const second = await limits.hit("k1", 60_000);
      expect(second.hits).toBe(2);
      expect(second.ttlMs).toBeGreaterThan(50_000);
      expect(second.ttlMs).toBeLessThanOrEqual(60_000);
      expect((await limits.hit("k2", 60_000)).hits).toBe(1);
      // A window that has ended starts again at one.
      await db.query(
        "UPDATE rate_limit_counters SET window_ends = clock_timestamp() - interval '1 second' WHERE key = 'k1'",
      );
      expect((await limits.hit("k1", 60_000)).hits).toBe(1);
      // Ended windows go in the sweep that every 200th hit starts.
      await db.query(
        "UPDATE rate_limit_counters SET window_ends = clock_timestamp() - interval '1 second' WHERE key = 'k2'",
      );
      for (let i = 0; i < 200; i++) await limits.hit("k3", 60_000);
      const keys = async () =>
        (await db.rows<{ key: string }>("SELECT key FROM rate_limit_counters WHERE key LIKE 'k_' ORDER BY key")).map(
          (r) => r.key,
        );
      await until(async () => !(await keys()).includes("k2"), "the sweep");
      expect(await keys()).toEqual(["k1", "k3"]);
    } finally {
      await db.close();
    }
  });
});
