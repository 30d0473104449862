/**
 * Retention in the database (docs/decisions/0030-retention.md): mail whose delivery ended goes
 * after its period, mail still queued for delivery never; confirmation and reset tokens go a grace
 * period after they expire (until then a used or expired link keeps its answer); sessions go when
 * they expire, their users' counts kept. Sweeps run in bounded batches, several instances at once.
 * The sweeps' clock is the test's (`retentionSweeps.now`): no waiting.
 */
import type { FastifyInstance } from "fastify";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { defaultRetention } from "../../src/config/retention.ts";
import { sweepStatements } from "../../src/store/postgres/retention.ts";
import type { NewMail } from "../../src/store/store.ts";
import { anonymousLogin, base, bearer, call, emailUser, getProfile, newApp, testApp } from "../helpers/app.ts";
import { adminQuery, emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";

const minute = 60_000;
const day = 24 * 60 * minute;

const apps: FastifyInstance[] = [];
const databases: TestDatabase[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
  for (const db of databases.splice(0)) await db.drop();
});

/** The sweeps' clock runs `shift.ms` ahead of real time. */
const shift = { ms: 0 };

async function emulator(database?: TestDatabase, batch = 1000, options: Parameters<typeof testApp>[0] = {}) {
  const db = database ?? (await emulatorDatabase("retention"));
  if (!database) databases.push(db);
  const app = await testApp({
    databaseUrl: db.url,
    signingSecret: "retention-test-signing-secret-0123456789",
    retentionSweeps: { everyMs: 2_000_000_000, batch, now: () => Date.now() + shift.ms },
    ...options,
  });
  apps.push(app);
  // (The account of the messages this file keeps: mail is kept only while its account is there.)
  if (!database) await app.emulator.emailjs.create({ publicKey: "retention-account" });
  return { app, db, sweep: () => app.emulator.retention!.sweep(), removed: app.emulator.retention!.removed };
}

/** The metrics of an emulator started with `metricsToken: "retention-metrics-token"`. */
const metricsOf = async (app: FastifyInstance) =>
  (
    await call(app, "getMetrics", {
      method: "GET",
      url: "/_mock/v1/metrics",
      headers: bearer("retention-metrics-token"),
    })
  ).body as string;

const mail = (to: string): NewMail => ({
  source: "emailjs",
  account: "retention-account",
  kind: "emailjs",
  to,
  from: "app@example.com",
  subject: "Hello",
  text: "Hello",
  html: "<p>Hello</p>",
  createdAtMs: Date.now(),
});

const listed = async (app: FastifyInstance) =>
  (
    (await call(app, "listMail", { method: "GET", url: "/_mock/v1/mail?account=retention-account" })).body.messages as {
      to: string;
    }[]
  ).map((m) => m.to);

describe("mail", () => {
  it("goes its period after its delivery ended; queued mail stays however old", async () => {
    shift.ms = 0;
    const { app, sweep, removed } = await emulator();
    const outbox = app.emulator.store.mail;
    await outbox.add(mail("captured@example.com"), false);
    // Queued for two periods (a long SMTP outage).
    await outbox.add({ ...mail("queued@example.com"), createdAtMs: Date.now() - 2 * defaultRetention.mailMs }, true);
    const sent = (await outbox.add(mail("sent@example.com"), true))!;
    await outbox.setDelivery(sent.id, {
      state: "sent",
      attempts: 1,
      sentAt: new Date().toISOString(),
      response: "250",
    });

    shift.ms = defaultRetention.mailMs - minute;
    await sweep();
    expect(await listed(app)).toEqual(["captured@example.com", "queued@example.com", "sent@example.com"]);

    shift.ms = defaultRetention.mailMs + minute;
    await sweep();
    expect(await listed(app)).toEqual(["queued@example.com"]);
    expect(removed.mail).toBe(2);
  });

  it("delivered after a long outage, is kept its period from its delivery", async () => {
    shift.ms = 0;
    const { app, sweep } = await emulator();
    const outbox = app.emulator.store.mail;
    const old = Date.now() - 2 * defaultRetention.mailMs;
    const queued = (await outbox.add({ ...mail("queued@example.com"), createdAtMs: old }, true))!;
    await sweep();
    expect(await listed(app)).toEqual(["queued@example.com"]);
    // Its delivery ends now (finally refused).
    await outbox.setDelivery(queued.id, { state: "failed", attempts: 9, refusals: 5, lastError: "550 no" });
    await sweep();
    shift.ms = defaultRetention.mailMs - minute;
    await sweep();
    expect(await listed(app)).toEqual(["queued@example.com"]);
    shift.ms = defaultRetention.mailMs + minute;
    await sweep();
    expect(await listed(app)).toEqual([]);
  });

  it("is swept in batches by several instances at once, each message once", async () => {
    shift.ms = 0;
    const one = await emulator(undefined, 4);
    const two = await emulator(one.db, 4);
    for (let i = 0; i < 25; i++) await one.app.emulator.store.mail.add(mail(`m${i}@example.com`), false);
    shift.ms = defaultRetention.mailMs + minute;
    await Promise.all([one.sweep(), two.sweep()]);
    expect(await listed(one.app)).toEqual([]);
    expect(one.removed.mail + two.removed.mail).toBe(25);
  });
});

