/**
 * The PostgreSQL test harness itself: databases on the run's shared server are isolated from each other, and
 * a private cluster can be taken away and brought back on the same port with its data.
 * Runs in the postgres project of vitest.config.ts (its globalSetup starts the cluster).
 */
import { existsSync, statfsSync } from "node:fs";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  canConnect,
  createTestDatabase,
  type PostgresCluster,
  startCluster,
  usePostgres,
} from "../helpers/postgres.ts";
import { until } from "../helpers/until.ts";

async function withClient<T>(url: string, body: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await body(client);
  } finally {
    await client.end();
  }
}

const tableExists = (client: pg.Client, table: string) =>
  client.query("select to_regclass($1) is not null as present", [table]).then((r) => r.rows[0].present as boolean);

describe("test databases on the shared server", () => {
  let adminUrl: string;
  let close: () => Promise<void> = async () => {};
  beforeAll(async () => {
    ({ adminUrl, close } = await usePostgres());
  });
  afterAll(() => close());

  it("creates isolated databases and drops them", async () => {
    const one = await createTestDatabase("isolation one", adminUrl);
    const two = await createTestDatabase("isolation two", adminUrl);
    try {
      expect(one.name).not.toBe(two.name);
      expect(one.url).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\//);
      await withClient(one.url, async (client) => {
        expect((await client.query("select 1 as one")).rows).toEqual([{ one: 1 }]);
        expect((await client.query("select current_database() as db")).rows[0].db).toBe(one.name);
        await client.query("create table widgets (id int primary key)");
        expect(await tableExists(client, "widgets")).toBe(true);
      });
      await withClient(two.url, async (client) => {
        expect((await client.query("select 1 as one")).rows).toEqual([{ one: 1 }]);
        expect(await tableExists(client, "widgets")).toBe(false);
      });
    } finally {
      await one.drop();
      await two.drop();
    }
    // Gone from the server; a second drop() is a no-op.
    await withClient(adminUrl, async (client) => {
      const { rows } = await client.query("select datname from pg_database where datname = any($1)", [
        [one.name, two.name],
      ]);
      expect(rows).toEqual([]);
    });
    await one.drop();
  });

  it("drops a database that still has open sessions", async () => {
    const db = await createTestDatabase("busy", adminUrl);
    const client = new pg.Client({ connectionString: db.url });
    client.on("error", () => {}); // the forced drop ends this session
    await client.connect();
    await db.drop();
    await expect(client.query("select 1")).rejects.toThrow();
    await client.end().catch(() => {});
  });
});

describe("a private cluster that goes away and comes back", () => {
  let cluster: PostgresCluster | undefined;
  afterAll(() => cluster?.stop());

  it("keeps its port and its data across stop({ keepData: true }) and start()", async () => {
    cluster = await startCluster();
    const { url, port, dataDir } = cluster;
    await withClient(url, async (client) => {
      await client.query("create table survivors (note text)");
      await client.query("insert into survivors values ('before the outage')");
    });

    // A session open across the outage is cut; new connections are refused while it is down.
    const open = new pg.Client({ connectionString: url });
    const openErrors: Error[] = [];
    open.on("error", (error) => openErrors.push(error));
    await open.connect();

    await cluster.stop({ keepData: true });
    expect(cluster.isRunning()).toBe(false);
    expect(cluster.pid()).toBeNull();
    expect(await canConnect(url)).toBe(false);
    await until(
      () =>
        openErrors.length > 0 ||
        open.query("select 1").then(
          () => false,
          () => true,
        ),
      "the open session to fail",
    );
    await open.end().catch(() => {});

    await cluster.start();
    expect(cluster.isRunning()).toBe(true);
    expect(cluster.port).toBe(port);
    expect(cluster.dataDir).toBe(dataDir);
    await until(() => canConnect(url), "the server to accept connections again", { timeoutMs: 10_000, everyMs: 20 });
    const rows = await withClient(url, (client) => client.query("select note from survivors").then((r) => r.rows));
    expect(rows).toEqual([{ note: "before the outage" }]);

    // restart() does both in one call.
    const before = cluster.pid();
    await cluster.restart();
    expect(cluster.pid()).not.toBe(before);
    expect(await canConnect(url)).toBe(true);

    await cluster.stop();
    expect(cluster.isRunning()).toBe(false);
    await expect(cluster.start()).rejects.toThrow(/removed/);
  });
});

describe("a cluster kept in memory (inMemory)", () => {
  /** /dev/shm with 1 GiB free, as startCluster asks for; null where there is none. */
  function roomyMemoryFolder(): string | null {
    try {
      const fs = statfsSync("/dev/shm");
      return fs.bavail * fs.bsize >= 1024 ** 3 ? "/dev/shm" : null;
    } catch {
      return null;
    }
  }

  it("lives in /dev/shm when it has room (else in the temporary folder) and leaves nothing when stopped", async () => {
    const cluster = await startCluster({ inMemory: true });
    try {
      const memory = roomyMemoryFolder();
      expect(cluster.rootDir.startsWith(`${memory ?? "/dev/shm"}/`), cluster.rootDir).toBe(memory !== null);
      await withClient(cluster.url, async (client) => {
        const { rows } = await client.query("show data_directory");
        expect(rows[0].data_directory).toBe(cluster.dataDir);
      });
    } finally {
      await cluster.stop();
    }
    expect(existsSync(cluster.rootDir)).toBe(false);
  });
});
