/**
 * The abuse limits on PostgreSQL: two instances on one database count the same attempts (several
 * instances allow what one would), in windows timed by the database; ended windows are swept; a
 * key past its limit is refused without a statement until its window ends.
 */

import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgContext } from "../../src/store/postgres/context.ts";
import { Database } from "../../src/store/postgres/database.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { PgRateLimits } from "../../src/store/postgres/rate-limits.ts";
import { call, testApp } from "../helpers/app.ts";
import { type EmulatorProcess, ensureBuilt, killAll, startEmulatorProcess } from "../helpers/emulator-process.ts";
import { expectFetchContract } from "../helpers/fetch-contract.ts";
import { emulatorDatabase, statementsOf, type TestDatabase } from "../helpers/postgres.ts";
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
      const limits = new PgRateLimits(new PgContext(db, "counters-test"));
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

describe("a key past its limit in a window of the database's clock", () => {
  let one: PostgresStore;
  let two: PostgresStore;
  beforeAll(async () => {
    [one, two] = await Promise.all([
      PostgresStore.open({ url: database.url }),
      PostgresStore.open({ url: database.url }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([one?.close(), two?.close()]);
  });

  /** A hit of `key` (limit 2) on `store`, and the statements it made. */
  async function hit(store: PostgresStore, key: string, windowMs = 60_000, at?: number) {
    let answer: { hits: number; ttlMs: number } | undefined;
    const { texts } = await statementsOf(
      async () => {
        answer = await store.rateLimits.hit(key, windowMs, at, 2);
      },
      { own: true },
    );
    return { ...answer!, statements: texts.length };
  }

  it("is refused without a statement until the window ends, by each instance once it has seen it", async () => {
    const key = "ip|window-app|login|203.0.113.7";
    expect(await hit(one, key, 1_500)).toMatchObject({ hits: 1, statements: 1 });
    expect(await hit(two, key, 1_500)).toMatchObject({ hits: 2, statements: 1 });
    expect(await hit(one, key, 1_500)).toMatchObject({ hits: 3, statements: 1 });
    const kept = await hit(one, key, 1_500);
    expect(kept).toMatchObject({ hits: 3, statements: 0 });
    expect(kept.ttlMs).toBeGreaterThan(0);
    expect(kept.ttlMs).toBeLessThanOrEqual(1_500);
    expect(await hit(two, key, 1_500)).toMatchObject({ hits: 4, statements: 1 });
    expect(await hit(two, key, 1_500)).toMatchObject({ hits: 3, statements: 0 });
    // The window ends: counted again from one, on either instance.
    await until(async () => (await hit(one, key, 1_500)).hits === 1, "the window to end", { everyMs: 100 });
    expect(await hit(two, key, 1_500)).toMatchObject({ hits: 2, statements: 1 });
    // By the harness's clock (a test may move it) too; moved past the window, or put back more
    // than a window behind it, the key is counted again.
    const harness = "ip|window-app|login|198.51.100.9";
    const start = Date.now();
    for (const n of [1, 2, 3]) expect(await hit(one, harness, 60_000, start)).toMatchObject({ hits: n, statements: 1 });
    expect(await hit(one, harness, 60_000, start + 59_000)).toMatchObject({ hits: 3, ttlMs: 1_000, statements: 0 });
    expect(await hit(one, harness, 60_000, start + 60_000)).toMatchObject({ hits: 1, statements: 1 });
    for (const n of [2, 3]) expect(await hit(one, harness, 60_000, start + 60_000)).toMatchObject({ hits: n });
    expect(await hit(one, harness, 60_000, start - 70_000)).toMatchObject({ hits: 1, statements: 1 });
  });

  it("is kept for at most so many keys, the oldest going first", async () => {
    one.rateLimits.maxRefusals = 4;
    try {
      const keys = Array.from({ length: 5 }, (_, i) => `ip|bounded-app|login|203.0.113.${100 + i}`);
      for (const key of keys) for (let i = 0; i < 3; i++) await hit(one, key);
      // Past four, the oldest went, down to half: the last two are kept, the first three asked again.
      const statements = [];
      for (const key of [...keys].reverse()) statements.push((await hit(one, key)).statements);
      expect(statements).toEqual([0, 0, 1, 1, 1]);
    } finally {
      one.rateLimits.maxRefusals = 100_000;
    }
  });

  it("is forgotten with its app's or EmailJS account's windows, by every instance", async () => {
    const appId = "forgotten-app";
    await one.apps.create({ appId, domainId: `domain-${appId}`, createdAt: 0, appDir: null, config: {} });
    const key = `ip|${appId}|login|203.0.113.8`;
    for (const store of [one, one, one, two]) await hit(store, key);
    expect(await hit(one, key)).toMatchObject({ statements: 0 });
    expect(await hit(two, key)).toMatchObject({ statements: 0 });
    // Deleted through the first (as the control API's deleteApp: the app, then its windows).
    await one.apps.delete(appId);
    await one.rateLimits.forgetScope(appId);
    await two.caughtUp();
    expect(await hit(one, key)).toMatchObject({ hits: 1, statements: 1 });
    expect(await hit(two, key)).toMatchObject({ hits: 2, statements: 1 });

    const publicKey = "forgotten-public-key";
    await one.emailjs.create({ publicKey } as Parameters<typeof one.emailjs.create>[0]);
    const send = `emailjs|${publicKey}|send`;
    for (const store of [two, two, two]) await hit(store, send);
    expect(await hit(two, send)).toMatchObject({ statements: 0 });
    await one.emailjs.delete(publicKey);
    await one.rateLimits.forgetScope(publicKey);
    await two.caughtUp();
    expect(await hit(two, send)).toMatchObject({ hits: 1, statements: 1 });
  });
});

describe("a flood of logins past the abuse limit, in production", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await testApp({
      production: true,
      databaseUrl: database.url,
      signingSecret: secret,
      controlToken: "shared-limits-control-token",
      authRateLimit: { max: 2, windowMs: 60_000 },
    });
  });
  afterAll(() => app.close());

  it("is refused without a statement once the instance has seen the limit reached", async () => {
    const created = await call(app, "createApp", {
      method: "POST",
      url: "/_mock/v1/apps",
      headers: { authorization: "Bearer shared-limits-control-token" },
      payload: { config: { providers: { "local-userpass": { enabled: true } } } },
    });
    // (Each attempt a new address to guess: the client's address is what stops it.)
    let guesses = 0;
    const login = () =>
      call(app, "login", {
        method: "POST",
        url: `/api/client/v2.0/app/${created.body.appId}/auth/providers/local-userpass/login`,
        payload: { username: `nobody-${++guesses}@example.com`, password: "not-the-password" },
        remoteAddress: "203.0.113.20",
      });
    expect([(await login()).response.statusCode, (await login()).response.statusCode]).toEqual([401, 401]);
    const refused = await login();
    expect(refused.response.statusCode).toBe(429);
    const { texts } = await statementsOf(
      async () => {
        for (let i = 0; i < 10; i++) {
          const again = await login();
          expect(again.response.statusCode).toBe(429);
          expect(Number(again.response.headers["retry-after"])).toBeGreaterThan(0);
        }
      },
      { own: true },
    );
    expect(texts).toEqual([]);
  });
});
