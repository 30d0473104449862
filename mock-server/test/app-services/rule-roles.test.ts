/**
 * An app brought over with the roles of its `rules.json`: each document's role is the first whose
 * `apply_when` holds for the caller and the document (the caller's custom data included), no role
 * means no access, and rules this server does not evaluate refuse the namespace's actions.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, call, mongoAction, newApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
let appId: string;
let ann: { access_token: string; user_id: string };
let bob: { access_token: string; user_id: string };
let cid: { access_token: string; user_id: string };

const staff = { database: "hr", collection: "staff" };

beforeAll(async () => {
  app = await testApp({ logLevel: "error", allowFunctionSource: true });
  appId = await newApp(app, {
    functions: {
      offices: {
        source:
          "exports = () => context.services.get('mongodb-atlas').db('hr').collection('offices').find({}).toArray();",
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
      "hr.secret": { roles: [{ name: "titles", apply_when: {}, fields: { title: { read: true } } }] },
      "hr.offices": {
        roles: [{ name: "from here", apply_when: { "%%request.remoteIPAddress": "127.0.0.1" }, read: true }],
      },
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
  await seed("people", [{ user_id: bob.user_id, manages: [ann.user_id] }]);
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
    const partial = await action(ann, "find", { database: "hr", collection: "secret", query: {} });
    expect(partial.response.statusCode).toBe(400);
    expect(partial.body).toEqual({
      error:
        "the rules of 'hr.secret' cannot be evaluated here: the field-level permissions of role 'titles' (some fields, not the document)",
      error_code: "MongoDBError",
      link: expect.any(String),
    });
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
});
