/**
 * Field-level permissions of embedded fields (the reference's role pattern "Field-level
 * Permissions for Embedded Documents", decision 0029): a role reads and writes some fields of an
 * embedded document only; a field's own permission overrides its embedded fields'. Reads return
 * what a projection of the granted paths would, writes and inserts may touch granted paths only,
 * and change events show what the watcher may read. On both stores.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, call, emailUser, mongoAction, newApp } from "../helpers/app.ts";
import { listening } from "../helpers/listen.ts";
import { openWatch } from "../helpers/watch.ts";

let app: FastifyInstance;
let url: string;
let appId: string;
let user: { access_token: string; user_id: string };
let admin: { access_token: string; user_id: string };

const people = { database: "hr", collection: "people" };

beforeAll(async () => {
  ({ app, url } = await listening({ logLevel: "error" }));
  appId = await newApp(app, {
    rules: {
      "hr.people": {
        roles: [
          { name: "admin", apply_when: { "%%user.data.email": "admin@example.com" }, read: true, write: true },
          {
            name: "canReadEmbeddedField",
            apply_when: {},
            insert: true,
            fields: {
              _id: { read: true },
              name: { read: true },
              address: { fields: { city: { read: true }, geo: { fields: { lat: { read: true, write: true } } } } },
              // The field's own permission overrides its embedded fields'.
              notes: { read: true, write: true, fields: { secret: { read: false } } },
            },
            additional_fields: {},
          },
        ],
      },
    },
  });
  user = await anonymousLogin(app, appId);
  admin = await emailUser(app, appId, "admin@example.com");
  const seeded = await call(app, "insertDocuments", {
    method: "POST",
    url: `/_mock/v1/apps/${appId}/data/hr/people`,
    payload: {
      documents: [
        {
          name: "Ann",
          salary: { $numberInt: "100" },
          address: {
            street: "1 Main",
            city: "Oslo",
            geo: { lat: { $numberDouble: "59.9" }, lng: { $numberDouble: "10.7" } },
          },
          notes: { secret: "s", text: "t" },
        },
      ],
    },
  });
  expect(seeded.response.statusCode).toBe(201);
});
afterAll(() => app.close());

const action = (name: string, argument: Record<string, unknown>) =>
  mongoAction(app, appId, user.access_token, name, { ...people, ...argument });

describe("permissions of embedded fields", () => {
  it("reads the embedded fields a role reads, and a field whose own permission covers it whole", async () => {
    const expected = {
      name: "Ann",
      address: { city: "Oslo", geo: { lat: { $numberDouble: "59.9" } } },
      notes: { secret: "s", text: "t" },
    };
    const found = await action("find", { query: {}, project: { _id: 0 } });
    expect(found.response.statusCode).toBe(200);
    expect(found.body).toEqual([expected]);
    expect((await action("findOne", { query: { name: "Ann" }, project: { _id: 0 } })).body).toEqual(expected);
    const aggregated = await action("aggregate", { pipeline: [{ $project: { _id: 0, address: 1 } }] });
    expect(aggregated.body).toEqual([{ address: expected.address }]);
  });

  it("writes the embedded fields a role writes, and refuses a change or an insert of any other", async () => {
    const set = (update: Record<string, unknown>) => action("updateOne", { query: { name: "Ann" }, update });
    expect((await set({ $set: { "address.geo.lat": 60 } })).body).toMatchObject({ modifiedCount: { $numberInt: "1" } });
    expect((await set({ $set: { "notes.secret": "new" } })).body).toMatchObject({ modifiedCount: { $numberInt: "1" } });
    for (const update of [
      { $set: { "address.city": "Bergen" } },
      { $set: { "address.geo": { lat: 1 } } },
      { $unset: { "address.street": "" } },
      { $set: { salary: 1 } },
    ]) {
      expect((await set(update)).body, JSON.stringify(update)).toMatchObject({
        error: "update not permitted",
        error_code: "MongoDBError",
      });
    }
    const insert = (document: Record<string, unknown>) => action("insertOne", { document });
    // (An insert writes every field: this role writes `address.geo.lat` and `notes`.)
    expect((await insert({ address: { geo: { lat: 1 } }, notes: { text: "new" } })).response.statusCode).toBe(200);
    for (const document of [{ address: { city: "Rome" } }, { name: "Cid" }, { address: { geo: { lat: 1, lng: 2 } } }]) {
      expect((await insert(document)).body, JSON.stringify(document)).toMatchObject({ error: "insert not permitted" });
    }
    // Nothing refused was written.
    const stored = await mongoAction(app, appId, admin.access_token, "find", {
      ...people,
      query: {},
      project: { _id: 0 },
    });
    expect(stored.body).toEqual([
      {
        name: "Ann",
        salary: { $numberInt: "100" },
        address: { street: "1 Main", city: "Oslo", geo: { lat: { $numberInt: "60" }, lng: { $numberDouble: "10.7" } } },
        notes: { secret: "new", text: "t" },
      },
      { address: { geo: { lat: { $numberInt: "1" } } }, notes: { text: "new" } },
    ]);
  });

  it("shows a watcher the embedded fields it may read of a change", async () => {
    const stream = await openWatch(url, appId, user.access_token, people);
    try {
      expect(stream.response.status).toBe(200);
      // (Written by a user whose role writes documents whole.)
      const written = await mongoAction(app, appId, admin.access_token, "updateOne", {
        ...people,
        query: { name: "Ann" },
        update: { $set: { address: { city: "Bergen", street: "2 Main" }, salary: 5 } },
      });
      expect(written.body).toMatchObject({ modifiedCount: { $numberInt: "1" } });
      const block = await stream.next();
      const event = JSON.parse((block ?? "").replace(/^data: /, ""));
      expect(event.fullDocument).toMatchObject({ name: "Ann", address: { city: "Bergen" } });
      expect(event.fullDocument.address).toEqual({ city: "Bergen" });
      expect(event.fullDocument.salary).toBeUndefined();
      expect(event.updateDescription).toMatchObject({
        updatedFields: { address: { city: "Bergen" } },
        removedFields: [],
      });
    } finally {
      stream.close();
    }
  });
});
