/**
 * Instances starting together on one database each upsert their configured app (`--app`, the default
 * app): the upserts race, and every one of them must succeed — exactly one creates the app, the others
 * update it — instead of one failing on a unique index the conflict clause does not cover.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultOptions } from "../../src/config/options.ts";
import { Emulator } from "../../src/runtime/emulator.ts";
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
            config: { name: `written by store ${i}` },
          }),
        ),
      );
      expect(outcomes.filter((o) => o === "created")).toHaveLength(1);
      expect(outcomes.filter((o) => o === "updated")).toHaveLength(stores.length - 1);
      expect(await stores[0]!.apps.get(appId)).toMatchObject({ appId, domainId: `domain-of-${appId}` });
    }
  });

  it("keeps the default app's generated custom-token key across restarts and instances starting together", async () => {
    const keys = await emulatorDatabase("app-upsert-keys");
    const open = async () =>
      Emulator.open(
        {
          ...defaultOptions(),
          logLevel: "silent",
          watchFunctions: false,
          signingSecret: "a-test-signing-secret-of-32-chars",
        },
        await PostgresStore.open({ url: keys.url }),
      );
    const keyOf = async (emulator: Emulator) =>
      (await emulator.apps.get("local-app"))!.config.providers!["custom-token"]!.signingKey;
    try {
      const first = await open();
      const key = await keyOf(first);
      await first.close();
      expect(key).toMatch(/^[0-9a-f]{64}$/);
      const again = await Promise.all([open(), open(), open()]);
      for (const emulator of again) expect(await keyOf(emulator)).toBe(key);
      await Promise.all(again.map((e) => e.close()));
    } finally {
      await keys.drop();
    }
  });
});
