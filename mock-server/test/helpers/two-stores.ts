/**
 * Two PostgreSQL stores (instances) on one new database, for what one instance keeps of the
 * other's changes: opened before a file's tests, closed (and the database dropped) after them.
 */
import { afterAll, beforeAll } from "vitest";
import type { PgContext } from "../../src/store/postgres/context.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { adminQuery, emulatorDatabase, postgresAdminUrl, type TestDatabase } from "./postgres.ts";

export interface TwoStores {
  database: TestDatabase;
  a: PostgresStore;
  b: PostgresStore;
}

/** The stores, filled in by the file's beforeAll. */
export function twoStores(name: string): TwoStores {
  const stores = {} as TwoStores;
  beforeAll(async () => {
    stores.database = await emulatorDatabase(name);
    [stores.a, stores.b] = await Promise.all([
      PostgresStore.open({ url: stores.database.url }),
      PostgresStore.open({ url: stores.database.url }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([stores.a?.close(), stores.b?.close()]);
    await stores.database?.drop();
  });
  return stores;
}

/** A store's shared parts (its notifications' listener, what it keeps). */
export const contextOf = (store: PostgresStore) => (store as unknown as { context: PgContext }).context;

/** The server processes of the listening connections of the stores on a database. */
export async function listenerProcesses(database: TestDatabase): Promise<number[]> {
  const { rows } = await adminQuery(
    postgresAdminUrl(),
    "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = 'app-services-emulator-listener'",
    [database.name],
  );
  return rows.map((r) => Number(r.pid));
}