describe("confirmation and reset tokens", () => {
  const userpass = (appId: string, path: string) => `${base}/app/${appId}/auth/providers/local-userpass/${path}`;
  const register = (app: FastifyInstance, appId: string, email: string) =>
    call(app, "registerUser", {
      method: "POST",
      url: userpass(appId, "register"),
      payload: { email, password: "correct horse" },
    });
  const tokenOf = async (app: FastifyInstance, appId: string, email: string) =>
    (
      await call(app, "listAuthTokens", {
        method: "GET",
        url: `/_mock/v1/apps/${appId}/auth/tokens?email=${encodeURIComponent(email)}`,
      })
    ).body.tokens[0] as { token: string; tokenId: string } | undefined;
  const confirm = (app: FastifyInstance, appId: string, token: { token: string; tokenId: string }) =>
    call(app, "confirmUser", { method: "POST", url: userpass(appId, "confirm"), payload: token });

  it("keep a used or expired link's answer through the grace period, then go", async () => {
    shift.ms = 0;
    const { app, sweep, removed } = await emulator();
    const appId = await newApp(app);
    expect((await register(app, appId, "used@example.com")).response.statusCode).toBe(201);
    expect((await register(app, appId, "late@example.com")).response.statusCode).toBe(201);
    const used = (await tokenOf(app, appId, "used@example.com"))!;
    const late = (await tokenOf(app, appId, "late@example.com"))!;
    expect((await confirm(app, appId, used)).response.statusCode).toBe(200);
    await call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 31 * 60 },
    });

    // Expired and used, within the grace period: kept, and answered as such.
    shift.ms = 30 * minute + defaultRetention.tokensMs - minute;
    await sweep();
    expect(removed.tokens).toBe(0);
    for (const token of [used, late])
      expect((await confirm(app, appId, token)).body).toMatchObject({ error_code: "UserpassTokenInvalid" });

    // Past it: gone, answered as unknown links.
    shift.ms = 30 * minute + defaultRetention.tokensMs + minute;
    await sweep();
    expect(removed.tokens).toBe(2);
    expect(await tokenOf(app, appId, "used@example.com")).toBeUndefined();
    for (const token of [used, late])
      expect((await confirm(app, appId, token)).body).toMatchObject({ error: "invalid token data" });
  });
});

