/**
 * PostgreSQL for tests. The globalSetup test/postgres/global-setup.ts starts one throw-away cluster per run
 * and provides its admin URL as `postgresUrl`; each test (file) takes its own database from it with
 * createTestDatabase(). For outage tests (stop the server, bring it back on the same port) start a private
 * cluster with startCluster() instead: never stop the shared one.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import pg from "pg";
import { inject, vi } from "vitest";
import { startCluster } from "../../../scripts/postgres-cluster.mjs";

export type { PostgresCluster, StartClusterOptions } from "../../../scripts/postgres-cluster.mjs";
export { startCluster };

export interface TestDatabase {
  /** The database's name (unique per call). */
  name: string;
  /** Connection URL of the new database, same server and user as the admin URL. */
  url: string;
  /** DROP DATABASE … WITH (FORCE): ends its open sessions first. Safe to call twice. */
  drop(): Promise<void>;
}

/** The admin URL from the globalSetup, or undefined when the run has no PostgreSQL globalSetup. */
export function providedPostgresUrl(): string | undefined {
  return (inject("postgresUrl") as string | undefined) || undefined;
}

/** The admin URL from the globalSetup; throws with what to configure when the run has none. */
export function postgresAdminUrl(): string {
  const url = providedPostgresUrl();
  if (!url) {
    throw new Error(
      "No PostgreSQL server for this test run: add globalSetup: ['test/postgres/global-setup.ts'] to the vitest " +
        "config (the postgres project of vitest.config.ts), or set TEST_DATABASE_URL.",
    );
  }
  return url;
}

/**
 * The admin URL for a test file: the run's shared server when the globalSetup provides one, else a private
 * cluster started here (so the file also runs under a config without the globalSetup). Call in beforeAll and
 * call close() in afterAll.
 */
export async function usePostgres(): Promise<{ adminUrl: string; close(): Promise<void> }> {
  const provided = providedPostgresUrl();
  if (provided) return { adminUrl: provided, close: async () => {} };
  const cluster = await startCluster();
  return { adminUrl: cluster.url, close: () => cluster.stop() };
}

/** The same server and credentials as `adminUrl`, another database. */
export function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${encodeURIComponent(database)}`;
  return url.toString();
}

/** Runs one statement on a short-lived connection. */
export async function adminQuery(adminUrl: string, sql: string, values?: unknown[]): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await client.query(sql, values);
  } finally {
    await client.end();
  }
}

let counter = 0;

/** The database the globalSetup migrates the emulator's schema into, copied by emulatorDatabase(). */
export const templateDatabase = "harness_emulator_template";

/** A fresh database with the emulator's schema in place (a copy of the migrated template). */
export function emulatorDatabase(name = "emulator", adminUrl = postgresAdminUrl()): Promise<TestDatabase> {
  return createTestDatabase(name, adminUrl, templateDatabase);
}

/**
 * Whether the server can copy a template's files as they are (PostgreSQL 15+; older servers always
 * do). The default since 15 writes every block of the template to the WAL: on the test cluster
 * (fsync off) the file copy makes each test's database in less than half the time (245 against
 * 105 ms a database made and dropped, on two cores).
 */
const fileCopy = new Map<string, Promise<boolean>>();
function fileCopySupported(adminUrl: string): Promise<boolean> {
  let supported = fileCopy.get(adminUrl);
  if (!supported) {
    supported = adminQuery(adminUrl, "SHOW server_version_num").then(
      (result) => Number(result.rows[0].server_version_num) >= 150000,
    );
    fileCopy.set(adminUrl, supported);
  }
  return supported;
}

/** A fresh, empty database on the run's server (or on `adminUrl`), or a copy of `template`. */
export async function createTestDatabase(
  name = "test",
  adminUrl = postgresAdminUrl(),
  template?: string,
): Promise<TestDatabase> {
  counter += 1;
  const suffix = `${process.pid}_${counter}_${Math.random().toString(36).slice(2, 8)}`;
  const base = name.toLowerCase().replace(/[^a-z0-9_]+/g, "_");
  const unique = `${base.slice(0, 62 - suffix.length)}_${suffix}`;
  const quoted = `"${unique.replaceAll('"', '""')}"`;
  const strategy = (await fileCopySupported(adminUrl)) ? " STRATEGY FILE_COPY" : "";
  await adminQuery(adminUrl, `CREATE DATABASE ${quoted}${template ? ` TEMPLATE ${template}` : ""}${strategy}`);
  let dropped = false;
  return {
    name: unique,
    url: databaseUrl(adminUrl, unique),
    drop: async () => {
      if (dropped) return;
      dropped = true;
      await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${quoted} WITH (FORCE)`);
    },
  };
}

/** Whether a new connection to `url` gets through (select 1); false while the server is down. */
export async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("select 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** What `statementsOf(…, { own: true })` runs its work in, to tell its statements from the rest. */
const ownWork = new AsyncLocalStorage<object>();

/**
 * The statements the emulator's pool connections send while `work` runs, and in how many round
 * trips: a statement sent while none of the others is waiting for its answer starts one; `trips`
 * gives each statement's (its round trip's number). With `own`, only the statements `work` itself
 * sends (in its asynchronous context): not those of timers that happen to fire meanwhile (a
 * sweep, a renewal).
 */
export async function statementsOf(
  work: () => Promise<unknown>,
  { own = false }: { own?: boolean } = {},
): Promise<{ texts: string[]; roundTrips: number; trips: number[] }> {
  const texts: string[] = [];
  const trips: number[] = [];
  const marker = {};
  let waiting = 0;
  let roundTrips = 0;
  const query = pg.Client.prototype.query;
  vi.spyOn(pg.Client.prototype, "query").mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    const run = (...a: unknown[]) => (query as (...a: unknown[]) => unknown).apply(this, a);
    const name = (this as unknown as { connectionParameters: { application_name?: string } }).connectionParameters
      .application_name;
    if (name !== "app-services-emulator" || (own && ownWork.getStore() !== marker)) return run(...args);
    const config = args[0] as string | { text: string };
    texts.push(typeof config === "string" ? config : config.text);
    if (waiting === 0) roundTrips++;
    trips.push(roundTrips);
    waiting++;
    // (The pool passes a callback; a client's own caller takes the promise.)
    const callback = args.at(-1);
    if (typeof callback === "function")
      return run(...args.slice(0, -1), (...answer: unknown[]) => {
        waiting--;
        return callback(...answer);
      });
    const result = run(...args) as Promise<unknown>;
    result.then(
      () => waiting--,
      () => waiting--,
    );
    return result;
  } as typeof query);
  try {
    await (own ? ownWork.run(marker, work) : work());
  } finally {
    vi.restoreAllMocks();
  }
  return { texts, roundTrips, trips };
}

/**
 * The round trips of a request's own statements but an access token's authentication (its user
 * and session read when this instance's cache has them not, or not fresh enough: a busy host's).
 */
export function tripsBesideAuthentication(found: { texts: string[]; trips: number[] }): number {
  const authentication = /FROM users u\s+LEFT JOIN sessions s/;
  return new Set(found.trips.filter((_, i) => !authentication.test(found.texts[i]!))).size;
}
