/**
 * The schema is created and upgraded by numbered migrations at start, in one transaction under an
 * advisory lock: instances starting together apply each migration once; a schema newer than the
 * code, or a database that cannot be reached, stops the start with a one-line reason.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { latestVersion, migrate, migrations } from "../../src/store/postgres/migrations.ts";
import { DatabaseStartError, PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/postgres.ts";

const databases: TestDatabase[] = [];
afterEach(async () => {
  for (const db of databases.splice(0)) await db.drop();
});

async function fresh(): Promise<TestDatabase> {
  const db = await createTestDatabase("migrations");
  databases.push(db);
  return db;
}

async function query<R extends pg.QueryResultRow>(url: string, sql: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

/** The schema as a server of `version` left it. */
async function schemaAt(client: pg.Client, version: number): Promise<void> {
  await client.query("BEGIN");
  await client.query(
    "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
  );
  for (const migration of migrations.filter((m) => m.version <= version)) {
    if (migration.sql !== "") await client.query(migration.sql);
    await migration.run?.(client);
    await client.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [
      migration.version,
      migration.name,
    ]);
  }
  await client.query("COMMIT");
}

/** A document of app `a`'s database `db` written as a server of the schema's version wrote it. */
async function addDocument(client: pg.Client, coll: string, id: string, doc: object) {
  await client.query("INSERT INTO collections (app_id, db, coll) VALUES ('a', 'db', $1) ON CONFLICT DO NOTHING", [
    coll,
  ]);
  const text = JSON.stringify(doc);
  await client.query(
    "INSERT INTO documents (app_id, db, coll, id_key, doc, ejson) VALUES ('a', 'db', $1, $2, $3::jsonb, $3)",
    [coll, id, text],
  );
}