describe("sessions", () => {
  it("go when they expire, their users' counts kept", async () => {
    shift.ms = 0;
    const { app, db, sweep, removed } = await emulator();
    const appId = await newApp(app, { tokens: { refreshTokenTtlSeconds: 3600 } });
    await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email: "ada@example.com", password: "correct horse" },
    });
    const login = async () =>
      (
        await call(app, "login", {
          method: "POST",
          url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
          payload: { username: "ada@example.com", password: "correct horse" },
        })
      ).body as { refresh_token: string; user_id: string };
    const first = await login();
    await login();
    const sessionRows = async () =>
      (
        await adminQuery(
          db.url,
          "SELECT u.session_count AS n, (SELECT count(*)::int FROM sessions s WHERE s.app_id = u.app_id AND s.user_id = u.id) AS rows FROM users u WHERE app_id = $1 AND id = $2",
          [appId, first.user_id],
        )
      ).rows[0] as { n: number; rows: number };
    expect(await sessionRows()).toEqual({ n: 2, rows: 2 });

    shift.ms = 3600_000 - minute;
    await sweep();
    expect(await sessionRows()).toEqual({ n: 2, rows: 2 });

    shift.ms = 3600_000 + minute;
    await sweep();
    expect(removed.sessions).toBe(2);
    expect(await sessionRows()).toEqual({ n: 0, rows: 0 });
    // The refresh token answers as one past its lifetime did.
    const refreshed = await call(app, "refreshAccessToken", {
      method: "POST",
      url: `${base}/auth/session`,
      headers: bearer(first.refresh_token),
    });
    expect(refreshed.response.statusCode).toBe(401);
    expect(refreshed.body.error).toBe("invalid session: failed to find refresh token");
    // A new login counts from zero.
    await login();
    expect(await sessionRows()).toEqual({ n: 1, rows: 1 });
  });
});

describe("anonymous users", () => {
  it("go 90 days after their creation with their sessions and identities; the others stay", async () => {
    shift.ms = 0;
    const { app, db, sweep, removed } = await emulator(undefined, 1000, { metricsToken: "retention-metrics-token" });
    const { app: other } = await emulator(db);
    const appId = await newApp(app, {
      providers: { "local-userpass": { autoConfirm: true } },
      tokens: { refreshTokenTtlSeconds: 180 * 24 * 3600 },
    });
    const old = await anonymousLogin(app, appId);
    const linked = await anonymousLogin(app, appId);
    await call(app, "registerUser", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/register`,
      payload: { email: "linked@example.com", password: "secret-1" },
    });
    await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/login?link=true`,
      headers: bearer(linked.access_token),
      payload: { username: "linked@example.com", password: "secret-1" },
    });
    const ada = await emailUser(app, appId, "ada@example.com", "secret-1");
    // A day younger (created by the app's clock, a day ahead).
    await call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 24 * 3600 },
    });
    const young = await anonymousLogin(app, appId);
    // The other instance keeps the old user and its session (its clock is real time: not 90 days yet).
    expect((await getProfile(other, old.access_token)).response.statusCode).toBe(200);

    const rowsOf = async (userId: string) =>
      (
        await adminQuery(
          db.url,
          `SELECT (SELECT count(*)::int FROM users WHERE app_id = $1 AND id = $2) AS users,
                  (SELECT count(*)::int FROM identities WHERE app_id = $1 AND user_id = $2) AS identities,
                  (SELECT count(*)::int FROM sessions WHERE app_id = $1 AND user_id = $2) AS sessions`,
          [appId, userId],
        )
      ).rows[0] as { users: number; identities: number; sessions: number };
    const counted = async () =>
      Number(
        (await adminQuery(db.url, "SELECT sum(users) AS n FROM app_usage_counts WHERE app_id = $1", [appId])).rows[0].n,
      );
    expect(await rowsOf(old.user_id)).toEqual({ users: 1, identities: 1, sessions: 1 });
    expect(await counted()).toBe(4);

    shift.ms = 90 * day - minute;
    await sweep();
    expect(removed.anonymous_users).toBe(0);

    shift.ms = 90 * day + minute;
    await sweep();
    expect(removed.anonymous_users).toBe(1);
    expect(await rowsOf(old.user_id)).toEqual({ users: 0, identities: 0, sessions: 0 });
    for (const user of [linked, ada, young]) expect((await rowsOf(user.user_id)).users).toBe(1);
    expect(await rowsOf(linked.user_id)).toEqual({ users: 1, identities: 2, sessions: 1 });
    expect(await counted()).toBe(3);
    // Every instance forgets it: the other one answers as for a deleted user.
    await expect
      .poll(async () => (await getProfile(other, old.access_token)).body.error)
      .toBe("invalid session: user not found");
    expect((await getProfile(other, young.access_token)).response.statusCode).toBe(200);

    const metrics = await metricsOf(app);
    expect(metrics).toContain('appservices_retention_removed_total{kind="anonymous_users"} 1\n');
  });

  it("are swept in batches by several instances at once, each user once", async () => {
    shift.ms = 0;
    const one = await emulator(undefined, 4);
    const two = await emulator(one.db, 4);
    const appId = await newApp(one.app);
    for (let i = 0; i < 10; i++) await anonymousLogin(one.app, appId);
    shift.ms = 90 * day + minute;
    await Promise.all([one.sweep(), two.sweep()]);
    expect(one.removed.anonymous_users + two.removed.anonymous_users).toBe(10);
    const left = await adminQuery(one.db.url, "SELECT count(*)::int AS n FROM users WHERE app_id = $1", [appId]);
    expect(left.rows[0].n).toBe(0);
  });
});

