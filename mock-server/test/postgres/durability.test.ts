/**
 * A write is committed before its reply: an instance killed with SIGKILL in the middle of traffic
 * loses nothing it acknowledged, and leaves nothing half done (every update of two fields lands
 * whole or not at all; every registration is whole); and the database triggers of the writes it
 * acknowledged still run, on the next instance (decision 0031).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EmulatorProcess, ensureBuilt, killAll, startEmulatorProcess } from "../helpers/emulator-process.ts";
import { expectFetchContract } from "../helpers/fetch-contract.ts";
import { gatedTriggerConfig } from "../helpers/gated-trigger.ts";
import { adminQuery, emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";
import { until } from "../helpers/until.ts";

const args = (url: string) => [
  "--database",
  url,
  "--signing-secret",
  "durability-test-signing-secret-0123",
  "--password-hash-cost",
  "4",
];
let database: TestDatabase;

beforeAll(async () => {
  await ensureBuilt();
  database = await emulatorDatabase("durability");
}, 60_000);

afterAll(async () => {
  killAll();
  await database?.drop();
});

const base = "/api/client/v2.0";

async function post(on: EmulatorProcess, path: string, body: unknown, token?: string) {
  const response = await fetch(`${on.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: response.status === 200 ? await response.json() : null };
}

describe("an instance killed with SIGKILL in the middle of traffic", () => {
  it("keeps every acknowledged registration, insert and update, and nothing half done", async () => {
    const first = await startEmulatorProcess(args(database.url));
    const appId = "durable-app";
    const created = await fetch(`${first.url}/_mock/v1/apps`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        appId,
        config: {
          providers: { "local-userpass": { autoConfirm: true } },
          rules: { default: { read: true, write: true } },
        },
      }),
    });
    expect(created.status).toBe(201);
    const anon = (await post(first, `${base}/app/${appId}/auth/providers/anon-user/login`, {})).body as {
      access_token: string;
    };
    const action = (name: string, argument: Record<string, unknown>) =>
      post(
        first,
        `${base}/app/${appId}/functions/call`,
        { name, service: "mongodb-atlas", arguments: [{ database: "shop", collection: "counters", ...argument }] },
        anon.access_token,
      );

    const registered: string[] = [];
    /** Per counter document: the last value an acknowledged update set (both fields). */
    const acknowledged = new Map<number, number>();
    let acknowledgements = 0;
    let killed = false;
    const client = async (worker: number) => {
      for (let round = 0; !killed; round++) {
        const email = `w${worker}-r${round}@example.com`;
        const reg = await fetch(`${first.url}${base}/app/${appId}/auth/providers/local-userpass/register`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ email, password: "secret-1" }),
        }).catch(() => null);
        if (reg?.status === 201) {
          registered.push(email);
          acknowledgements++;
        }
        const key = worker * 10_000 + round;
        const inserted = await action("insertOne", { document: { _id: key, a: 0, b: 0 } }).catch(() => null);
        if (inserted?.status !== 200) continue;
        acknowledged.set(key, 0);
        acknowledgements++;
        for (let value = 1; value <= 3 && !killed; value++) {
          const updated = await action("updateOne", {
            query: { _id: key },
            update: { $set: { a: value, b: value } },
          }).catch(() => null);
          if (updated?.status !== 200) break;
          acknowledged.set(key, value);
          acknowledgements++;
        }
      }
    };
    const traffic = Promise.all([0, 1, 2, 3, 4, 5].map(client));
    await until(() => acknowledgements >= 100, "100 acknowledged writes", { timeoutMs: 30_000 });
    first.child.kill("SIGKILL");
    killed = true;
    await first.exited;
    await traffic;
    // What was acknowledged before the kill, now that no reply can arrive any more.
    const emails = [...registered];
    const counters = new Map(acknowledged);

    const second = await startEmulatorProcess(args(database.url));
    try {
      const users = await fetch(`${second.url}/_mock/v1/apps/${appId}/users`);
      const listed = (await expectFetchContract("listUsers", users)) as {
        users: { email?: string; status: string }[];
      };
      const confirmed = new Set(listed.users.filter((u) => u.status !== "pending").map((u) => u.email));
      for (const email of emails) expect(confirmed.has(email), email).toBe(true);
      // A registration acknowledged is one that can log in.
      const login = await post(second, `${base}/app/${appId}/auth/providers/local-userpass/login`, {
        username: emails.at(-1),
        password: "secret-1",
      });
      expect(login.status).toBe(200);

      const found = await fetch(`${second.url}/_mock/v1/apps/${appId}/data/shop/counters?limit=10000`);
      const page = (await expectFetchContract("listDocuments", found)) as {
        documents: { _id: { $numberInt: string }; a: { $numberInt: string }; b: { $numberInt: string } }[];
      };
      const stored = new Map(
        page.documents.map((d) => [Number(d._id.$numberInt), { a: Number(d.a.$numberInt), b: Number(d.b.$numberInt) }]),
      );
      for (const doc of stored.values()) expect(doc.a).toBe(doc.b);
      for (const [key, value] of counters) {
        const doc = stored.get(key);
        expect(doc, `counter ${key}`).toBeDefined();
        // The acknowledged value, or the next one if its update committed while the reply was cut off.
        expect([value, value + 1], `counter ${key}`).toContain(doc!.a);
      }
    } finally {
      await second.stop();
    }
  });

  it("runs the database triggers of the writes it acknowledged, on the next instance", async () => {
    // Leases of a second, so that the next instance claims the killed one's events at once.
    const withTriggers = [...args(database.url), "--allow-function-source", "--trigger-lease", "1"];
    const first = await startEmulatorProcess(withTriggers);
    const appId = "durable-triggers";
    const control = (on: EmulatorProcess, path: string, body?: unknown) =>
      fetch(`${on.url}/_mock/v1${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers: { "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    // The first note's run waits at a gate (helpers/gated-trigger.ts): the kill comes while it is
    // under way and the second's waits behind it.
    const created = await control(first, "/apps", { appId, config: gatedTriggerConfig });
    expect(created.status).toBe(201);
    const anon = (await post(first, `${base}/app/${appId}/auth/providers/anon-user/login`, {})).body as {
      access_token: string;
    };
    for (const document of [{ n: 1, wait: true }, { n: 2 }]) {
      const inserted = await post(
        first,
        `${base}/app/${appId}/functions/call`,
        {
          name: "insertOne",
          service: "mongodb-atlas",
          arguments: [{ database: "app", collection: "notes", document }],
        },
        anon.access_token,
      );
      expect(inserted.status).toBe(200);
    }
    first.child.kill("SIGKILL");
    await first.exited;

    const second = await startEmulatorProcess(withTriggers);
    try {
      expect((await control(second, `/apps/${appId}/data/audit/gate`, { documents: [{}] })).status).toBe(201);
      const runs = async () => {
        const page = (await (await control(second, `/apps/${appId}/data/audit/runs`)).json()) as {
          documents: { n: { $numberInt: string } }[];
        };
        return page.documents.map((d) => Number(d.n.$numberInt)).sort();
      };
      await until(async () => (await runs()).length === 2, "both triggers' runs", { timeoutMs: 20_000 });
      expect(await runs()).toEqual([1, 2]);
      await until(
        async () =>
          (await adminQuery(database.url, "SELECT count(*)::int AS n FROM trigger_events WHERE app_id = $1", [appId]))
            .rows[0].n === 0,
        "the events to be removed once run",
        { timeoutMs: 10_000 },
      );
    } finally {
      await second.stop();
    }
  });
});
