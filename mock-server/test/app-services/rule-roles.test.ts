/**
 * An app brought over with the roles of its `rules.json`: each document's role is the first whose
 * `apply_when` holds for the caller and the document (the caller's custom data included), no role
 * means no access, and rules this server does not evaluate refuse the namespace's actions.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, call, mongoAction, newApp } from "../helpers/app.ts";
import { listening } from "../helpers/listen.ts";
import { openWatch } from "../helpers/watch.ts";

let app: FastifyInstance;
let url: string;
let appId: string;
let ann: { access_token: string; user_id: string };
let bob: { access_token: string; user_id: string };
let cid: { access_token: string; user_id: string };

const staff = { database: "hr", collection: "staff" };

beforeAll(async () => {
  ({ app, url } = await listening({ logLevel: "error", allowFunctionSource: true }));
  appId = await newApp(app, {
    functions: {
      offices: {
        source:
          "exports = () => context.services.get('mongodb-atlas').db('hr').collection('offices').find({}).toArray();",
      },
      // Called by rules (`%function`): private, one as system (it reads a collection without rules).
      isReviewer: {
        source: `exports = async (id) => context.user.id === id &&
          (await context.services.get('mongodb-atlas').db('hr').collection('people').count({ user_id: id, reviews: true })) > 0;`,
        private: true,
        runAsSystem: true,
      },
      unavailable: { source: "exports = () => { throw new Error('directory unavailable'); };", private: true },
      // As the caller: it counts the collection whose rule calls it, so the rule calls it again.
      loops: {
        source:
          "exports = async () => (await context.services.get('mongodb-atlas').db('hr').collection('loop').count({})) >= 0;",
        private: true,
      },
    },
    customUserData: { enabled: true, database: "hr", collection: "people", userIdField: "user_id" },
    rules: {
      "hr.staff": {
        roles: [
          {
            name: "Manager",
            apply_when: { user_id: "%%user.custom_data.manages" },
            insert: true,
            delete: true,
            read: true,
            write: true,
          },
          {
            name: "Employee",
            apply_when: { user_id: "%%user.id" },
            insert: false,
            delete: false,
            read: true,
            write: true,
          },
        ],
        filters: [],
      },
      "hr.secret": {
        roles: [{ name: "titles", apply_when: {}, insert: true, fields: { title: { read: true, write: true } } }],
      },
      // Insert-only (the documentation's `%%prevRoot` pattern): entries are added, never changed.
      "hr.log": {
        roles: [
          { name: "append", apply_when: {}, insert: true, read: true, write: { "%%prevRoot": { "%exists": false } } },
        ],
      },
      // Rules without roles that insert and do not write: insert-only too.
      "hr.inbox": { read: true, insert: true },
      // Rules that let a user read nothing.
      "hr.sealed": { read: false, insert: true },
      "hr.nested": {
        roles: [
          { name: "parts", apply_when: {}, fields: { address: { fields: { city: { read: { "%%user.id": "x" } } } } } },
        ],
      },
      // Each person reads their own document whole, the others' names; nobody reads `internal`.
      "hr.directory": {
        roles: [
          { name: "self", apply_when: { user_id: "%%user.id" }, read: true, write: true },
          {
            name: "colleague",
            apply_when: {},
            fields: { _id: { read: true }, name: { read: true } },
            additional_fields: {},
          },
        ],
        filters: [{ name: "no internals", apply_when: {}, query: {}, projection: { internal: 0 } }],
      },
      "hr.offices": {
        roles: [{ name: "from here", apply_when: { "%%request.remoteIPAddress": "127.0.0.1" }, read: true }],
      },
      "hr.reviews": {
        roles: [
          {
            name: "reviewer",
            apply_when: { "%%true": { "%function": { name: "isReviewer", arguments: ["%%user.id"] } } },
            read: true,
            write: true,
          },
          { name: "author", apply_when: { author: "%%user.id" }, read: true },
        ],
      },
      "hr.drafts": {
        roles: [
          {
            apply_when: { "%%true": { "%function": { name: "isReviewer", arguments: ["%%root.author"] } } },
            read: true,
          },
        ],
      },
      "hr.broken": { roles: [{ apply_when: { "%%true": { "%function": { name: "unavailable" } } }, read: true }] },
      "hr.loop": { roles: [{ apply_when: { "%%true": { "%function": { name: "loops" } } }, read: true }] },
    },
  });
  [ann, bob, cid] = [
    await anonymousLogin(app, appId),
    await anonymousLogin(app, appId),
    await anonymousLogin(app, appId),
  ];
  const seed = (collection: string, documents: unknown[]) =>
    call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/hr/${collection}`,
      payload: { documents },
    });
  await seed("people", [{ user_id: bob.user_id, manages: [ann.user_id], reviews: true }]);
  await seed(
    "directory",
    [ann, bob, cid].map(({ user_id }, i) => ({
      user_id,
      name: ["Ann", "Bob", "Cid"][i],
      salary: { $numberInt: String((i + 1) * 100) },
      internal: "x",
    })),
  );
  await seed(
    "reviews",
    [ann, bob, cid].map(({ user_id }) => ({ author: user_id })),
  );
  await seed("sealed", [{ author: ann.user_id }]);
  await seed(
    "staff",
    [ann, bob, cid].map(({ user_id }, i) => ({ user_id, salary: { $numberInt: String(i + 1) } })),
  );
});
afterAll(() => app.close());

const action = (as: { access_token: string }, name: string, argument: Record<string, unknown>) =>
  mongoAction(app, appId, as.access_token, name, argument);
const owners = (body: { user_id: string }[]) => body.map((doc) => doc.user_id).sort();

describe("roles of an exported app", () => {
  it("shows each user the documents a role of theirs applies to, a manager's custom data included", async () => {
    expect(owners((await action(ann, "find", { ...staff, query: {} })).body)).toEqual([ann.user_id]);
    expect(owners((await action(bob, "find", { ...staff, query: {} })).body)).toEqual(
      [ann.user_id, bob.user_id].sort(),
    );
    expect((await action(cid, "count", { ...staff, query: {} })).body).toEqual({ $numberLong: "1" });
  });

  it("lets a document's role decide writes, inserts and deletes", async () => {
    const raise = (as: typeof ann, of: string) =>
      action(as, "updateOne", { ...staff, query: { user_id: of }, update: { $inc: { salary: 10 } } });
    expect((await raise(ann, ann.user_id)).body.matchedCount).toEqual({ $numberInt: "1" });
    expect((await raise(ann, bob.user_id)).body.matchedCount).toEqual({ $numberInt: "0" });
    expect((await raise(bob, ann.user_id)).body.matchedCount).toEqual({ $numberInt: "1" });

    // An employee inserts nothing; a manager only documents a Manager role applies to.
    const hire = (as: typeof ann, user_id: string) => action(as, "insertOne", { ...staff, document: { user_id } });
    expect((await hire(ann, ann.user_id)).body).toMatchObject({
      error_code: "MongoDBError",
      error: "insert not permitted",
    });
    expect((await hire(bob, "someone")).body).toMatchObject({ error: "insert not permitted" });
    expect((await hire(bob, ann.user_id)).response.statusCode).toBe(200);

    const fire = (as: typeof ann, of: string) => action(as, "deleteMany", { ...staff, query: { user_id: of } });
    expect((await fire(ann, ann.user_id)).body).toMatchObject({ error: "delete not permitted" });
    expect((await fire(bob, bob.user_id)).body).toEqual({ deletedCount: { $numberInt: "0" } });
    expect((await fire(bob, ann.user_id)).body).toEqual({ deletedCount: { $numberInt: "2" } });
  });

  it("refuses a namespace whose rules it does not evaluate, saying what, instead of granting anything", async () => {
    const nested = await action(ann, "find", { database: "hr", collection: "nested", query: {} });
    expect(nested.response.statusCode).toBe(400);
    expect(nested.body).toEqual({
      error:
        "the rules of 'hr.nested' cannot be evaluated here: the read permission of field 'address.city' of role 'parts' (not true or false)",
      error_code: "MongoDBError",
      link: expect.any(String),
    });
  });

  it("adds to an insert-only collection and changes nothing in it", async () => {
    const log = { database: "hr", collection: "log" };
    expect((await action(ann, "insertOne", { ...log, document: { entry: "one" } })).response.statusCode).toBe(200);
    const change = await action(ann, "updateOne", { ...log, query: {}, update: { $set: { entry: "two" } } });
    expect(change.body).toMatchObject({ error: "update not permitted", error_code: "MongoDBError" });
    expect((await action(ann, "find", { ...log, query: {}, project: { _id: 0 } })).body).toEqual([{ entry: "one" }]);
  });

  it("upserts into a collection its role inserts into but does not write, and changes nothing there", async () => {
    for (const collection of ["inbox", "log"]) {
      const at = { database: "hr", collection };
      const upsert = (name: string, argument: Record<string, unknown>) =>
        action(ann, name, { ...at, ...argument, upsert: true });
      const first = await upsert("updateOne", { query: { key: "a" }, update: { $set: { n: 1 } } });
      expect(first.response.statusCode).toBe(200);
      expect(first.body).toMatchObject({ matchedCount: { $numberInt: "0" }, upsertedId: expect.anything() });
      const again = await upsert("updateOne", { query: { key: "a" }, update: { $set: { n: 2 } } });
      expect(again.response.statusCode).toBe(400);
      expect(again.body).toMatchObject({ error: "update not permitted", error_code: "MongoDBError" });
      const replaced = await upsert("findOneAndReplace", { filter: { key: "b" }, update: { key: "b", n: 3 } });
      expect(replaced.response.statusCode).toBe(200);
      expect(
        (await upsert("findOneAndUpdate", { filter: { key: "b" }, update: { $inc: { n: 1 } } })).body,
      ).toMatchObject({ error: "update not permitted" });
      // Without upsert, a write is refused as before, matching or not.
      const plain = await action(ann, "updateOne", { ...at, query: { key: "z" }, update: { $set: { n: 1 } } });
      expect(plain.body).toMatchObject({ error: "update not permitted" });
      expect(
        (await action(ann, "find", { ...at, query: { key: { $exists: true } }, project: { _id: 0 } })).body,
      ).toEqual([
        { key: "a", n: { $numberInt: "1" } },
        { key: "b", n: { $numberInt: "3" } },
      ]);
    }
  });

  it("writes only the fields a document's role writes, and inserts documents of those fields", async () => {
    await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/hr/secret`,
      payload: { documents: [{ title: "plan", body: "hidden" }] },
    });
    const secret = { database: "hr", collection: "secret" };
    expect((await action(ann, "find", { ...secret, query: {} })).body).toEqual([{ title: "plan" }]);
    const update = (update: unknown) => action(ann, "updateOne", { ...secret, query: { title: "plan" }, update });
    const refusedUpdate = await update({ $set: { title: "plan", body: "mine" } });
    expect(refusedUpdate.response.statusCode).toBe(400);
    expect(refusedUpdate.body).toMatchObject({ error: "update not permitted", error_code: "MongoDBError" });
    expect((await update({ $unset: { body: "" } })).body).toMatchObject({ error: "update not permitted" });
    // A replacement may leave the other fields as they were, not drop them.
    const replace = (replacement: unknown) =>
      action(ann, "findOneAndReplace", { ...secret, filter: { title: "plan" }, update: replacement });
    expect((await replace({ title: "plan" })).body).toMatchObject({ error: "update not permitted" });
    expect((await update({ $set: { title: "plans" } })).body.modifiedCount).toEqual({ $numberInt: "1" });
    expect(
      (
        await action(ann, "findOneAndReplace", {
          ...secret,
          filter: { title: "plans" },
          update: { title: "plan", body: "hidden" },
        })
      ).body,
    ).toEqual({ title: "plans" });
    const insert = (document: unknown) => action(ann, "insertOne", { ...secret, document });
    expect((await insert({ title: "new" })).response.statusCode).toBe(200);
    expect((await insert({ title: "new", body: "x" })).body).toMatchObject({ error: "insert not permitted" });
    const upsert = (set: unknown) =>
      action(ann, "updateOne", { ...secret, query: { title: "other" }, update: { $set: set }, upsert: true });
    expect((await upsert({ body: "x" })).body).toMatchObject({ error: "insert not permitted" });
    expect((await upsert({ title: "other" })).body.upsertedId).toBeDefined();
    expect((await action(ann, "count", { ...secret, query: {} })).body).toEqual({ $numberLong: "3" });
  });

  it("returns the fields a document's role reads, as the filters project them, to every kind of read", async () => {
    const directory = { database: "hr", collection: "directory" };
    const byName = (docs: { name: string }[]) => [...docs].sort((a, b) => a.name.localeCompare(b.name));
    const found = (await action(ann, "find", { ...directory, query: {} })).body;
    expect(byName(found)).toEqual([
      { _id: expect.anything(), user_id: ann.user_id, name: "Ann", salary: { $numberInt: "100" } },
      { _id: expect.anything(), name: "Bob" },
      { _id: expect.anything(), name: "Cid" },
    ]);
    // The caller's projection applies to what the role shows.
    expect(
      (await action(ann, "findOne", { ...directory, query: { name: "Bob" }, project: { salary: 1 } })).body,
    ).toEqual({ _id: expect.anything() });
    // A pipeline sees only what the caller may read: Ann's salary is the only one summed.
    const total = await action(ann, "aggregate", {
      ...directory,
      pipeline: [{ $group: { _id: null, total: { $sum: "$salary" }, internal: { $max: "$internal" } } }],
    });
    expect(total.body).toEqual([{ _id: null, total: { $numberInt: "100" }, internal: null }]);
    // Its first $match too: the salaries Ann may not read are not there for it to see.
    for (const rest of [[{ $sort: { name: 1 } }], [{ $limit: 5 }], []]) {
      const unpaid = await action(ann, "aggregate", {
        ...directory,
        pipeline: [{ $match: { salary: { $exists: false } } }, ...rest, { $project: { _id: 0, name: 1 } }],
      });
      expect(byName(unpaid.body), JSON.stringify(rest)).toEqual([{ name: "Bob" }, { name: "Cid" }]);
    }
    // A write's answer: the document as the filters project it.
    const raised = await action(bob, "findOneAndUpdate", {
      ...directory,
      filter: { user_id: bob.user_id },
      update: { $inc: { salary: 1 } },
      returnNewDocument: true,
    });
    expect(raised.body).toEqual({
      _id: expect.anything(),
      user_id: bob.user_id,
      name: "Bob",
      salary: { $numberInt: "201" },
    });
  });

  it("sends a change stream the fields of a change its document's role reads", async () => {
    const directory = { database: "hr", collection: "directory" };
    const stream = await openWatch(url, appId, ann.access_token, directory);
    try {
      expect(stream.response.status).toBe(200);
      await action(bob, "updateOne", {
        ...directory,
        query: { user_id: bob.user_id },
        update: { $set: { name: "Robert", internal: "changed" }, $unset: { salary: "" } },
      });
      const block = await stream.next();
      const event = JSON.parse((block ?? "").replace(/^data: /, ""));
      expect(event.fullDocument).toEqual({ _id: expect.anything(), name: "Robert" });
      expect(event.updateDescription).toMatchObject({ updatedFields: { name: "Robert" }, removedFields: [] });
    } finally {
      stream.close();
    }
  });

  it("reads %%request of the client's call, and of a function's that the client called", async () => {
    await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/hr/offices`,
      payload: { documents: [{ city: "Lyon" }] },
    });
    const offices = { database: "hr", collection: "offices", query: {} };
    const from = (remoteAddress: string) =>
      app.inject({
        method: "POST",
        url: `/api/client/v2.0/app/${appId}/functions/call`,
        headers: { authorization: `Bearer ${ann.access_token}` },
        payload: { name: "find", service: "mongodb-atlas", arguments: [offices] },
        remoteAddress,
      });
    expect((await from("127.0.0.1")).json()).toEqual([{ _id: expect.anything(), city: "Lyon" }]);
    expect((await from("192.0.2.7")).json()).toEqual([]);
    const throughFunction = (remoteAddress: string) =>
      app.inject({
        method: "POST",
        url: `/api/client/v2.0/app/${appId}/functions/call`,
        headers: { authorization: `Bearer ${ann.access_token}` },
        payload: { name: "offices", arguments: [] },
        remoteAddress,
      });
    expect((await throughFunction("127.0.0.1")).json()).toEqual([{ _id: expect.anything(), city: "Lyon" }]);
    expect((await throughFunction("192.0.2.7")).json()).toEqual([]);
  });

  it("calls a role's %function as the caller and applies what it returned, to a change stream too", async () => {
    const reviews = { database: "hr", collection: "reviews" };
    const authors = async (as: typeof ann) =>
      ((await action(as, "find", { ...reviews, query: {} })).body as { author: string }[])
        .map((doc) => doc.author)
        .sort();
    // Bob's custom data says he reviews: every document; Ann's role is the author's.
    expect(await authors(bob)).toEqual([ann.user_id, bob.user_id, cid.user_id].sort());
    expect(await authors(ann)).toEqual([ann.user_id]);
    const edit = (as: typeof ann) =>
      action(as, "updateMany", { ...reviews, query: {}, update: { $set: { seen: true } } });
    expect((await edit(ann)).body).toMatchObject({ error: "update not permitted", error_code: "MongoDBError" });
    expect((await edit(bob)).body.matchedCount).toEqual({ $numberInt: "3" });
    // A change stream's rule is decided by the same call, when it opens.
    const stream = await openWatch(url, appId, ann.access_token, reviews);
    try {
      expect(stream.response.status).toBe(200);
    } finally {
      stream.close();
    }
  });

  it("joins other collections as their own rules let the caller read them", async () => {
    // (Each reads their own document of the directory.)
    const directory = { database: "hr", collection: "directory" };
    const own = (as: typeof ann) => ({ $match: { user_id: as.user_id } });
    // Roles with field permissions: a join reads the documents as a find of them shows them to
    // the caller — Ann's own salary, the others' names; nobody's `internal`.
    const people = await action(ann, "aggregate", {
      ...directory,
      pipeline: [own(ann), { $lookup: { from: "directory", pipeline: [{ $sort: { name: 1 } }], as: "people" } }],
    });
    const shown = (await action(ann, "find", { database: "hr", collection: "directory", query: {}, sort: { name: 1 } }))
      .body as { name: string; user_id?: string; salary?: unknown; internal?: unknown }[];
    expect(people.body).toEqual([expect.objectContaining({ people: shown })]);
    expect(shown).toHaveLength(3);
    expect(shown.filter((doc) => doc.salary !== undefined)).toEqual([
      expect.objectContaining({ user_id: ann.user_id }),
    ]);
    expect(shown.filter((doc) => doc.internal !== undefined)).toEqual([]);
    // Roles that call a function as the caller: Bob reviews (all three), Ann authored one.
    const reviewed = (as: typeof ann, stage: Record<string, unknown>) =>
      action(as, "aggregate", {
        ...directory,
        pipeline: [own(as), stage, { $project: { _id: 0, n: { $size: "$r" } } }],
      });
    const lookup = { $lookup: { from: "reviews", localField: "salary", foreignField: "none", as: "r" } };
    const all = { $lookup: { from: "reviews", pipeline: [], as: "r" } };
    expect((await reviewed(bob, all)).body).toEqual([{ n: { $numberInt: "3" } }]);
    expect((await reviewed(ann, all)).body).toEqual([{ n: { $numberInt: "1" } }]);
    expect((await reviewed(ann, lookup)).body).toEqual([{ n: { $numberInt: "0" } }]);
    // $unionWith, and a $lookup within it, read the same way.
    const union = await action(ann, "aggregate", {
      ...staff,
      pipeline: [
        { $match: { _id: null } },
        {
          $unionWith: {
            coll: "directory",
            pipeline: [
              { $lookup: { from: "reviews", localField: "user_id", foreignField: "author", as: "mine" } },
              { $project: { _id: 0, name: 1, salary: 1, reviews: { $size: "$mine" } } },
            ],
          },
        },
        { $sort: { name: 1 } },
      ],
    });
    expect(union.body).toEqual(
      shown.map(({ name, salary, user_id }) => ({
        name,
        ...(salary === undefined ? {} : { salary }),
        reviews: { $numberInt: user_id === ann.user_id ? "1" : "0" },
      })),
    );
    // A collection the rules let the caller read nothing of joins nothing.
    const sealed = await action(ann, "aggregate", {
      ...directory,
      pipeline: [
        own(ann),
        { $unionWith: "sealed" },
        { $lookup: { from: "sealed", pipeline: [], as: "sealed" } },
        { $project: { _id: 0, name: 1, sealed: 1 } },
      ],
    });
    expect(sealed.body).toEqual([{ name: "Ann", sealed: [] }]);
    // A collection without rules is refused as a read of it is; so is one whose rules fail.
    const refused = async (from: string) =>
      (await action(ann, "aggregate", { ...staff, pipeline: [{ $lookup: { from, pipeline: [], as: "x" } }] })).body;
    expect(await refused("people")).toMatchObject({
      error: "no rule exists for namespace 'hr.people'",
      error_code: "MongoDBError",
    });
    expect(await refused("broken")).toMatchObject({ error_code: "FunctionExecutionError" });
  });

  it("keeps the stages kept from users out of the pipelines its joins run", async () => {
    const refusals = [
      [{ $lookup: { from: "directory", pipeline: [{ $facet: { n: [{ $count: "n" }] } }], as: "x" } }, "$facet"],
      [{ $unionWith: { coll: "directory", pipeline: [{ $collStats: { count: {} } }] } }, "$collStats"],
      [
        {
          $unionWith: {
            coll: "directory",
            pipeline: [{ $lookup: { from: "reviews", pipeline: [{ $indexStats: {} }], as: "x" } }],
          },
        },
        "$indexStats",
      ],
      [
        {
          $lookup: {
            from: "directory",
            pipeline: [{ $set: { f: { $function: { body: "function() { return 1 }", args: [], lang: "js" } } } }],
            as: "x",
          },
        },
        "$function",
      ],
    ] as const;
    for (const [stage, name] of refusals) {
      const { response, body } = await action(ann, "aggregate", { ...staff, pipeline: [stage] });
      expect(response.statusCode, name).toBe(400);
      expect(body, name).toMatchObject({ error: `${name} is not allowed in this context`, error_code: "MongoDBError" });
    }
  });

  it("refuses a %function given the document's fields, and answers a rule function's failure", async () => {
    const drafts = await action(ann, "find", { database: "hr", collection: "drafts", query: {} });
    expect(drafts.response.statusCode).toBe(400);
    expect(drafts.body).toMatchObject({
      error:
        "the rules of 'hr.drafts' cannot be evaluated here: %function: the expansion %%root.author is not available here",
      error_code: "MongoDBError",
    });
    const refusedStream = await openWatch(url, appId, ann.access_token, { database: "hr", collection: "drafts" });
    expect(refusedStream.response.status).toBe(400);
    expect(await refusedStream.response.json()).toMatchObject({ error_code: "MongoDBError" });

    const broken = await action(ann, "find", { database: "hr", collection: "broken", query: {} });
    expect(broken.response.statusCode).toBe(400);
    expect(broken.body).toMatchObject({ error_code: "FunctionExecutionError" });
    expect(broken.body.error).toMatch(/directory unavailable/);
  });

  it("stops a rule whose function acts on the rule's own collection, a few calls deep", async () => {
    const loop = await action(ann, "find", { database: "hr", collection: "loop", query: {} });
    expect(loop.response.statusCode).toBe(400);
    expect(loop.body.error).toMatch(
      /the rules of 'hr.loop' cannot be evaluated here: %function, called from the rules of a function's action 3 deep/,
    );
  });
});
