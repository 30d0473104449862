/**
 * The `watchers` rows (store/postgres/documents.ts `ChangeHub`): an instance with change streams
 * open on an app keeps one, so that writers announce the app's changes. Each start is a new
 * instance, so the rows of instances that stopped must not stay for good: every write of a watched
 * app reads the app's rows.
 */
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { PgContext } from "../../src/store/postgres/context.ts";
import { Database } from "../../src/store/postgres/database.ts";
import { ChangeHub } from "../../src/store/postgres/documents.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { adminQuery, emulatorDatabase, statementsOf, type TestDatabase } from "../helpers/postgres.ts";

let database: TestDatabase;
beforeAll(async () => {
  database = await emulatorDatabase("watchers");
});
afterAll(() => database?.drop());
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

async function rows(): Promise<{ app_id: string; instance_id: string }[]> {
  const { rows } = await adminQuery(database.url, "SELECT app_id, instance_id FROM watchers ORDER BY 1, 2");
  return rows as { app_id: string; instance_id: string }[];
}

async function appOf(store: PostgresStore, appId: string) {
  await store.apps.upsert({ appId, domainId: `domain-of-${appId}`, createdAt: 0, appDir: null, config: {} });
  return store.apps.scope(appId);
}

describe("watchers of change streams", () => {
  it("are gone when their instance stops, and those of instances that died go at the next stream", async () => {
    const first = await PostgresStore.open({ url: database.url });
    const second = await PostgresStore.open({ url: database.url });
    let firstOpen = true;
    try {
      const stop = await (await appOf(first, "app-a")).data.subscribe(() => undefined);
      await (await appOf(first, "app-b")).data.subscribe(() => undefined);
      expect((await rows()).map((r) => r.app_id)).toEqual(["app-a", "app-b"]);
      stop();
      firstOpen = false;
      await first.close();
      expect(await rows()).toEqual([]);

      // An instance that died: its rows expired long ago.
      await adminQuery(
        database.url,
        `INSERT INTO watchers (app_id, instance_id, expires_at)
         VALUES ('app-a', 'died', now() - interval '1 hour'), ('app-b', 'died', now() - interval '1 hour'),
                ('app-b', 'lagging', now() - interval '1 second')`,
      );
      await (await appOf(second, "app-a")).data.subscribe(() => undefined);
      // (An instance whose renewal is late by less than a lease keeps its row.)
      expect((await rows()).map((r) => `${r.app_id} ${r.instance_id === "lagging" ? "lagging" : "live"}`)).toEqual([
        "app-a live",
        "app-b lagging",
      ]);
    } finally {
      await Promise.all([firstOpen ? first.close() : undefined, second.close()]);
    }
  });
});

describe("a stream's registration as a watcher", () => {
  let instances = 0;
  /** A change hub as an instance has it, on a pool of its own; the renewals it sends, kept. */
  async function withHub(use: (hub: ChangeHub, renewals: Promise<unknown>[]) => Promise<void>): Promise<void> {
    const db = new Database({ url: database.url });
    const hub = new ChangeHub(new PgContext(db, `hub-${++instances}`));
    const renewals: Promise<unknown>[] = [];
    const query = db.query.bind(db);
    vi.spyOn(db, "query").mockImplementation(((text: string, ...rest: []) => {
      const sent = query(text, ...rest);
      if (text.includes("FROM unnest($1::text[]) AS app")) renewals.push(sent);
      return sent;
    }) as typeof db.query);
    try {
      await use(hub, renewals);
    } finally {
      await hub.close();
      await db.close();
    }
  }

  const registers = (texts: string[]) => texts.some((text) => text.includes("INSERT INTO watchers"));

  it("is made by an app's first stream; the next ones open without a statement, not waiting for writes in flight", async () => {
    await withHub(async (hub) => {
      const first = await statementsOf(() => hub.subscribe("app-w", () => undefined));
      expect(registers(first.texts)).toBe(true);
      // A write in flight elsewhere (a transaction with an id, still open): an app's first stream
      // waits for such writes to end; the app's next streams do not need to.
      const writer = new pg.Client({ connectionString: database.url });
      await writer.connect();
      try {
        await writer.query("BEGIN");
        await writer.query("SELECT pg_current_xact_id()");
        const next = await statementsOf(() => hub.subscribe("app-w", () => undefined));
        expect(next).toEqual({ texts: [], roundTrips: 0, trips: [] });
        // Another app's first stream registers its own row.
        const other = await statementsOf(async () => {
          const opened = hub.subscribe("app-other", () => undefined);
          await writer.query("COMMIT");
          await opened;
        });
        expect(registers(other.texts)).toBe(true);
      } finally {
        await writer.end();
      }
    });
  });

  it("is kept known live by renewals, and made again once the row may have lapsed", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval", "performance"] });
    await withHub(async (hub, renewals) => {
      await hub.subscribe("app-r", () => undefined);
      // A renewal (every 10 s) that came back in time extends what is known.
      vi.advanceTimersByTime(10_000);
      await Promise.all(renewals);
      vi.advanceTimersByTime(15_000);
      expect((await statementsOf(() => hub.subscribe("app-r", () => undefined))).roundTrips).toBe(0);
      await Promise.all(renewals);
    });
    await withHub(async (hub, renewals) => {
      await hub.subscribe("app-l", () => undefined);
      // Renewals that came back only after the row's lease (30 s) may have ended: the row may have
      // lapsed, and a write in between not have seen it. The next stream registers again.
      vi.advanceTimersByTime(31_000);
      expect(renewals).toHaveLength(3);
      await Promise.all(renewals);
      expect(registers((await statementsOf(() => hub.subscribe("app-l", () => undefined))).texts)).toBe(true);
    });
    await withHub(async (hub) => {
      // Without renewals (the stream closed, or the database away), what was known runs out.
      const stop = await hub.subscribe("app-q", () => undefined);
      stop();
      vi.advanceTimersByTime(25_000);
      expect(registers((await statementsOf(() => hub.subscribe("app-q", () => undefined))).texts)).toBe(true);
    });
  });
});
