/**
 * Instances starting together on one database each upsert their configured app (`--app`, the default
 * app): the upserts race, and every one of them must succeed — exactly one creates the app, the others
 * update it — instead of one failing on a unique index the conflict clause does not cover.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";

let database: TestDatabase;
let stores: PostgresStore[];

beforeAll(async () => {
  database = await emulatorDatabase("app-upsert");
  stores = await Promise.all(Array.from({ length: 8 }, () => PostgresStore.open({ url: database.url })));
});

afterAll(async () => {
  await Promise.all((stores ?? []).map((s) => s.close()));
  await database?.drop();
});

describe("app upsert on several instances", () => {
  it("lets every racing upsert of a new app succeed, one of them creating it", async () => {
    for (let round = 0; round < 200; round++) {
      const appId = `racing-app-${round}`;
      const outcomes = await Promise.all(
        stores.map((store, i) =>
          store.apps.upsert({
            appId,
            domainId: `domain-of-${appId}`,
            createdAt: round,
            appDir: null,
            config: { name: `instance ${i}` },
          }),
        ),
      );
      expect(outcomes.filter((o) => o === "created")).toHaveLength(1);
      expect(outcomes.filter((o) => o === "updated")).toHaveLength(stores.length - 1);
      expect(await stores[0]!.apps.get(appId)).toMatchObject({ appId, domainId: `domain-of-${appId}` });
    }
  });
});
