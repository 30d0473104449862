/**
 * The `watchers` rows (store/postgres/documents.ts `ChangeHub`): an instance with change streams
 * open on an app keeps one, so that writers announce the app's changes. Each start is a new
 * instance, so the rows of instances that stopped must not stay for good: every write of a watched
 * app reads the app's rows.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { adminQuery, emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";

let database: TestDatabase;
beforeAll(async () => {
  database = await emulatorDatabase("watchers");
});
afterAll(() => database?.drop());

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
