/**
 * Database triggers run at least once (decision 0031): on PostgreSQL a write keeps the events its
 * app's triggers take, in its own transaction, leased to its instance; the instance removes each
 * once run, renews the leases of those it still holds, and an instance that stops leaves the rest
 * to another, which claims them once their leases run out and runs them.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, call, mongoAction, newApp, testApp } from "../helpers/app.ts";
import { gatedTriggerConfig } from "../helpers/gated-trigger.ts";
import { adminQuery, emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";

let database: TestDatabase;
const open: FastifyInstance[] = [];

beforeAll(async () => {
  database = await emulatorDatabase("trigger-events");
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((app) => app.close()));
});
afterAll(() => database?.drop());

const secret = "trigger-events-test-signing-secret";
const metricsToken = "trigger-events-test-metrics-token";
async function instance(options: Record<string, unknown> = {}): Promise<FastifyInstance> {
  const app = await testApp({
    databaseUrl: database.url,
    signingSecret: secret,
    allowFunctionSource: true,
    ...options,
  });
  open.push(app);
  return app;
}

async function triggeredApp(app: FastifyInstance): Promise<{ appId: string; token: string }> {
  const appId = await newApp(app, gatedTriggerConfig);
  return { appId, token: (await anonymousLogin(app, appId)).access_token };
}

const notes = { database: "app", collection: "notes" };

async function runs(app: FastifyInstance, appId: string): Promise<number[]> {
  const { body } = await call(app, "listDocuments", {
    method: "GET",
    url: `/_mock/v1/apps/${appId}/data/audit/runs?sort=${encodeURIComponent(JSON.stringify({ _id: 1 }))}`,
  });
  return (body.documents as { n: { $numberInt: string } }[]).map((d) => Number(d.n.$numberInt));
}

async function keptEvents(appId: string): Promise<number> {
  const { rows } = await adminQuery(database.url, "SELECT count(*)::int AS n FROM trigger_events WHERE app_id = $1", [
    appId,
  ]);
  return rows[0].n as number;
}

const note = (n: number, wait = false) => ({ n: { $numberInt: String(n) }, ...(wait ? { wait: true } : {}) });

describe("database trigger events kept with their writes", () => {
  it("are kept while their triggers run and removed once run; a write no trigger takes keeps none", async () => {
    const app = await instance();
    const { appId, token } = await triggeredApp(app);
    await mongoAction(app, appId, token, "insertOne", { ...notes, document: note(1, true) });
    await mongoAction(app, appId, token, "insertMany", { ...notes, documents: [note(2), note(3)] });
    await mongoAction(app, appId, token, "insertOne", { database: "app", collection: "other", document: note(9) });
    // The first run waits at the gate: its event and the two behind it are kept meanwhile.
    expect(await keptEvents(appId)).toBe(3);
    await mongoAction(app, appId, token, "insertOne", { database: "audit", collection: "gate", document: {} });
    await expect.poll(() => runs(app, appId)).toEqual([1, 2, 3]);
    await expect.poll(() => keptEvents(appId)).toBe(0);
  });

  it("left by an instance that stopped are run by another once their leases run out", async () => {
    // The first stops without waiting for its trigger runs (a drain of 0): as if it had died.
    const first = await instance({ drainMs: 0, triggerLeaseMs: 1000 });
    const { appId, token } = await triggeredApp(first);
    await mongoAction(first, appId, token, "insertOne", { ...notes, document: note(1, true) });
    await mongoAction(first, appId, token, "insertOne", { ...notes, document: note(2) });
    expect(await keptEvents(appId)).toBe(2);
    await first.close();
    open.splice(open.indexOf(first), 1);
    // Neither ran there; both are still kept, leased to the instance that stopped.
    expect(await keptEvents(appId)).toBe(2);

    const second = await instance({ metricsToken, triggerLeaseMs: 1000 });
    await mongoAction(second, appId, token, "insertOne", { database: "audit", collection: "gate", document: {} });
    await expect.poll(() => runs(second, appId), { timeout: 10_000 }).toEqual([1, 2]);
    await expect.poll(() => keptEvents(appId)).toBe(0);
    const { body: metrics } = await call(second, "getMetrics", {
      method: "GET",
      url: "/_mock/v1/metrics",
      headers: { authorization: `Bearer ${metricsToken}` },
    });
    expect(metrics).toMatch(/^appservices_trigger_events_claimed_total 2$/m);
    expect(metrics).toMatch(/^appservices_trigger_events_held 0$/m);
  });

  it("left by an instance that stopped run in its order, though a later one's lease ran out first", async () => {
    // (A write commits its event before the instance knows to renew it: the lease of a later event
    // can end before that of an earlier one, renewed just before the instance stopped.)
    const first = await instance({ drainMs: 0 });
    const { appId, token } = await triggeredApp(first);
    await mongoAction(first, appId, token, "insertOne", { ...notes, document: note(1, true) });
    await mongoAction(first, appId, token, "insertOne", { ...notes, document: note(2) });
    await first.close();
    open.splice(open.indexOf(first), 1);
    const lease = (when: string, order: "min" | "max") =>
      adminQuery(
        database.url,
        `UPDATE trigger_events SET lease_until = ${when}
          WHERE id = (SELECT ${order}(id) FROM trigger_events WHERE app_id = $1)`,
        [appId],
      );
    await lease("now() + interval '1 hour'", "min");
    await lease("now() - interval '1 second'", "max");

    const second = await instance();
    await mongoAction(second, appId, token, "insertOne", { database: "audit", collection: "gate", document: {} });
    const recovery = second.emulator.triggerRecovery!;
    await recovery.sweep();
    // The second waits for the first: its predecessor is still leased to the instance that stopped.
    expect(recovery.claimed).toBe(0);
    await lease("now() - interval '1 second'", "min");
    await recovery.sweep();
    expect(recovery.claimed).toBe(2);
    await expect.poll(() => runs(second, appId), { timeout: 10_000 }).toEqual([1, 2]);
    await expect.poll(() => keptEvents(appId)).toBe(0);
  });

  it("of an app that is reset are gone with its data", async () => {
    // Left by an instance that stopped (no run of its own would remove them).
    const first = await instance({ drainMs: 0 });
    const { appId, token } = await triggeredApp(first);
    await mongoAction(first, appId, token, "insertOne", { ...notes, document: note(1, true) });
    await first.close();
    open.splice(open.indexOf(first), 1);
    expect(await keptEvents(appId)).toBe(1);
    const second = await instance();
    const reset = await call(second, "resetApp", { method: "POST", url: `/_mock/v1/apps/${appId}/reset` });
    expect(reset.response.statusCode).toBe(204);
    expect(await keptEvents(appId)).toBe(0);
  });

  it("held longer than a lease by a live instance are not run again by another", async () => {
    const lease = 300;
    const first = await instance({ triggerLeaseMs: lease });
    const second = await instance({ triggerLeaseMs: lease });
    const { appId, token } = await triggeredApp(first);
    // The other instance sweeps meanwhile, and knows the app.
    await mongoAction(second, appId, token, "find", { ...notes, query: {} });
    await mongoAction(first, appId, token, "insertOne", { ...notes, document: note(1, true) });
    await mongoAction(first, appId, token, "insertMany", { ...notes, documents: [note(2), note(3)] });
    // Held past two leases, each renewed by its instance; the other's sweep then claims none.
    const leaseEnds = async () => {
      const { rows } = await adminQuery(
        database.url,
        "SELECT (extract(epoch FROM min(lease_until)) * 1000)::float8 AS at FROM trigger_events WHERE app_id = $1",
        [appId],
      );
      return rows[0].at as number;
    };
    const firstLease = await leaseEnds();
    await expect
      .poll(async () => (await leaseEnds()) - firstLease, { timeout: 10_000, interval: 20 })
      .toBeGreaterThan(2 * lease);
    await second.emulator.triggerRecovery!.sweep();
    expect(await keptEvents(appId)).toBe(3);
    expect(await runs(first, appId)).toEqual([]);
    await mongoAction(first, appId, token, "insertOne", { database: "audit", collection: "gate", document: {} });
    await expect.poll(() => runs(first, appId)).toEqual([1, 2, 3]);
    await expect.poll(() => keptEvents(appId)).toBe(0);
    expect(await runs(first, appId)).toEqual([1, 2, 3]);
  });

  describe("of authentication triggers", () => {
    // A new user's profile, made once the gate is open.
    const profile = `exports = async (event) => {
      const audit = context.services.get("mongodb-atlas").db("audit");
      while (!(await audit.collection("gate").findOne({}))) {}
      await audit.collection("profiles").insertOne({ user: event.user.id, op: event.operationType });
    };`;

    async function authApp(app: FastifyInstance): Promise<string> {
      return newApp(app, {
        functions: { profile: { source: profile, private: true } },
        triggers: [
          {
            type: "AUTHENTICATION",
            name: "new users",
            functionName: "profile",
            operationType: "CREATE",
            providers: ["anon-user"],
          },
        ],
      });
    }

    const openGate = (app: FastifyInstance, appId: string) =>
      call(app, "insertDocuments", {
        method: "POST",
        url: `/_mock/v1/apps/${appId}/data/audit/gate`,
        payload: { documents: [{}] },
      });

    async function profiles(app: FastifyInstance, appId: string): Promise<unknown[]> {
      const { body } = await call(app, "listDocuments", {
        method: "GET",
        url: `/_mock/v1/apps/${appId}/data/audit/profiles`,
      });
      return (body.documents as { user: string; op: string }[]).map(({ user, op }) => ({ user, op }));
    }

    it("are kept while they run and removed once run", async () => {
      const app = await instance();
      const appId = await authApp(app);
      const user = await anonymousLogin(app, appId);
      await expect.poll(() => keptEvents(appId)).toBe(1);
      await openGate(app, appId);
      await expect.poll(() => profiles(app, appId)).toEqual([{ user: user.user_id, op: "CREATE" }]);
      await expect.poll(() => keptEvents(appId)).toBe(0);
    });

    it("left by an instance that stopped are run by another", async () => {
      const first = await instance({ drainMs: 0, triggerLeaseMs: 1000 });
      const appId = await authApp(first);
      const user = await anonymousLogin(first, appId);
      await expect.poll(() => keptEvents(appId)).toBe(1);
      await first.close();
      open.splice(open.indexOf(first), 1);
      expect(await keptEvents(appId)).toBe(1);

      const second = await instance({ triggerLeaseMs: 1000 });
      await openGate(second, appId);
      await expect
        .poll(() => profiles(second, appId), { timeout: 10_000 })
        .toEqual([{ user: user.user_id, op: "CREATE" }]);
      await expect.poll(() => keptEvents(appId)).toBe(0);
    });
  });
});