describe("migrations", () => {
  it("create the schema on an empty database and record each version once", async () => {
    const db = await fresh();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      expect(await migrate(client)).toEqual(migrations.map((m) => m.version));
      // A second start finds nothing to do.
      expect(await migrate(client)).toEqual([]);
    } finally {
      await client.end();
    }
    const versions = await query<{ version: number }>(db.url, "SELECT version FROM schema_migrations ORDER BY version");
    expect(versions.map((v) => v.version)).toEqual(migrations.map((m) => m.version));
    const tables = await query<{ tablename: string }>(
      db.url,
      "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
    );
    expect(tables.map((t) => t.tablename)).toEqual(
      expect.arrayContaining(["apps", "documents", "identities", "mail", "sessions", "userpass_accounts", "users"]),
    );
  });

  it("upgrade a database of an older version, keeping its rows", async () => {
    const db = await fresh();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      // Version 1, as an older server left it, with an API key.
      await client.query("BEGIN");
      await client.query(
        "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
      );
      await client.query(migrations[0]!.sql);
      await client.query("INSERT INTO schema_migrations (version, name) VALUES (1, 'v1')");
      await client.query("COMMIT");
      await client.query("INSERT INTO apps (app_id, domain_id, created_at, config) VALUES ('a', 'd', 0, '{}')");
      await client.query("INSERT INTO users (app_id, id, doc) VALUES ('a', 'u', '{}')");
      const key =
        "INSERT INTO api_keys (app_id, id, user_id, name, key_hash, disabled, created_at) VALUES ('a', $1, 'u', $2, $1, false, 0)";
      await client.query(key, ["k1", "ci"]);

      expect(await migrate(client)).toEqual(migrations.slice(1).map((m) => m.version));
      expect((await client.query("SELECT name FROM api_keys")).rows).toEqual([{ name: "ci" }]);
      // Version 2: a name of any length, and still once per user.
      const long = randomBytes(5000).toString("hex");
      await client.query(key, ["k2", long]);
      await expect(client.query(key, ["k3", "ci"])).rejects.toMatchObject({ code: "23505" });
      await expect(client.query(key, ["k4", long])).rejects.toMatchObject({ code: "23505" });
    } finally {
      await client.end();
    }
  });

  it("upgrade version 5 to per-user limits: the config's or the defaults, old documents counting for no one", async () => {
    const db = await fresh();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await schemaAt(client, 5);
      // An app as a version-5 server stored it, with a document.
      await client.query(
        `INSERT INTO apps (app_id, domain_id, created_at, config) VALUES ('a', 'd', 0, '{"limits":{"documentsPerUser":2,"documents":10}}')`,
      );
      await client.query(
        "INSERT INTO app_usage (app_id, max_users, max_sessions_per_user, max_documents, max_document_bytes) VALUES ('a', 100, 100, 10, 1000000)",
      );
      await client.query("INSERT INTO collections (app_id, db, coll) VALUES ('a', 'd', 'c')");
      const insert = (id: string, owner: string | null) =>
        client.query(
          `INSERT INTO documents (app_id, db, coll, id_key, doc, ejson${owner ? ", owner" : ""})
           VALUES ('a', 'd', 'c', $1, '{}', '{}'${owner ? ", $2" : ""})`,
          owner ? [id, owner] : [id],
        );
      await insert("old", null);

      expect(await migrate(client)).toEqual(migrations.filter((m) => m.version > 5).map((m) => m.version));
      const [usage] = (
        await client.query(
          "SELECT max_user_documents, max_anonymous_user_documents, max_anonymous_documents FROM app_usage WHERE app_id = 'a'",
        )
      ).rows;
      expect(usage).toEqual({
        max_user_documents: "2",
        max_anonymous_user_documents: "1000",
        max_anonymous_documents: "5",
      });
      expect((await client.query("SELECT owner FROM documents")).rows).toEqual([{ owner: null }]);
      // The triggers count documents for their owner from now on.
      await insert("u1", "u");
      await insert("u2", "u");
      await expect(insert("u3", "u")).rejects.toMatchObject({ code: "53400", message: "documentsPerUser" });
      await insert("v1", "v");
    } finally {
      await client.end();
    }
  });

  it("upgrade version 19 to a limit of collections: the config's or the default", async () => {
    const db = await fresh();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await schemaAt(client, 19);
      for (const [app, config] of [
        ["a", '{"limits":{"collections":7}}'],
        ["b", "{}"],
      ]) {
        await client.query("INSERT INTO apps (app_id, domain_id, created_at, config) VALUES ($1, $1, 0, $2)", [
          app,
          config,
        ]);
        await client.query(
          "INSERT INTO app_usage (app_id, max_users, max_sessions_per_user, max_documents, max_document_bytes) VALUES ($1, 100, 100, 10, 1000000)",
          [app],
        );
      }
      expect(await migrate(client)).toEqual(migrations.filter((m) => m.version > 19).map((m) => m.version));
      expect((await client.query("SELECT app_id, max_collections FROM app_usage ORDER BY app_id")).rows).toEqual([
        { app_id: "a", max_collections: "7" },
        { app_id: "b", max_collections: "10000" },
      ]);
    } finally {
      await client.end();
    }
  });

  it("upgrade version 7: a user's sessions kept, read newest first from the index (the login's trim)", async () => {
    const db = await fresh();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await schemaAt(client, 7);
      await client.query("INSERT INTO apps (app_id, domain_id, created_at, config) VALUES ('a', 'd', 0, '{}')");
      await client.query("INSERT INTO users (app_id, id, doc) VALUES ('a', 'u', '{}')");
      for (const id of ["s1", "s2", "s3"])
        await client.query("INSERT INTO sessions (app_id, id, user_id, doc) VALUES ('a', $1, 'u', '{}')", [id]);

      expect(await migrate(client)).toEqual(migrations.filter((m) => m.version > 7).map((m) => m.version));
      const trim = "SELECT id FROM sessions WHERE app_id = 'a' AND user_id = 'u' ORDER BY seq DESC OFFSET 1";
      expect((await client.query(trim)).rows).toEqual([{ id: "s2" }, { id: "s1" }]);
      // Newest first without a sort, whatever the table's size.
      await client.query("SET enable_seqscan = off");
      const plan = (await client.query(`EXPLAIN ${trim}`)).rows.map((r) => r["QUERY PLAN"] as string).join("\n");
      expect(plan).toMatch(/Index Scan Backward using sessions_by_user_in_order/);
      expect(plan).not.toMatch(/Sort/);
    } finally {
      await client.end();
    }
  });

  it("upgrade version 15: each collection's fields that hold a Decimal128 read from its documents", async () => {
    const db = await fresh();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await schemaAt(client, 15);
      await client.query("INSERT INTO apps (app_id, domain_id, created_at, config) VALUES ('a', 'd', 0, '{}')");
      const add = (coll: string, id: string, doc: object) => addDocument(client, coll, id, doc);
      const decimal = { $numberDecimal: "7.00" };
      await add("prices", "1", { _id: 1, price: decimal, n: { $numberInt: "7" } });
      await add("prices", "2", { _id: 2, tiers: [{ $numberInt: "1" }, decimal], nested: { in: decimal } });
      await add("plain", "1", { _id: 1, n: { $numberInt: "7" }, label: "$numberDecimal" });
      expect(await migrate(client)).toEqual(migrations.filter((m) => m.version > 15).map((m) => m.version));
      const { rows } = await client.query("SELECT coll, decimal_fields FROM collections ORDER BY coll");
      // (A field's value or its array's element; not a decimal deeper down, which no equality on the field compares.)
      expect(rows).toEqual([
        { coll: "plain", decimal_fields: [] },
        { coll: "prices", decimal_fields: ["price", "tiers"] },
      ]);
    } finally {
      await client.end();
    }
  });

  it("upgrade version 18: a collection holding a Decimal128 only deeper down marked as holding one", async () => {
    const db = await fresh();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await schemaAt(client, 18);
      await client.query("INSERT INTO apps (app_id, domain_id, created_at, config) VALUES ('a', 'd', 0, '{}')");
      const add = (coll: string, id: string, doc: object) => addDocument(client, coll, id, doc);
      const decimal = { $numberDecimal: "7.00" };
      await add("ledger", "1", { _id: 1, entry: { amount: decimal } });
      await add("plain", "1", { _id: 1, entry: { amount: { $numberInt: "7" } } });
      const flags = async () =>
        (await client.query("SELECT coll, decimals, decimal_fields FROM collections ORDER BY coll")).rows;
      // (Version 16's trigger: no top-level field holds one, so nothing was marked.)
      expect(await flags()).toEqual([
        { coll: "ledger", decimals: false, decimal_fields: [] },
        { coll: "plain", decimals: false, decimal_fields: [] },
      ]);
      expect(await migrate(client)).toEqual(migrations.filter((m) => m.version > 18).map((m) => m.version));
      expect(await flags()).toEqual([
        { coll: "ledger", decimals: true, decimal_fields: [] },
        { coll: "plain", decimals: false, decimal_fields: [] },
      ]);
      // Its trigger marks a decimal deeper down, and a top-level one as before.
      await add("plain", "2", { _id: 2, deep: [{ in: decimal }] });
      await add("top", "1", { _id: 1, price: decimal });
      expect(await flags()).toEqual([
        { coll: "ledger", decimals: true, decimal_fields: [] },
        { coll: "plain", decimals: true, decimal_fields: [] },
        { coll: "top", decimals: true, decimal_fields: ["price"] },
      ]);
    } finally {
      await client.end();
    }
  });

  it("upgrade version 16: Int64 and Decimal128 _ids keyed by value, a value held twice left as it was", async () => {
    const db = await fresh();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await schemaAt(client, 16);
      await client.query("INSERT INTO apps (app_id, domain_id, created_at, config) VALUES ('a', 'd', 0, '{}')");
      await client.query("INSERT INTO collections (app_id, db, coll) VALUES ('a', 'db', 'c')");
      const add = (id: string) =>
        client.query(
          "INSERT INTO documents (app_id, db, coll, id_key, doc, ejson) VALUES ('a', 'db', 'c', $1, $2::jsonb, $2)",
          [`e:${id}`, `{"_id":${id}}`],
        );
      await add('{"$numberDecimal":"5.00"}');
      await add('{"$numberLong":"9007199254740993"}');
      await add('{"$numberDecimal":"0.10"}');
      // Stored by an older server beside the Decimal128 of the same value.
      await client.query(
        `INSERT INTO documents (app_id, db, coll, id_key, doc, ejson)
         VALUES ('a', 'db', 'c', 'n:7', '{"_id":{"$numberInt":"7"}}', '{"_id":{"$numberInt":"7"}}')`,
      );
      await add('{"$numberDecimal":"7.0"}');
      expect(await migrate(client)).toEqual(migrations.filter((m) => m.version > 16).map((m) => m.version));
      const { rows } = await client.query("SELECT id_key FROM documents ORDER BY id_key");
      expect(rows.map((r) => r.id_key)).toEqual([
        "d:1e-1",
        'e:{"$numberDecimal":"7.0"}',
        "n:5",
        "n:7",
        "n:9007199254740993",
      ]);
    } finally {
      await client.end();
    }
  });

  it("upgrade version 9: mail already ended has its end, queued mail none (retention)", async () => {
    const db = await fresh();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await schemaAt(client, 9);
      const add = (id: number, state: string | null) =>
        client.query(
          `INSERT INTO mail (id, source, kind, recipients, created_at, delivery_state, next_attempt_at, doc)
           VALUES ($1, 'emailjs', 'emailjs', '{}', $2, $3, 0, '{}')`,
          [id, 1000 + id, state],
        );
      await add(1, null);
      await add(2, "sent");
      await add(3, "failed");
      await add(4, "queued");
      expect(await migrate(client)).toEqual(migrations.filter((m) => m.version > 9).map((m) => m.version));
      const { rows } = await client.query("SELECT id::int, done_at::int FROM mail ORDER BY id");
      expect(rows).toEqual([
        { id: 1, done_at: 1001 },
        { id: 2, done_at: 1002 },
        { id: 3, done_at: 1003 },
        { id: 4, done_at: null },
      ]);
    } finally {
      await client.end();
    }
  });

  it("are applied once when several instances start together", async () => {
    const db = await fresh();
    const stores = await Promise.all(Array.from({ length: 4 }, () => PostgresStore.open({ url: db.url })));
    try {
      const rows = await query<{ n: number }>(db.url, "SELECT count(*)::int AS n FROM schema_migrations");
      expect(rows[0]!.n).toBe(migrations.length);
      // All four work on the one schema.
      await stores[0]!.apps.create({ appId: "a", domainId: "d", createdAt: 0, appDir: null, config: {} });
      expect(await stores[3]!.apps.get("a")).toMatchObject({ appId: "a" });
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it("refuse a schema newer than the code, in one line", async () => {
    const db = await fresh();
    const store = await PostgresStore.open({ url: db.url });
    await store.close();
    await query(db.url, "INSERT INTO schema_migrations (version, name) VALUES ($1, 'from the future')", [
      latestVersion + 1,
    ]);
    const refused = await PostgresStore.open({ url: db.url }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DatabaseStartError);
    const message = (refused as Error).message;
    expect(message).toMatch(/newer than this server's/);
    expect(message).not.toContain("\n");
  });

  it("refuse a database that cannot be reached, in one line naming it", async () => {
    const refused = await PostgresStore.open({
      url: "postgres://nobody@127.0.0.1:1/nowhere",
      connectTimeoutMs: 2000,
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DatabaseStartError);
    expect((refused as Error).message).toMatch(/^Cannot reach the database at 127\.0\.0\.1:1\/nowhere: /);
    expect((refused as Error).message).not.toContain("\n");
  });
});
