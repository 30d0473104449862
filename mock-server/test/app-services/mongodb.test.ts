/** The mongodb-atlas service actions: argument shapes, result types, rules and errors. */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, base, bearer, call, mongoAction, newApp, newOpenApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
let appId: string;
let token: string;
let userId: string;
beforeAll(async () => {
  app = await testApp({ logLevel: "error" });
  appId = await newOpenApp(app);
  const session = await anonymousLogin(app, appId);
  token = session.access_token;
  userId = session.user_id;
});
afterAll(() => app.close());

const action = (name: string, argument: Record<string, unknown>, as = token) =>
  mongoAction(app, appId, as, name, argument);

const ns = (collection: string) => ({ database: "shop", collection });

describe("mongodb-atlas actions", () => {
  it("insertOne / insertMany return the ids; find / findOne / count read them back", async () => {
    const one = await action("insertOne", {
      ...ns("items"),
      document: { name: "pen", price: { $numberDouble: "1.5" }, qty: { $numberInt: "10" } },
    });
    expect(one.body.insertedId.$oid).toMatch(/^[0-9a-f]{24}$/);
    const many = await action("insertMany", {
      ...ns("items"),
      documents: [
        { _id: "custom-id", name: "ink", price: { $numberInt: "4" }, qty: { $numberInt: "0" } },
        { name: "pad", price: { $numberInt: "3" }, qty: { $numberInt: "5" } },
      ],
    });
    expect(many.body.insertedIds[0]).toBe("custom-id");
    expect(many.body.insertedIds).toHaveLength(2);

    const found = await action("find", {
      ...ns("items"),
      query: { qty: { $gt: { $numberInt: "0" } } },
      project: { _id: 0, name: 1 },
      sort: { price: { $numberInt: "1" } },
    });
    expect(found.body).toEqual([{ name: "pen" }, { name: "pad" }]);
    const limited = await action("find", { ...ns("items"), query: {}, limit: { $numberInt: "1" } });
    expect(limited.body).toHaveLength(1);
    const findOne = await action("findOne", { ...ns("items"), query: { _id: "custom-id" } });
    expect(findOne.body).toMatchObject({ _id: "custom-id", name: "ink", price: { $numberInt: "4" } });
    expect((await action("findOne", { ...ns("items"), query: { name: "none" } })).body).toBeNull();
    expect((await action("count", { ...ns("items"), query: {} })).body).toEqual({ $numberLong: "3" });
    expect((await action("count", { ...ns("items"), query: {}, limit: { $numberLong: "2" } })).body).toEqual({
      $numberLong: "2",
    });
  });

  it("finds nearest first with $near, reading past the limit's first matches; count refuses it", async () => {
    const at = (lng: number) => ({ type: "Point", coordinates: [lng, 0] });
    // Stored farthest first, so the first matches read are not the nearest.
    const spots = [9, 5, 7, 1, 3].map((lng) => ({ _id: `spot${lng}`, loc: at(lng) }));
    await action("insertMany", { ...ns("spots"), documents: spots });
    const near = { loc: { $near: { $geometry: at(0), $maxDistance: 700_000 } } };
    const found = await action("find", { ...ns("spots"), query: near, limit: { $numberInt: "2" } });
    expect(found.body.map((doc: { _id: string }) => doc._id)).toEqual(["spot1", "spot3"]);
    const within = await action("find", {
      ...ns("spots"),
      query: { loc: { $geoWithin: { $centerSphere: [[0, 0], 0.1] } } },
      sort: { _id: { $numberInt: "1" } },
      project: { _id: 1 },
    });
    expect(within.body).toEqual([{ _id: "spot1" }, { _id: "spot3" }, { _id: "spot5" }]);
    const counted = await action("count", { ...ns("spots"), query: near });
    expect(counted.response.statusCode).toBe(400);
    expect(counted.body.error).toBe("$geoNear, $near, and $nearSphere are not allowed in this context");
  });

  it("writes many documents in order (in statements of a bounded size on PostgreSQL)", async () => {
    // (A time limit no busy machine reaches: what is tested is the order, not the speed.)
    const bulk = await newOpenApp(app, {
      queryTimeoutMs: 60_000,
      limits: {
        documentsPerAnonymousUser: 100_000,
        documentBytesPerAnonymousUser: 1 << 30,
        writesPerSecondPerAnonymousUser: 100_000,
      },
    });
    const writer = (await anonymousLogin(app, bulk)).access_token;
    const act = (name: string, argument: Record<string, unknown>) =>
      mongoAction(app, bulk, writer, name, { ...ns("bulk"), ...argument });
    const docs = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) => ({ _id: { $numberInt: String(from + i) }, text: "x".repeat(40) }));
    const count = async () => (await act("count", { query: {} })).body;
    expect((await act("insertOne", { document: docs(2_600, 2_601)[0] })).response.statusCode).toBe(200);
    // Past the first statements' rows, an _id that exists stops the insert there:
    // the documents before it stay, none after it is written (MongoDB's ordered insert).
    const refused = await act("insertMany", { documents: docs(0, 3_000) });
    expect(refused.body).toMatchObject({
      error_code: "MongoDBError",
      error: expect.stringMatching(/^Duplicate key error/),
    });
    expect(await count()).toEqual({ $numberLong: "2601" });
    expect((await act("findOne", { query: { _id: { $numberInt: "2599" } } })).body).toMatchObject({
      text: "x".repeat(40),
    });
    expect((await act("findOne", { query: { _id: { $numberInt: "2601" } } })).body).toBeNull();
    // An _id twice in the batch, past the first statement, likewise.
    const twice = [...docs(3_000, 4_500), ...docs(3_000, 3_001)];
    expect((await act("insertMany", { documents: twice })).body.error).toMatch(/^Duplicate key error/);
    expect(await count()).toEqual({ $numberLong: "4101" });
    const updated = await act("updateMany", { query: {}, update: { $set: { text: "y" } } });
    expect(updated.body).toEqual({ matchedCount: { $numberInt: "4101" }, modifiedCount: { $numberInt: "4101" } });
    expect(await act("count", { query: { text: "y" } })).toMatchObject({ body: { $numberLong: "4101" } });
    const deleted = await act("deleteMany", { query: { _id: { $gte: { $numberInt: "1000" } } } });
    expect(deleted.body).toEqual({ deletedCount: { $numberInt: "3101" } });
    expect(await count()).toEqual({ $numberLong: "1000" });
  }, 60_000);

  it("updateOne / updateMany answer Int32 counts and upsertedId only on upsert", async () => {
    await action("insertMany", {
      ...ns("counters"),
      documents: [
        { k: "a", n: 1 },
        { k: "b", n: 1 },
        { k: "c", n: 5 },
      ],
    });
    const one = await action("updateOne", { ...ns("counters"), query: { k: "a" }, update: { $inc: { n: 1 } } });
    expect(one.body).toEqual({ matchedCount: { $numberInt: "1" }, modifiedCount: { $numberInt: "1" } });
    const many = await action("updateMany", {
      ...ns("counters"),
      query: { n: { $lt: 5 } },
      update: { $set: { small: true } },
    });
    expect(many.body).toEqual({ matchedCount: { $numberInt: "2" }, modifiedCount: { $numberInt: "2" } });
    const same = await action("updateOne", { ...ns("counters"), query: { k: "c" }, update: { $set: { n: 5 } } });
    expect(same.body).toEqual({ matchedCount: { $numberInt: "1" }, modifiedCount: { $numberInt: "0" } });
    const upsert = await action("updateOne", {
      ...ns("counters"),
      query: { k: "d" },
      update: { $set: { n: 9 }, $setOnInsert: { created: true } },
      upsert: true,
    });
    expect(upsert.body.matchedCount).toEqual({ $numberInt: "0" });
    expect(upsert.body.upsertedId.$oid).toMatch(/^[0-9a-f]{24}$/);
    expect((await action("findOne", { ...ns("counters"), query: { k: "d" } })).body).toMatchObject({
      k: "d",
      n: { $numberInt: "9" },
      created: true,
    });
    const nothing = await action("updateOne", { ...ns("counters"), query: { k: "zzz" }, update: { $set: { n: 1 } } });
    expect(nothing.body).toEqual({ matchedCount: { $numberInt: "0" }, modifiedCount: { $numberInt: "0" } });
  });

  it("updates the array element the query matched ($), every element ($[]) and the filtered ones ($[e])", async () => {
    await action("insertOne", {
      ...ns("carts"),
      document: {
        _id: "c1",
        items: [
          { sku: "a", qty: 1 },
          { sku: "b", qty: 2 },
        ],
      },
    });
    const matched = await action("updateOne", {
      ...ns("carts"),
      query: { _id: "c1", "items.sku": "b" },
      update: { $inc: { "items.$.qty": 3 } },
    });
    expect(matched.body).toEqual({ matchedCount: { $numberInt: "1" }, modifiedCount: { $numberInt: "1" } });
    await action("updateOne", {
      ...ns("carts"),
      query: { _id: "c1" },
      update: { $set: { "items.$[big].big": true }, $inc: { "items.$[].seen": 1 } },
      arrayFilters: [{ "big.qty": { $gt: 2 } }],
    });
    expect((await action("findOne", { ...ns("carts"), query: { _id: "c1" } })).body.items).toEqual([
      { sku: "a", qty: { $numberInt: "1" }, seen: { $numberInt: "1" } },
      { sku: "b", qty: { $numberInt: "5" }, big: true, seen: { $numberInt: "1" } },
    ]);
    const refusals: [Record<string, unknown>, string][] = [
      [
        { query: { _id: "c1" }, update: { $set: { "items.$.qty": 0 } } },
        "The positional operator did not find the match needed from the query.",
      ],
      [
        { query: { _id: "c1" }, update: { $set: { "items.$[].qty": 0 } }, arrayFilters: [{ "x.qty": 1 }] },
        "The array filter for identifier 'x' was not used in the update { $set: { items.$[].qty: 0 } }",
      ],
      [
        { query: { _id: "c1" }, update: { $set: { "items.qty": 0 } } },
        'Cannot create field \'qty\' in element {items: [ { sku: "a", qty: 1, seen: 1 }, { sku: "b", qty: 5, big: true, seen: 1 } ]}',
      ],
    ];
    for (const [argument, message] of refusals) {
      const { response, body } = await action("updateOne", { ...ns("carts"), ...argument });
      expect(response.statusCode, JSON.stringify(argument)).toBe(400);
      expect(body.error).toBe(message);
    }
  });

  it("findOneAndUpdate / findOneAndReplace / findOneAndDelete honour sort, projection and returnNewDocument", async () => {
    await action("insertMany", {
      ...ns("fo"),
      documents: [
        { v: 1, g: "x" },
        { v: 2, g: "x" },
        { v: 3, g: "y" },
      ],
    });
    const before = await action("findOneAndUpdate", {
      ...ns("fo"),
      filter: { g: "x" },
      update: { $inc: { v: 10 } },
      sort: { v: -1 },
      projection: { _id: 0, v: 1 },
    });
    expect(before.body).toEqual({ v: { $numberInt: "2" } });
    const after = await action("findOneAndUpdate", {
      ...ns("fo"),
      filter: { g: "x" },
      update: { $inc: { v: 10 } },
      sort: { v: 1 },
      returnNewDocument: true,
      projection: { _id: 0, v: 1 },
    });
    expect(after.body).toEqual({ v: { $numberInt: "11" } });
    const replaced = await action("findOneAndReplace", {
      ...ns("fo"),
      filter: { g: "y" },
      update: { g: "z", fresh: true },
      returnNewDocument: true,
    });
    expect(replaced.body).toMatchObject({ g: "z", fresh: true });
    expect(replaced.body.v).toBeUndefined();
    const atomic = await action("findOneAndReplace", { ...ns("fo"), filter: { g: "z" }, update: { $set: { g: "w" } } });
    expect(atomic.body.error).toBe("the replace operation document must not contain atomic operators");
    const deleted = await action("findOneAndDelete", { ...ns("fo"), filter: { g: "x" }, sort: { v: -1 } });
    expect(deleted.body.v).toEqual({ $numberInt: "12" });
    expect((await action("count", { ...ns("fo"), query: {} })).body).toEqual({ $numberLong: "2" });
  });

  it("projects findOneAnd…'s document before the change by the element its filter matched (a.$)", async () => {
    const int = (n: number) => ({ $numberInt: String(n) });
    await action("insertMany", {
      ...ns("pos"),
      documents: [
        { _id: 42, a: [1, 2, 3], tag: "u" },
        { _id: 43, a: [4, 5, 6], tag: "d" },
      ],
    });
    // (find_and_modify_server6865.js: the pre-image, projected as a find with the filter would.)
    const updated = await action("findOneAndUpdate", {
      ...ns("pos"),
      filter: { a: 2 },
      update: { $set: { "b.kind": "xyz" } },
      projection: { "a.$": 1 },
    });
    expect(updated.body).toEqual({ _id: int(42), a: [int(2)] });
    const deleted = await action("findOneAndDelete", {
      ...ns("pos"),
      filter: { a: { $gt: 4 } },
      projection: { "a.$": 1 },
    });
    expect(deleted.body).toEqual({ _id: int(43), a: [int(5)] });
    // The new document may not match the filter: refused before anything is written.
    const refused = await action("findOneAndUpdate", {
      ...ns("pos"),
      filter: { a: 3 },
      update: { $set: { tag: "changed" } },
      projection: { "a.$": 1 },
      returnNewDocument: true,
    });
    expect(refused.response.statusCode).toBe(400);
    expect(refused.body.error).toBe("cannot use a positional projection and return the new document");
    // Documents a role reads in part: the query's element, after the cut.
    const partial = await newApp(app, {
      rules: {
        "shop.pos": {
          roles: [
            { name: "list", apply_when: {}, delete: true, fields: { list: { read: true } }, additional_fields: {} },
          ],
        },
      },
    });
    const reader = (await anonymousLogin(app, partial)).access_token;
    const partialAction = (name: string, argument: Record<string, unknown>) =>
      mongoAction(app, partial, reader, name, { ...ns("pos"), ...argument });
    const seeded = await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${partial}/data/shop/pos`,
      payload: { documents: [{ _id: 1, list: [7, 8, 9], hidden: true }] },
    });
    expect(seeded.response.statusCode).toBe(201);
    const found = await partialAction("find", { query: { list: 8 }, project: { "list.$": 1 } });
    expect(found.body).toEqual([{ list: [int(8)] }]);
    const gone = await partialAction("findOneAndDelete", { filter: { list: 9 }, projection: { "list.$": 1 } });
    expect(gone.body).toEqual({ list: [int(9)] });
    expect((await action("find", { ...ns("pos"), query: {} })).body).toEqual([
      { _id: int(42), a: [int(1), int(2), int(3)], tag: "u", b: { kind: "xyz" } },
    ]);
  });

  it("refuses findOneAnd…'s bad projection before it writes anything", async () => {
    const int = (n: number) => ({ $numberInt: String(n) });
    const kept = { _id: int(7), a: [int(1), int(2)], s: "t", n: int(1) };
    await action("insertOne", { ...ns("badproj"), document: { _id: 7, a: [1, 2], s: "t", n: 1 } });
    const refusals: [string, Record<string, unknown>, string][] = [
      ["findOneAndUpdate", { projection: { a: 1, s: 0 } }, "Cannot do exclusion on field s in inclusion projection"],
      ["findOneAndUpdate", { projection: { x: { $foo: 1 } } }, "Unknown expression $foo"],
      [
        "findOneAndReplace",
        { update: { s: "r" }, projection: { s: 1, n: 0 } },
        "Cannot do exclusion on field n in inclusion projection",
      ],
      ["findOneAndDelete", { projection: { s: 0, n: 1 } }, "Cannot do inclusion on field n in exclusion projection"],
      // The filter matched no element of the array the positional path meets: the document's to tell.
      [
        "findOneAndUpdate",
        { projection: { "a.$": 1 } },
        "positional operator '.$' couldn't find a matching element in the array",
      ],
      [
        "findOneAndDelete",
        { projection: { "a.$": 1 } },
        "positional operator '.$' couldn't find a matching element in the array",
      ],
    ];
    for (const [name, argument, error] of refusals) {
      const refused = await action(name, {
        ...ns("badproj"),
        filter: { _id: 7 },
        update: { $set: { s: "u" } },
        ...argument,
      });
      expect(refused.response.statusCode, `${name} ${JSON.stringify(argument)}`).toBe(400);
      expect(refused.body.error).toBe(error);
      expect((await action("find", { ...ns("badproj"), query: {} })).body).toEqual([kept]);
    }
    // A positional path that meets no array is included as it is (positional_projection.js).
    const plain = await action("findOneAndUpdate", {
      ...ns("badproj"),
      filter: { _id: 7 },
      update: { $set: { s: "u" } },
      projection: { "s.$": 1, _id: 0 },
    });
    expect(plain.body).toEqual({ s: "t" });
  });

  it("replays realm-web 2.0.1's findOneAndDelete bug as the service does: an _id-only document is left", async () => {
    const inserted = await action("insertOne", { ...ns("bug"), document: { text: "keep me?" } });
    const previous = await action("findOneAndReplace", { ...ns("bug"), filter: { text: "keep me?" } });
    expect(previous.body.text).toBe("keep me?");
    const left = await action("find", { ...ns("bug"), query: {} });
    expect(left.body).toEqual([{ _id: inserted.body.insertedId }]);
  });

  it("runs an update's pipeline of the stages updates run, $fill's value form among them", async () => {
    await action("insertOne", { ...ns("fill"), document: { _id: 1, a: null } });
    const updated = await action("updateOne", {
      ...ns("fill"),
      query: { _id: 1 },
      update: [{ $fill: { output: { a: { value: 0 } } } }, { $set: { b: { $add: ["$a", 1] } } }],
    });
    expect(updated.body).toMatchObject({ matchedCount: { $numberInt: "1" }, modifiedCount: { $numberInt: "1" } });
    expect((await action("findOne", { ...ns("fill"), query: { _id: 1 } })).body).toEqual({
      _id: { $numberInt: "1" },
      a: { $numberInt: "0" },
      b: { $numberInt: "1" },
    });
  });

  it("deleteOne / deleteMany answer Int32 counts; aggregate runs pipelines", async () => {
    await action("insertMany", {
      ...ns("agg"),
      documents: [
        { t: "a", n: 1 },
        { t: "a", n: 2 },
        { t: "b", n: 3 },
      ],
    });
    const grouped = await action("aggregate", {
      ...ns("agg"),
      pipeline: [{ $group: { _id: "$t", total: { $sum: "$n" } } }, { $sort: { _id: 1 } }],
    });
    expect(grouped.body).toEqual([
      { _id: "a", total: { $numberInt: "3" } },
      { _id: "b", total: { $numberInt: "3" } },
    ]);
    expect((await action("deleteOne", { ...ns("agg"), query: { t: "a" } })).body).toEqual({
      deletedCount: { $numberInt: "1" },
    });
    expect((await action("deleteMany", { ...ns("agg"), query: {} })).body).toEqual({
      deletedCount: { $numberInt: "2" },
    });
  });

  it("takes an update without operators as a replacement, as the service did for realm-web's own tests", async () => {
    const people = ns("replacements");
    const runId = 7;
    await action("insertMany", {
      ...people,
      documents: ["Alice", "Bob", "Charlie"].map((name) => ({ runId, name, hiddenField: "very-secret" })),
    });
    const updated = await action("updateOne", {
      ...people,
      query: { runId, name: "Alice" },
      update: { name: "Alison" },
    });
    expect(updated.body).toEqual({ matchedCount: { $numberInt: "1" }, modifiedCount: { $numberInt: "1" } });
    const alison = (await action("findOne", { ...people, query: { name: "Alison" } })).body;
    expect(Object.keys(alison)).toEqual(["_id", "name"]);
    // An upsert's new document is the replacement (no field of the query but an `_id`).
    const upserted = await action("findOneAndUpdate", {
      ...people,
      filter: { runId, name: "Nobody" },
      update: { name: "Dennis", hiddenField: "a hidden value" },
      upsert: true,
      returnNewDocument: true,
    });
    expect(Object.keys(upserted.body)).toEqual(["_id", "name", "hiddenField"]);
    const bobby = await action("findOneAndUpdate", {
      ...people,
      filter: { runId, name: "Bob" },
      update: { name: "Bobby" },
      projection: { name: 1 },
      returnNewDocument: true,
    });
    expect(bobby.body).toEqual({ _id: expect.anything(), name: "Bobby" });
    const inserted = await action("updateOne", {
      ...people,
      query: { runId, name: "Dennis" },
      update: { runId, name: "Dennis" },
      upsert: true,
    });
    expect(inserted.body).toMatchObject({ matchedCount: { $numberInt: "0" }, upsertedId: expect.anything() });
    const many = await action("updateMany", { ...people, query: { runId }, update: { hiddenField: "same secret" } });
    expect(many.body).toEqual({ matchedCount: { $numberInt: "2" }, modifiedCount: { $numberInt: "2" } });
    expect((await action("find", { ...people, query: { hiddenField: "same secret" } })).body).toHaveLength(2);
    // An empty update of nothing is nothing.
    expect((await action("findOneAndUpdate", { ...ns("empty"), filter: {}, update: {} })).body).toBeNull();
  });

  it("finds for a findOneAnd… only what the read rule lets be read, and touches nothing else", async () => {
    // The short form lets a read rule be narrower than the write rule.
    const ruled = await newApp(app, {
      rules: { "shop.mixed": { read: { pub: true }, write: true, insert: true, delete: true } },
    });
    const { access_token } = await anonymousLogin(app, ruled);
    const act = (name: string, argument: Record<string, unknown>) =>
      mongoAction(app, ruled, access_token, name, { ...ns("mixed"), ...argument });
    await act("insertMany", {
      documents: [
        { _id: 1, pub: true },
        { _id: 2, pub: false, secret: "hidden" },
      ],
    });
    for (const [name, argument] of [
      ["findOneAndUpdate", { filter: { _id: 2 }, update: { $set: { t: 1 } } }],
      ["findOneAndUpdate", { filter: { _id: 2 }, update: { $set: { t: 1 } }, returnNewDocument: true }],
      ["findOneAndReplace", { filter: { _id: 2 }, update: { pub: false, secret: "replaced" } }],
      ["findOneAndReplace", { filter: { _id: 2 } }],
      ["findOneAndDelete", { filter: { _id: 2 } }],
    ] as const) {
      const { response, body } = await act(name, argument);
      expect([response.statusCode, body], name).toEqual([200, null]);
    }
    // The hidden document is as it was (read as the system, through the control API).
    const { body } = await call(app, "listDocuments", {
      method: "GET",
      url: `/_mock/v1/apps/${ruled}/data/shop/mixed`,
    });
    expect(body.documents).toContainEqual({ _id: { $numberInt: "2" }, pub: false, secret: "hidden" });
    // A readable one is found, changed and returned.
    expect(
      (await act("findOneAndUpdate", { filter: { _id: 1 }, update: { $set: { t: 1 } }, returnNewDocument: true })).body,
    ).toEqual({ _id: { $numberInt: "1" }, pub: true, t: { $numberInt: "1" } });
  });

  it("answers the service's errors for bad queries, updates, pipelines and arguments (400, never 500)", async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ["find", { ...ns("e"), query: { $who: 1 } }, /^unknown top level operator: \$who\.$/],
      ["find", { ...ns("e"), query: { a: { $who: 1 } } }, /^unknown operator: \$who$/],
      ["updateOne", { ...ns("e"), query: {}, update: { $who: { a: 1 } } }, /Unknown modifier: \$who/],
      // (A query's error before the update's: an update without operators is a replacement.)
      ["updateOne", { ...ns("e"), query: { $who: 1 }, update: {} }, /^unknown top level operator: \$who\.$/],
      ["updateOne", { ...ns("e"), query: {}, update: { $set: { a: 1 }, plain: 1 } }, /Unknown modifier: plain/],
      [
        "updateOne",
        { ...ns("e"), query: {}, update: { $set: { a: 1 }, $inc: { "a.b": 1 } } },
        /^Updating the path 'a\.b' would create a conflict at 'a'$/,
      ],
      [
        "updateMany",
        { ...ns("e"), query: {}, update: { $set: { n: 1 }, $rename: { m: "n" } } },
        /^Updating the path 'n' would create a conflict at 'n'$/,
      ],
      ["aggregate", { ...ns("e"), pipeline: [{ $who: {} }] }, /^Unrecognized pipeline stage name: '\$who'\.$/],
      ["aggregate", { ...ns("e"), pipeline: [{ $out: "elsewhere" }] }, /not allowed/],
      ["insertMany", { ...ns("e"), documents: [] }, /^must provide at least one element$/],
      ["insertOne", { ...ns("e"), document: "text" }, /must be a document/],
      ["find", { database: "shop" }, /'collection' is a required string/],
      ["find", { ...ns("e"), query: { $where: "this.a == 1" } }, /^\$where is not allowed in this context$/],
      ["find", { ...ns("e"), query: {}, sort: { a: 2 } }, /^\$sort key ordering must be 1 \(for ascending\) or -1/],
      [
        "findOneAndUpdate",
        { ...ns("e"), filter: {}, update: { $set: { a: 1 } }, sort: { a: "up" } },
        /^Illegal key in \$sort specification: a: "up"$/,
      ],
      ["aggregate", { ...ns("e"), pipeline: [{ $limit: 0 }] }, /^the limit must be positive$/],
      // An update's pipeline: parsed as an aggregation's, then held to the stages updates run
      // (as parsed: $count is a $group), whether or not anything matches.
      [
        "updateOne",
        { ...ns("e"), query: {}, update: [{ $match: {} }] },
        /^\$match is not allowed to be used within an update$/,
      ],
      [
        "updateMany",
        { ...ns("e"), query: {}, update: [{ $count: "n" }] },
        /^\$group is not allowed to be used within an update$/,
      ],
      [
        "updateOne",
        { ...ns("e"), query: {}, update: [{ $set: { a: 1 } }, { $who: 1 }] },
        /^Unrecognized pipeline stage name: '\$who'\.$/,
      ],
      [
        "updateOne",
        { ...ns("e"), query: {}, update: [{ $project: {} }] },
        /^Invalid \$project :: caused by :: projection specification must have at least one field$/,
      ],
      [
        "findOneAndUpdate",
        { ...ns("e"), filter: {}, update: [{ $sort: { a: 1 } }] },
        /^\$sort is not allowed to be used within an update$/,
      ],
      [
        "updateOne",
        { ...ns("e"), query: {}, update: Array.from({ length: 1001 }, () => ({ $set: { a: 1 } })) },
        /^Pipeline length must be no longer than 1000 stages\.$/,
      ],
    ];
    for (const [name, argument, message] of cases) {
      const { response, body } = await action(name, argument);
      expect(response.statusCode, `${name} ${JSON.stringify(argument)}`).toBe(400);
      expect(body.error, `${name} ${JSON.stringify(argument)}`).toMatch(message);
    }
    await action("insertOne", { ...ns("dup"), document: { _id: 1 } });
    const dup = await action("insertOne", { ...ns("dup"), document: { _id: 1 } });
    expect(dup.body).toMatchObject({
      error_code: "MongoDBError",
      error: "Duplicate key error collection: shop.dup index: _id_ dup key: { _id: 1 }",
    });
  });

  it("refuses in an app user's pipeline the stages and operators the service keeps from users", async () => {
    const refused: [Record<string, unknown>, string][] = [
      [{ $collStats: { count: {} } }, "$collStats"],
      [{ $facet: { n: [{ $count: "n" }] } }, "$facet"],
      [{ $geoNear: { near: [0, 0], distanceField: "d" } }, "$geoNear"],
      [
        { $graphLookup: { from: "b", startWith: "$a", connectFromField: "a", connectToField: "a", as: "g" } },
        "$graphLookup",
      ],
      [{ $indexStats: {} }, "$indexStats"],
      [{ $merge: { into: "b" } }, "$merge"],
      [{ $out: "b" }, "$out"],
      [{ $match: { $expr: { $function: { body: "function() { return true }", args: [], lang: "js" } } } }, "$function"],
    ];
    for (const [stage, name] of refused) {
      const { response, body } = await action("aggregate", { ...ns("agg"), pipeline: [{ $match: {} }, stage] });
      expect(response.statusCode, name).toBe(400);
      expect(body, name).toMatchObject({ error: `${name} is not allowed in this context`, error_code: "MongoDBError" });
    }
  });

  it("refuses the namespaces MongoDB refuses, with its messages, and accepts the rest", async () => {
    const coll = "c".repeat(191); // "a".repeat(63) + "." + this = 255 bytes, MongoDB's most
    const refused: [string, string, string][] = [
      ["a".repeat(64), "c", "db name must be at most 63 characters, found: 64"],
      ["é".repeat(32), "c", "db name must be at most 63 characters, found: 64"],
      ["data base", "c", "Invalid namespace specified 'data base.c'"],
      ["a/b", "c", "Invalid namespace specified 'a/b.c'"],
      ["a\\b", "c", "Invalid namespace specified 'a\\b.c'"],
      ['a"b', "c", `Invalid namespace specified 'a"b.c'`],
      ["a$b", "c", "Invalid namespace: a$b.c"],
      ["a.b", "c", "'.' is an invalid character in a db name: a.b"],
      ["a\u0000b", "c", "namespaces cannot have embedded null characters"],
      ["shop", "c\u0000", "namespaces cannot have embedded null characters"],
      ["shop", ".c", "Collection names cannot start with '.': .c"],
      ["shop", "c$", "Invalid collection name: c$"],
      [
        "a".repeat(63),
        `${coll}x`,
        `Fully qualified namespace is too long. Namespace: ${"a".repeat(63)}.${coll}x Max: 255`,
      ],
    ];
    for (const [database, collection, message] of refused) {
      for (const [name, argument] of [
        ["insertOne", { document: { a: 1 } }],
        ["find", { query: {} }],
      ] as const) {
        const { response, body } = await action(name, { database, collection, ...argument });
        expect([response.statusCode, body], `${name} ${database}.${collection}`).toEqual([
          400,
          expect.objectContaining({ error: message, error_code: "MongoDBError" }),
        ]);
      }
    }
    const accepted: [string, string][] = [
      ["a".repeat(63), coll],
      ["データベース", "コレクション"],
      ["--", "collection.name"],
      ["0prefix", "+-/*<>=~!@#%^&|`?()[],;:. "],
    ];
    for (const [database, collection] of accepted) {
      const inserted = await action("insertOne", { database, collection, document: { _id: 1 } });
      expect(inserted.response.statusCode, `${database}.${collection}`).toBe(200);
      expect((await action("find", { database, collection, query: {} })).body).toEqual([{ _id: { $numberInt: "1" } }]);
    }
  });

  it("answers ServiceNotFound for another service and FunctionNotFound for an unknown action", async () => {
    const other = await call(app, "callFunction", {
      method: "POST",
      url: `${base}/app/${appId}/functions/call`,
      headers: bearer(token),
      payload: { name: "find", arguments: [ns("x")], service: "mongo-db" },
    });
    expect(other.response.statusCode).toBe(404);
    expect(other.body).toMatchObject({ error: "service not found: 'mongo-db'", error_code: "ServiceNotFound" });
    const unknown = await action("mapReduce", ns("x"));
    expect(unknown.body.error_code).toBe("FunctionNotFound");
  });

  it("round-trips every BSON type, in field order, nested arrays included", async () => {
    const document = {
      _id: { $oid: "65a1b2c3d4e5f60718293a51" },
      int: { $numberInt: "7" },
      long: { $numberLong: "9007199254740993" },
      double: { $numberDouble: "1.5" },
      decimal: { $numberDecimal: "1.10" },
      date: { $date: { $numberLong: "1700000000000" } },
      binary: { $binary: { base64: "AQID", subType: "00" } },
      uuid: { $binary: { base64: "ASNFZ4mrze8BI0VniavN7w==", subType: "04" } },
      regex: { $regularExpression: { pattern: "^a", options: "i" } },
      timestamp: { $timestamp: { t: 1700000000, i: 3 } },
      minKey: { $minKey: 1 },
      nested: [[{ $numberInt: "1" }, "two"], { deep: [{ $numberDouble: "-0.0" }, null, true] }],
      zebra: "last field stays last",
    };
    await action("insertOne", { ...ns("types"), document });
    const found = await action("findOne", { ...ns("types"), query: { _id: { $oid: "65a1b2c3d4e5f60718293a51" } } });
    expect(found.body).toEqual(document);
    expect(Object.keys(found.body)).toEqual(Object.keys(document));
    expect(found.response.body).toBe(JSON.stringify(document));
  });

  it("applies concurrent updates of one document one after another (none is lost)", async () => {
    await action("insertOne", { ...ns("counters"), document: { _id: "c", n: { $numberInt: "0" } } });
    const updates = await Promise.all(
      Array.from({ length: 20 }, () =>
        action("updateOne", { ...ns("counters"), query: { _id: "c" }, update: { $inc: { n: { $numberInt: "1" } } } }),
      ),
    );
    expect(updates.every((u) => u.body.modifiedCount.$numberInt === "1")).toBe(true);
    expect((await action("findOne", { ...ns("counters"), query: { _id: "c" } })).body.n).toEqual({ $numberInt: "20" });
  });

  it("computes with Decimal128 values as MongoDB does: sums, increments, comparisons, sorts", async () => {
    const price = (text: string) => ({ $numberDecimal: text });
    await action("insertMany", {
      ...ns("money"),
      documents: [
        { _id: "a", price: price("9.90") },
        { _id: "b", price: price("10.05") },
        { _id: "c", price: price("100.5") },
      ],
    });
    const total = await action("aggregate", {
      ...ns("money"),
      pipeline: [{ $group: { _id: null, total: { $sum: "$price" }, top: { $max: "$price" } } }],
    });
    expect(total.body).toEqual([{ _id: null, total: price("120.45"), top: price("100.5") }]);
    const raised = await action("updateOne", {
      ...ns("money"),
      query: { _id: "a" },
      update: { $inc: { price: price("0.15") } },
    });
    expect(raised.body).toMatchObject({ matchedCount: { $numberInt: "1" }, modifiedCount: { $numberInt: "1" } });
    const dear = await action("find", {
      ...ns("money"),
      query: { price: { $gte: 10 } },
      sort: { price: -1, _id: 1 },
    });
    expect(dear.body).toEqual([
      { _id: "c", price: price("100.5") },
      { _id: "a", price: price("10.05") },
      { _id: "b", price: price("10.05") },
    ]);
  });

  it("keeps Int64 values beyond 2^53 exact", async () => {
    await action("insertOne", { ...ns("longs"), document: { _id: "big", n: { $numberLong: "9007199254740993" } } });
    expect((await action("findOne", { ...ns("longs"), query: { _id: "big" } })).body.n).toEqual({
      $numberLong: "9007199254740993",
    });
  });

  it("refuses broken Extended JSON in arguments", async () => {
    const { response, body } = await action("insertOne", { ...ns("x"), document: { _id: { $oid: "not-hex" } } });
    expect(response.statusCode).toBe(400);
    expect(body.error).toMatch(/Extended JSON/);
    // Values the bson library would read as 0 or as an invalid date (which cannot be written back).
    for (const document of [{ n: { $numberInt: "abc" } }, { n: { $numberLong: "1e3" } }, { at: { $date: "soon" } }]) {
      const refused = await action("insertOne", { ...ns("x"), document });
      expect(refused.response.statusCode, JSON.stringify(document)).toBe(400);
      expect(refused.body.error).toMatch(
        /invalid Extended JSON in arguments: (strconv\.ParseInt: parsing "(abc|1e3)": invalid syntax|invalid \$date value string: soon)$/,
      );
    }
    expect((await action("count", { ...ns("x"), query: {} })).body).toEqual({ $numberLong: "0" });
  });

  it("applies the rules: other users' notes are invisible and untouchable, writes stay within reach", async () => {
    const notes = { database: "notes-app", collection: "notes" };
    const other = await anonymousLogin(app, appId);
    await action("insertOne", { ...notes, document: { owner_id: userId, title: "mine" } });
    await action("insertOne", { ...notes, document: { owner_id: other.user_id, title: "theirs" } }, other.access_token);
    const mine = await action("find", { ...notes, query: {} });
    expect(mine.body.map((n: { title: string }) => n.title)).toEqual(["mine"]);
    expect((await action("count", { ...notes, query: {} })).body).toEqual({ $numberLong: "1" });
    const forged = await action("insertOne", { ...notes, document: { owner_id: other.user_id, title: "forged" } });
    expect(forged.body).toMatchObject({ error: "insert not permitted", error_code: "MongoDBError" });
    const steal = await action("updateMany", { ...notes, query: {}, update: { $set: { title: "stolen" } } });
    expect(steal.body.matchedCount).toEqual({ $numberInt: "1" });
    const giveAway = await action("updateOne", {
      ...notes,
      query: { title: "stolen" },
      update: { $set: { owner_id: other.user_id } },
    });
    expect(giveAway.body.error).toBe("update not permitted");
    expect((await action("deleteMany", { ...notes, query: {} }, other.access_token)).body).toEqual({
      deletedCount: { $numberInt: "1" },
    });
    expect((await action("find", { ...notes, query: {} })).body.map((n: { title: string }) => n.title)).toEqual([
      "stolen",
    ]);
  });

  it("the default app (the template) opens only the web app's notes and profiles, each to its owner", async () => {
    const templateApp = await newApp(app);
    const user = await anonymousLogin(app, templateApp);
    const run = (name: string, argument: Record<string, unknown>) =>
      mongoAction(app, templateApp, user.access_token, name, argument);
    const note = await run("insertOne", {
      database: "notes-app",
      collection: "notes",
      document: { owner_id: user.user_id, title: "mine" },
    });
    expect(note.response.statusCode).toBe(200);
    const profile = await run("updateOne", {
      database: "notes-app",
      collection: "profiles",
      query: { user_id: user.user_id },
      update: { $set: { user_id: user.user_id, display_name: "Ada" } },
      upsert: true,
    });
    expect(profile.response.statusCode).toBe(200);
    // Everything else has no rule: refused, whatever the action, the database or the collection.
    const elsewhere = [
      ["insertOne", { database: "notes-app", collection: "secrets", document: { a: 1 } }],
      ["find", { database: "notes-app", collection: "secrets", query: {} }],
      ["find", { database: "shop", collection: "orders", query: {} }],
      ["deleteMany", { database: "admin", collection: "users", query: {} }],
      ["aggregate", { database: "shop", collection: "orders", pipeline: [] }],
    ] as const;
    for (const [name, argument] of elsewhere) {
      const refused = await run(name, argument);
      expect(refused.response.statusCode, `${name} ${argument.database}.${argument.collection}`).toBe(400);
      expect(refused.body).toMatchObject({
        error: `no rule exists for namespace '${argument.database}.${argument.collection}'`,
        error_code: "MongoDBError",
      });
    }
  });
});
