/**
 * What PostgreSQL filters before the query engine runs: the rule's filter and the query's top-level
 * equalities, so a user's read fetches their own documents, not the collection. Only conditions
 * whose SQL form cannot miss a match are pushed (the engine still decides).
 */
import { Decimal128, Long, ObjectId, Timestamp } from "bson";
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromEJSON } from "../../src/data/documents.ts";
import { find } from "../../src/data/query-engine.ts";
import { narrow } from "../../src/data/rules.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { maxPushedConditions, pushdown } from "../../src/store/postgres/pushdown.ts";
import { nestedDocuments, pathQueries } from "../helpers/path-shapes.ts";
import { adminQuery, emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";

const nothing = { where: [], params: [], truncated: false };

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

  it("turns a number's equality into its one stored text, or any Decimal128 where the field held one", () => {
    const { where, params } = pushdown({ n: 5, z: { $eq: 0 }, f: { $in: [1.5, 2 ** 40, "x"] } }, 4);
    const either = (field: number) =>
      `doc @@ (SELECT CASE WHEN $${field}::text = ANY(c.decimal_fields) THEN $${field + 1}::jsonpath ELSE $${field + 2}::jsonpath END FROM collections c
     WHERE c.app_id = $1 AND c.db = $2 AND c.coll = $3)`;
    expect(where).toEqual([either(4), either(7), either(10)]);
    const decimal = (field: string) => ` || exists($."${field}"."$numberDecimal")`;
    const [n, z, f] = [
      `$."n"."$numberInt" == "5"`,
      `$."z"."$numberInt" == "0" || $."z"."$numberDouble" == "-0.0"`,
      `$."f"."$numberDouble" == "1.5" || $."f"."$numberLong" == "1099511627776" || $."f" == "x"`,
    ];
    expect(params).toEqual(["n", n + decimal("n"), n, "z", z + decimal("z"), z, "f", f + decimal("f"), f]);
    // Hidden values stay plain parameters inside the subquery, which hides them already.
    expect(pushdown({ n: 5 }, 4, { hidden: true }).where).toEqual([either(4)]);
  });

  it("turns an Int64 past 2^53 (kept as a Long) into its one stored text, or any Decimal128 where the field held one", () => {
    const { where, params } = pushdown(
      { big: Long.fromString("9007199254740993"), id: { $in: [Long.fromString("-9007199254740995"), 3] } },
      4,
    );
    expect(where).toHaveLength(2);
    const [big, id] = [
      `$."big"."$numberLong" == "9007199254740993"`,
      `$."id"."$numberLong" == "-9007199254740995" || $."id"."$numberInt" == "3"`,
    ];
    const decimal = (field: string) => ` || exists($."${field}"."$numberDecimal")`;
    expect(params).toEqual(["big", big + decimal("big"), big, "id", id + decimal("id"), id]);
    // One within 2^53 is the number it is (the documents keep it so).
    expect(pushdown({ small: Long.fromNumber(5) }, 4).params[2]).toBe(`$."small"."$numberInt" == "5"`);
    // A Timestamp is a Long to the library, and no number.
    expect(pushdown({ at: new Timestamp({ t: 1, i: 1 }) }, 1)).toEqual(nothing);
  });

  it("leaves to the engine what SQL could get wrong or could not evaluate", () => {
    const untouched = [
      { n: { $gt: 1 } },
      { a: null },
      { a: /x/ },
      { a: { $ne: "x" } },
      // An empty $or (MongoDB refuses it), and a clause that pushes nothing down: it could match any document.
      { $or: [] },
      { $or: [{ a: "x" }, { b: { $gt: 1 } }] },
      { $or: [{ a: "x" }, { $or: [{ b: "y" }, { c: /z/ }] }] },
      // A step of digits is an array's index to MongoDB too.
      { "a.0": "x" },
      { "a.0": 5 },
      { "a.$b": "x" },
      { "a..b": "x" },
      { $expr: { $eq: ["$a", "x"] } },
      { a: { $in: ["x", new Date(0)] } },
      { a: { $eq: "x", $exists: true } },
      { at: new Date(0) },
      { "bad\u0001key": "x" },
      { a: "lone \ud800 surrogate" },
      // Past 256 alternatives the path is not worth it (100,000 failed to evaluate).
      { a: { $in: Array.from({ length: 257 }, (_, i) => `v${i}`) } },
    ];
    for (const query of untouched) expect(pushdown(query, 1), JSON.stringify(query)).toEqual(nothing);
    expect(pushdown({ a: { $in: Array.from({ length: 256 }, (_, i) => `v${i}`) } }, 1).where).toHaveLength(1);
    // A one-clause $or is its clause.
    expect(pushdown({ $or: [{ a: "x" }] }, 1).where).toHaveLength(1);
  });

  it("turns a dotted path's string, ObjectId and boolean equalities into JSON path predicates", () => {
    const oid = new ObjectId("65a1b2c3d4e5f60718293a51");
    // (A top-level field of digits is a field, as it was pushed before dotted paths were.)
    expect(pushdown({ "0": "y" }, 1).params).toEqual(['$."0" == "y"']);
    expect(pushdown({ "owner.id": "u1", "a.b.c": { $in: [oid, true] }, "_id.k": "x" }, 2)).toEqual({
      where: ["doc @@ $2::jsonpath", "doc @@ $3::jsonpath", "doc @@ $4::jsonpath"],
      params: [
        '$."owner"."id" == "u1"',
        '$."a"."b"."c"."$oid" == "65a1b2c3d4e5f60718293a51" || $."a"."b"."c" == true',
        '$."_id"."k" == "x"',
      ],
      truncated: false,
    });
  });

  it("turns a dotted path's number into its one stored text, or any Decimal128 where the collection held one", () => {
    const { where, params } = pushdown({ "a.b": 5, "c.d": { $in: [0, 2.5] } }, 4);
    const either = (first: number) =>
      `doc @@ (SELECT CASE WHEN c.decimals THEN $${first}::jsonpath ELSE $${first + 1}::jsonpath END FROM collections c
     WHERE c.app_id = $1 AND c.db = $2 AND c.coll = $3)`;
    expect(where).toEqual([either(4), either(6)]);
    const [ab, cd] = [
      `$."a"."b"."$numberInt" == "5"`,
      `$."c"."d"."$numberInt" == "0" || $."c"."d"."$numberDouble" == "-0.0" || $."c"."d"."$numberDouble" == "2.5"`,
    ];
    expect(params).toEqual([
      `${ab} || exists($."a"."b"."$numberDecimal")`,
      ab,
      `${cd} || exists($."c"."d"."$numberDecimal")`,
      cd,
    ]);
  });

  it("turns a Decimal128 of the query into the number it equals, or any Decimal128 where one is held", () => {
    const d = (text: string) => Decimal128.fromString(text);
    // 7.00 is 7, 2.5 the double 2.5, 2^53 + 1 a long: as those numbers.
    expect(pushdown({ n: d("7.00") }, 4)).toEqual(pushdown({ n: 7 }, 4));
    expect(pushdown({ n: d("2.50") }, 4)).toEqual(pushdown({ n: 2.5 }, 4));
    expect(pushdown({ n: d("-0") }, 4)).toEqual(pushdown({ n: 0 }, 4));
    expect(pushdown({ "a.b": d("9007199254740993") }, 4)).toEqual(
      pushdown({ "a.b": Long.fromString("9007199254740993") }, 4),
    );
    // 0.1 is no double (numbers compare by exact value): only a Decimal128 can equal it.
    expect(pushdown({ n: d("0.1"), "a.b": { $in: [d("0.1"), "x"] } }, 4).params).toEqual([
      "n",
      `exists($."n"."$numberDecimal")`,
      "false",
      `$."a"."b" == "x" || exists($."a"."b"."$numberDecimal")`,
      `$."a"."b" == "x"`,
    ]);
    // NaN and the infinities are the engine's.
    expect(pushdown({ n: d("NaN") }, 1)).toEqual(nothing);
    expect(pushdown({ n: d("-Infinity") }, 1)).toEqual(nothing);
  });

  it("turns $all into each of its values' equality, and $elemMatch into its fields' paths", () => {
    expect(
      pushdown({ tags: { $all: ["a", ["b"], true] }, members: { $elemMatch: { id: "u1", role: { $ne: "x" } } } }, 1),
    ).toEqual({
      where: ["doc @@ $1::jsonpath", "doc @@ $2::jsonpath", "doc @@ $3::jsonpath"],
      params: ['$."tags" == "a"', '$."tags" == true', '$."members"."id" == "u1"'],
      truncated: false,
    });
  });

  it("turns an $or whose every clause pushes a condition down into the clauses' conditions OR-ed", () => {
    expect(
      pushdown({ done: false, $or: [{ owner_id: "u1" }, { shared: "u1", n: { $gt: 1 } }, { _id: "x" }] }, 4),
    ).toEqual({
      where: ["doc @@ $4::jsonpath", "(doc @@ $5::jsonpath OR doc @@ $6::jsonpath OR id_key = ANY($7::text[]))"],
      params: ['$."done" == false', '$."owner_id" == "u1"', '$."shared" == "u1"', ["s:x"]],
      truncated: false,
    });
    // A clause of several conditions is their conjunction; $or nests; hidden values stay hidden.
    expect(
      pushdown({ $or: [{ a: "x", "b.c": "y" }, { $or: [{ d: true }, { e: "z" }] }] }, 1, { hidden: true }),
    ).toEqual({
      where: [
        "((doc @@ (SELECT $1::jsonpath) AND doc @@ (SELECT $2::jsonpath)) OR (doc @@ (SELECT $3::jsonpath) OR doc @@ (SELECT $4::jsonpath)))",
      ],
      params: ['$."a" == "x"', '$."b"."c" == "y"', '$."d" == true', '$."e" == "z"'],
      truncated: false,
    });
    // An $or that cannot be pushed takes its parameters back: the next condition is numbered on.
    expect(pushdown({ $or: [{ a: "x" }, { b: /y/ }], c: "z" }, 1)).toEqual({
      where: ["doc @@ $1::jsonpath"],
      params: ['$."c" == "z"'],
      truncated: false,
    });
  });

  it(`pushes at most ${maxPushedConditions} conditions down, and says when it left some out`, () => {
    const wide = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, "a"]));
    expect(pushdown(wide(maxPushedConditions), 1)).toMatchObject({ truncated: false });
    const many = pushdown(wide(70_000), 1);
    expect(many.where).toHaveLength(maxPushedConditions);
    expect(many.params).toHaveLength(maxPushedConditions);
    expect(many.truncated).toBe(true);
    // An $or's clauses count: one past the cap is not pushed (its parameters taken back).
    const orPast = pushdown({ ...wide(maxPushedConditions - 1), $or: [{ x: "1" }, { y: "2" }] }, 1);
    expect(orPast.where).toHaveLength(maxPushedConditions - 1);
    expect(orPast.params).toHaveLength(maxPushedConditions - 1);
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
    // An Int64 past 2^53 by its text, through the index.
    const big = Long.fromString("9007199254740993");
    await data.write("db", "notes", async () => ({
      changes: [{ op: "insert" as const, doc: { _id: "big", owner_id: "eve", big } }],
      events: () => [],
      result: () => undefined,
    }));
    expect(await data.read("db", "notes", { big })).toEqual([{ _id: "big", owner_id: "eve", big }]);
    expect(await data.read("db", "notes", { big: Long.fromString("9007199254740992") })).toEqual([]);
    expect(await indexRows("notes", { big })).toBe(1);
    // Nothing to push: the whole collection, for the engine to filter.
    expect(await data.read("db", "notes", { n: { $lt: 10 } })).toHaveLength(402);
  });

  /**
   * How many rows of the whole table the GIN index gives a numeric equality's pushdown for
   * `db.<collection>` (its condition alone, sequential scans off: the index is the only way): the
   * documents holding the number when it can look it up, every row when the path asks for a
   * Decimal128 of any text. An `$or`'s conditions are `scanCount` scans of the index, summed.
   */
  async function indexRows(collection: string, query: Record<string, unknown>, scanCount = 1): Promise<number> {
    const { where, params } = pushdown(query, 4);
    const literal = (value: unknown) => `'${String(value).replaceAll("'", "''")}'`;
    const statement = `SELECT id_key FROM documents WHERE ${where.join(" AND ")}`.replace(/\$(\d+)/g, (_, n: string) =>
      literal(["p", "db", collection, ...params][Number(n) - 1]),
    );
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const results = (await client.query(
        `SET enable_seqscan = off; SET enable_indexscan = off; EXPLAIN (ANALYZE, FORMAT JSON) ${statement}`,
      )) as unknown as pg.QueryResult[];
      const plan = JSON.stringify(results.at(-1)!.rows[0]);
      const scans = [...plan.matchAll(/"Index Name":"documents_by_value"[^}]*?"Actual Rows":(\d+)/g)];
      expect(scans, plan).toHaveLength(scanCount);
      return scans.reduce((sum, scan) => sum + Number(scan[1]), 0);
    } finally {
      await client.end();
    }
  }

  it("finds a rule's $or of owners, and dotted paths, through the index: the matches, not the collection", async () => {
    const data = store.apps.scope("p").data;
    const owners = ["ann", "bob", "cid", "dan"];
    const docs = Array.from({ length: 400 }, (_, i) => ({
      _id: i,
      owner: { id: owners[i % 4] },
      shared: i % 10 === 0 ? ["bob"] : [],
      steps: [{ by: owners[(i + 1) % 4] }],
    }));
    await data.write("db", "shared", async () => ({
      changes: docs.map((doc) => ({ op: "insert" as const, doc })),
      events: () => [],
      result: () => undefined,
    }));
    const ids = (found: Record<string, unknown>[]) => found.map((d) => d._id);
    const rule = { $or: [{ "owner.id": "bob" }, { shared: "bob" }] };
    const bobs = docs.filter((d) => d.owner.id === "bob" || d.shared.includes("bob"));
    expect(bobs).toHaveLength(140);
    expect(ids(await data.read("db", "shared", narrow({}, rule)))).toEqual(ids(bobs));
    expect(await indexRows("shared", rule, 2)).toBe(140);
    // Through an array of documents, as MongoDB's path goes.
    const stepped = await data.read("db", "shared", narrow({ "steps.by": "cid" }, { "owner.id": "bob" }));
    expect(ids(stepped)).toEqual(ids(docs.filter((d) => d.owner.id === "bob" && d.steps[0]!.by === "cid")));
    expect(stepped).toHaveLength(100);
  });

  it("looks a number up in the index where the field never held a Decimal128, and finds a Decimal128 that equals it where it did", async () => {
    const data = store.apps.scope("p").data;
    const every = async () => Number((await adminQuery(database.url, "SELECT count(*) FROM documents")).rows[0].count);
    expect(await data.read("db", "notes", { n: 7 })).toEqual([{ _id: 7, owner_id: "dan", tags: [], n: 7 }]);
    expect(await indexRows("notes", { n: 7 })).toBe(1);
    // A Decimal128 written to another collection: there a number's equality on that field reads
    // every row's Decimal128 check…
    const decimal = (text: string) => fromEJSON({ $numberDecimal: text });
    await data.write("db", "prices", async () => ({
      changes: [
        { op: "insert" as const, doc: { _id: 1, n: 7, m: 7 } },
        { op: "insert" as const, doc: { _id: 2, n: decimal("7.00"), m: 8 } },
        { op: "insert" as const, doc: { _id: 3, n: 8, tiers: [1, decimal("7.0")], nested: { in: decimal("7") } } },
      ],
      events: () => [],
      result: () => undefined,
    }));
    expect((await data.read("db", "prices", { n: 7 })).map((d) => d._id)).toEqual([1, 2]);
    expect(await indexRows("prices", { n: 7 })).toBeGreaterThanOrEqual(await every());
    // A Decimal128 of the query: the number it equals, and the Decimal128s where they are held.
    expect((await data.read("db", "prices", { n: decimal("7.0") })).map((d) => d._id)).toEqual([1, 2]);
    expect((await data.read("db", "notes", { n: decimal("7.0") })).map((d) => d._id)).toEqual([7]);
    // (The index holds the 7s of both collections.)
    expect(await indexRows("notes", { n: decimal("7.0") })).toBe(2);
    expect(await data.read("db", "notes", { n: decimal("0.1") })).toEqual([]);
    // (An array's element is the field's value to an equality; a decimal deeper down is not.)
    expect((await data.read("db", "prices", { tiers: 7 })).map((d) => d._id)).toEqual([3]);
    expect(await indexRows("prices", { tiers: 7 })).toBeGreaterThanOrEqual(await every());
    // …and on its other fields looks the number up.
    expect((await data.read("db", "prices", { m: 7 })).map((d) => d._id)).toEqual([1]);
    expect(await indexRows("prices", { m: 7 })).toBe(1);
    expect(await indexRows("prices", { nested: 7 })).toBe(0);
    // …while this one still looks its numbers up (the 7s and 8s of both collections).
    expect(await indexRows("notes", { n: { $in: [7, 8] } })).toBe(4);
    // An update that writes the first Decimal128 marks its collection too, and a drop forgets it.
    await data.write("db", "notes", async () => ({
      changes: [{ op: "replace" as const, doc: { _id: 9, n: fromEJSON({ $numberDecimal: "7.0" }) } }],
      events: () => [],
      result: () => undefined,
    }));
    expect((await data.read("db", "notes", { n: 7 })).map((d) => d._id)).toEqual([7, 9]);
    // (Every row, and the replaced one's old version the index still holds.)
    expect(await indexRows("notes", { n: 7 })).toBeGreaterThanOrEqual(await every());
    await data.drop("db", "prices");
    await data.write("db", "prices", async () => ({
      changes: [{ op: "insert" as const, doc: { _id: 1, n: 7 } }],
      events: () => [],
      result: () => undefined,
    }));
    // (Looked up again: its 7s, with the dropped one's, which the index holds until a vacuum.)
    expect(await indexRows("prices", { n: 7 })).toBeLessThan(5);
  });

  it("looks a dotted path's number up in the index where the collection never held a Decimal128, and finds one that equals it where it did", async () => {
    const data = store.apps.scope("p").data;
    const every = async () => Number((await adminQuery(database.url, "SELECT count(*) FROM documents")).rows[0].count);
    const write = (collection: string, docs: Record<string, unknown>[]) =>
      data.write("db", collection, async () => ({
        changes: docs.map((doc) => ({ op: "insert" as const, doc })),
        events: () => [],
        result: () => undefined,
      }));
    await write(
      "scores",
      Array.from({ length: 50 }, (_, i) => ({ _id: i, stats: i % 2 ? { n: i } : [{ n: i }, { n: -i }] })),
    );
    expect((await data.read("db", "scores", { "stats.n": 7 })).map((d) => d._id)).toEqual([7]);
    expect((await data.read("db", "scores", { "stats.n": -8 })).map((d) => d._id)).toEqual([8]);
    expect(await indexRows("scores", { "stats.n": 7 })).toBe(1);
    expect(await indexRows("scores", { "stats.n": { $in: [3, 5] } })).toBe(2);
    const decimal = (text: string) => fromEJSON({ $numberDecimal: text });
    await write("ledger", [
      { _id: 1, entry: { amount: 7 } },
      { _id: 2, entry: { amount: decimal("7.00") } },
      { _id: 3, entry: [{ amount: decimal("7") }] },
      { _id: 4, entry: { amount: 8 } },
    ]);
    expect((await data.read("db", "ledger", { "entry.amount": 7 })).map((d) => d._id)).toEqual([1, 2, 3]);
    expect(await indexRows("ledger", { "entry.amount": 7 })).toBeGreaterThanOrEqual(await every());
    // The other collection still looks its numbers up.
    expect(await indexRows("scores", { "stats.n": 7 })).toBe(1);
  });

  let run = 0;

  it("holds every document the engine matches, whatever the paths and arrays (test/helpers/path-shapes.ts)", async () => {
    await fc.assert(
      fc.asyncProperty(nestedDocuments, pathQueries, async (docs, queries) => {
        const data = store.apps.scope("p").data;
        const collection = `paths-${++run}`;
        await data.write("db", collection, async () => ({
          changes: docs.map((doc, i) => ({ op: "insert" as const, doc: { ...doc, _id: i } })),
          events: () => [],
          result: () => undefined,
        }));
        const all = await data.read("db", collection, {});
        for (const q of queries) {
          const handed = await data.read("db", collection, q);
          expect(find(handed, q, {}), JSON.stringify(q)).toEqual(find(all, q, {}));
        }
      }),
      { seed: 20261129, numRuns: 300 },
    );
  }, 60_000);
});
