/**
 * A filtered read of all of a query's matches on PostgreSQL (a user's own documents through the
 * owner rule) is one statement, planned once per connection for every value and through the GIN
 * index (docs/decisions/0018-fair-shares.md): its values are subqueries no plan knows, so after
 * its first five executions PostgreSQL keeps the plan for every value, without a `SET
 * plan_cache_mode` before it and a `RESET` after it. (Which plan that is on a large collection —
 * through the GIN index — is measured by the benchmarks' `find`, not here.)
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { PgDocuments } from "../../src/store/postgres/documents.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { emulatorDatabase, statementsOf, type TestDatabase } from "../helpers/postgres.ts";

let database: TestDatabase;
let store: PostgresStore;

beforeAll(async () => {
  database = await emulatorDatabase("find-statements");
  // One connection: the prepared statements it holds are the ones the reads used.
  store = await PostgresStore.open({ url: database.url, maxConnections: 1 });
});

afterAll(async () => {
  await store?.close();
  await database?.drop();
});

/** An app of its own with 2,000 notes of 20 owners (100 each), analysed. */
async function notesOf(appId: string) {
  await store.apps.create({ appId, domainId: `domain-${appId}`, createdAt: 0, appDir: null, config: {} });
  const data = store.apps.scope(appId).data as PgDocuments;
  const docs = Array.from({ length: 2_000 }, (_, i) => ({ _id: `n${i}`, owner: `u${i % 20}`, n: i }));
  await data.write("db", "notes", async () => ({
    changes: docs.map((doc) => ({ op: "insert" as const, doc })),
    events: () => [],
    result: () => undefined,
  }));
  const db = (store as unknown as { context: { db: { rows(text: string): Promise<Record<string, unknown>[]> } } })
    .context.db;
  await db.rows("ANALYZE documents");
  return { data, db, docs };
}

it("reads a user's documents in one statement, planned once for every value", async () => {
  const { data, db } = await notesOf("finds");

  const { texts } = await statementsOf(async () => {
    for (let i = 0; i < 12; i++) {
      const found = await data.exactTexts("db", "notes", { owner: `u${i}` }, { fields: ["n"] });
      expect(found?.examined).toBe(100);
      expect((await data.read("db", "notes", { owner: `u${i}` })).length).toBe(100);
    }
  });
  expect(texts).toHaveLength(24);
  expect(texts.filter((t) => /plan_cache_mode/.test(t))).toEqual([]);

  // Each of the two statements: five plans for the values, then the plan for every value.
  const prepared = (await db.rows(
    "SELECT statement, generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE statement LIKE '%FROM documents WHERE app_id = (SELECT $1::text)%' AND statement NOT LIKE '%pg_prepared%'",
  )) as { statement: string; generic: number; custom: number }[];
  expect(prepared).toHaveLength(2);
  for (const row of prepared) expect([row.custom, row.generic]).toEqual([5, 7]);
});

it("answers a user's documents in natural order where updates moved their rows", async () => {
  const { data, docs } = await notesOf("moved");
  // A changed document is a new row version where there is room (its GIN-indexed value changed,
  // so not in its old place): read by where they lie, the owner's documents come out of order.
  const owned = docs.filter((doc) => doc.owner === "u3");
  const moved = [owned[0]!, owned[1]!, owned[50]!, owned[98]!, owned[99]!];
  await data.write("db", "notes", async () => ({
    changes: moved.map((doc) => ({ op: "replace" as const, doc: { ...doc, n: -doc.n } })),
    events: () => [],
    result: () => undefined,
  }));
  const ids = (texts: string[]) => texts.map((text) => (JSON.parse(text) as { _id: string })._id);
  for (let i = 0; i < 8; i++) {
    const found = await data.exactTexts("db", "notes", { owner: "u3" }, { fields: ["n"] });
    expect(ids(found!.texts)).toEqual(owned.map((doc) => doc._id));
    expect(found!.keys.slice(0, 2)).toEqual([{ n: -3 }, { n: -23 }]);
  }
});
