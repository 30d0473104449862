/**
 * What PostgreSQL filters before the query engine runs: the rule's filter and the query's top-level
 * equalities, so a user's read fetches their own documents, not the collection. Only conditions
 * whose SQL form cannot miss a match are pushed (the engine still decides).
 */
import { ObjectId } from "bson";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { narrow } from "../../src/data/rules.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { pushdown } from "../../src/store/postgres/pushdown.ts";
import { emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";

describe("pushdown", () => {
  it("turns top-level string, ObjectId and boolean equalities into JSON path predicates, _id into the key", () => {
    const oid = new ObjectId("65a1b2c3d4e5f60718293a51");
    const { where, params } = pushdown(
      {
        $and: [{ owner_id: "u1", done: { $eq: false } }, { tag: { $in: ['a"b', oid] } }],
        _id: { $in: ["x", 5, oid] },
      },
      4,
    );
    expect(where).toEqual([
      "doc @@ $4::jsonpath",
      "doc @@ $5::jsonpath",
      "doc @@ $6::jsonpath",
      "id_key = ANY($7::text[])",
    ]);
    expect(params).toEqual([
      '$."owner_id" == "u1"',
      '$."done" == false',
      '$."tag" == "a\\"b" || $."tag"."$oid" == "65a1b2c3d4e5f60718293a51"',
      ["s:x", "n:5", "o:65a1b2c3d4e5f60718293a51"],
    ]);
  });

  it("turns a number's equality into its one stored text, or any Decimal128", () => {
    const { where, params } = pushdown({ n: 5, z: { $eq: 0 }, f: { $in: [1.5, 2 ** 40, "x"] } }, 1);
    expect(where).toEqual(["doc @@ $1::jsonpath", "doc @@ $2::jsonpath", "doc @@ $3::jsonpath"]);
    const decimal = (field: string) => `exists($."${field}"."$numberDecimal")`;
    expect(params).toEqual([
      `$."n"."$numberInt" == "5" || ${decimal("n")}`,
      `$."z"."$numberInt" == "0" || $."z"."$numberDouble" == "-0.0" || ${decimal("z")}`,
      `$."f"."$numberDouble" == "1.5" || ${decimal("f")} || $."f"."$numberLong" == "1099511627776" || $."f" == "x"`,
    ]);
  });

  it("leaves to the engine what SQL could get wrong or could not evaluate", () => {
    const untouched = [
      { n: { $gt: 1 } },
      { a: null },
      { "a.b": "x" },
      { a: /x/ },
      { a: { $ne: "x" } },
      { $or: [{ a: "x" }, { b: "y" }] },
      { $expr: { $eq: ["$a", "x"] } },
      { a: { $in: ["x", new Date(0)] } },
      { a: { $eq: "x", $exists: true } },
      { at: new Date(0) },
      { "bad\u0001key": "x" },
      { a: "lone \ud800 surrogate" },
      // Past 256 alternatives the path is not worth it (100,000 failed to evaluate).
      { a: { $in: Array.from({ length: 257 }, (_, i) => `v${i}`) } },
    ];
    for (const query of untouched) expect(pushdown(query, 1), JSON.stringify(query)).toEqual({ where: [], params: [] });
    expect(pushdown({ a: { $in: Array.from({ length: 256 }, (_, i) => `v${i}`) } }, 1).where).toHaveLength(1);
    // A one-clause $or is its clause.
    expect(pushdown({ $or: [{ a: "x" }] }, 1).where).toHaveLength(1);
  });
});

describe("a user's read on PostgreSQL", () => {
  let database: TestDatabase;
  let store: PostgresStore;

  beforeAll(async () => {
    database = await emulatorDatabase("pushdown");
    store = await PostgresStore.open({ url: database.url });
    await store.apps.create({ appId: "p", domainId: "p", createdAt: 0, appDir: null, config: {} });
    const docs = store.apps.scope("p").data;
    const owners = ["ann", "bob", "cid", "dan"];
    await docs.write("db", "notes", async () => ({
      changes: Array.from({ length: 400 }, (_, i) => ({
        op: "insert" as const,
        doc: { _id: i, owner_id: owners[i % 4], tags: i % 8 === 0 ? ["pin"] : [], n: i },
      })),
      events: () => [],
      result: () => undefined,
    }));
  });

  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it("fetches the rule's owner's documents only, in natural order", async () => {
    const docs = await store.apps.scope("p").data.read("db", "notes", narrow({}, { owner_id: "bob" }));
    expect(docs).toHaveLength(100);
    expect(docs.every((d) => d.owner_id === "bob")).toBe(true);
    expect(docs.map((d) => d.n)).toEqual([...docs.map((d) => d.n as number)].sort((a, b) => a - b));
  });

  it("narrows by the query's equalities too, arrays holding the value included", async () => {
    const data = store.apps.scope("p").data;
    expect(await data.read("db", "notes", narrow({ tags: "pin" }, { owner_id: "ann" }))).toHaveLength(50);
    expect(await data.read("db", "notes", { _id: { $in: [3, 7, 1000] } })).toHaveLength(2);
    // Quotes, backslashes and non-ASCII reach the database intact (a parameter, escaped as JSON).
    const odd = 'we"ird\\ \u00e9 ✓';
    await data.write("db", "notes", async () => ({
      changes: [{ op: "insert" as const, doc: { _id: "odd", owner_id: odd } }],
      events: () => [],
      result: () => undefined,
    }));
    expect(await data.read("db", "notes", { owner_id: odd })).toEqual([{ _id: "odd", owner_id: odd }]);
    // Nothing to push: the whole collection, for the engine to filter.
    expect(await data.read("db", "notes", { n: { $lt: 10 } })).toHaveLength(401);
  });
});