describe("the periods", () => {
  it("are the options', and what was removed is counted in the metrics", async () => {
    shift.ms = 0;
    const db = await emulatorDatabase("retention");
    databases.push(db);
    const app = await testApp({
      databaseUrl: db.url,
      signingSecret: "retention-test-signing-secret-0123456789",
      retention: { mailMs: day },
      metricsToken: "retention-metrics-token",
      retentionSweeps: { everyMs: 2_000_000_000, now: () => Date.now() + shift.ms },
    });
    apps.push(app);
    await app.emulator.emailjs.create({ publicKey: "retention-account" });
    await app.emulator.store.mail.add(mail("a@example.com"), false);
    shift.ms = day + minute;
    await app.emulator.retention!.sweep();
    expect(await listed(app)).toEqual([]);
    const metrics = await metricsOf(app);
    expect(metrics).toContain('appservices_retention_removed_total{kind="mail"} 1\n');
    expect(metrics).toContain('appservices_retention_removed_total{kind="tokens"} 0\n');
  });
});

describe("a batch", () => {
  it("reads the oldest rows by their index, without sorting or reading the table", async () => {
    const db = await emulatorDatabase("retention");
    databases.push(db);
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      // A year of traffic, nearly all of it still in its period: the batch must not read it all.
      await client.query(
        `INSERT INTO mail (source, kind, recipients, created_at, delivery_state, next_attempt_at, doc, done_at)
         SELECT 'emailjs', 'emailjs', '{}', n, 'sent', 0, '{}', n FROM generate_series(1, 20000) AS n`,
      );
      await client.query("INSERT INTO apps (app_id, domain_id, created_at, config) VALUES ('a', 'd', 0, '{}')");
      await client.query(
        `INSERT INTO auth_tokens (app_id, token_id, email_key, kind, used, expires_at, doc)
         SELECT 'a', 't' || n, 'e' || n, 'confirm', false, n, '{}' FROM generate_series(1, 20000) AS n`,
      );
      // A year of users who signed up, and a few anonymous ones.
      await client.query(
        `INSERT INTO users (app_id, id, doc)
         SELECT 'a', 'u' || n, jsonb_build_object('createdAt', n, 'identities',
                  jsonb_build_array(jsonb_build_object('id', 'i' || n,
                    'provider_type', CASE WHEN n % 100 = 0 THEN 'anon-user' ELSE 'local-userpass' END)))
           FROM generate_series(1, 20000) AS n`,
      );
      await client.query("ANALYZE mail; ANALYZE auth_tokens; ANALYZE users");
      for (const [kind, index] of [
        ["mail", "mail_done"],
        ["tokens", "auth_tokens_by_expiry"],
      ] as const) {
        const plan = (await client.query(`EXPLAIN ${sweepStatements[kind]}`, [100, 1000])).rows
          .map((r) => r["QUERY PLAN"] as string)
          .join("\n");
        expect(plan).toContain(`Index Scan using ${index}`);
        expect(plan).not.toMatch(/Sort/);
      }
      const plan = (
        await client.query(`EXPLAIN ${sweepStatements.anonymousUsers}`, [100, 1000, "s", "u", "instance"])
      ).rows
        .map((r) => r["QUERY PLAN"] as string)
        .join("\n");
      expect(plan).toContain("Index Scan using anonymous_users_by_creation");
      expect(plan).not.toMatch(/Sort/);
    } finally {
      await client.end();
    }
  });
});
