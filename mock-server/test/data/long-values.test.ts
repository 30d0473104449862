/**
 * Values as long as a client likes where MongoDB sets no limit — an `_id` (MongoDB has had no
 * index key limit since 4.2), a long `$in` list — and as long as the server takes where it sets
 * one (decision 0002): an identity id from a custom function (1,024 characters; past 256 the
 * PostgreSQL store keys it by its hash) and an API key's name (256; unique by its hash).
 * Random text, so a database cannot compress it under an index's entry size. Runs on both stores.
 */

import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maxApiKeyNameLength } from "../../src/app-services/api-keys/create-api-key.ts";
import { maxIdentityIdLength } from "../../src/store/store.ts";
import { anonymousLogin, base, bearer, call, emailUser, mongoAction, newOpenApp, testApp } from "../helpers/app.ts";

const random = (chars: number) => randomBytes(chars / 2).toString("hex");

let app: FastifyInstance;
let appId: string;
let token: string;
beforeAll(async () => {
  app = await testApp();
  appId = await newOpenApp(app, {
    providers: { "custom-function": { enabled: true, authFunctionName: "authenticate" } },
  });
  token = (await anonymousLogin(app, appId)).access_token;
});
afterAll(() => app.close());

const action = (name: string, argument: Record<string, unknown>) =>
  mongoAction(app, appId, token, name, { database: "db", collection: "long", ...argument });
const computed = (name: string, argument: Record<string, unknown>) =>
  mongoAction(app, appId, token, name, { database: "db", collection: "computed", ...argument });

describe("long values", () => {
  it("a computed integer past 2^53: its exact digits, the same value on every store", async () => {
    // 1.5 × 2^61 = 3 × 2^60, a double JavaScript writes "3458764513820541000" (72 more).
    await computed("insertOne", { document: { _id: "big" } });
    await computed("updateOne", { query: { _id: "big" }, update: [{ $set: { n: { $multiply: [1.5, 2 ** 61] } } }] });
    const exact = { $numberLong: "3458764513820540928" };
    expect((await computed("findOne", { query: { _id: "big" } })).body).toEqual({ _id: "big", n: exact });
    // Read back from its stored text, it is still the value computed.
    expect((await computed("count", { query: { n: exact } })).body).toEqual({ $numberLong: "1" });
    expect((await computed("count", { query: { n: { $eq: { $numberDouble: "3458764513820540928" } } } })).body).toEqual(
      {
        $numberLong: "1",
      },
    );
    // Past Int64's largest, a product is a double (as MongoDB's): 2^63 is no Int64's text.
    await computed("updateOne", {
      query: { _id: "big" },
      update: [{ $set: { n: { $multiply: [{ $numberLong: "4611686018427387904" }, 2] } } }],
    });
    const past = await computed("aggregate", {
      pipeline: [{ $match: { _id: "big" } }, { $project: { n: 1, type: { $type: "$n" } } }],
    });
    expect(past.body).toEqual([{ _id: "big", n: { $numberDouble: "9223372036854776000" }, type: "double" }]);
    // And a double as an operand: minus 1 a double (not the Int64 2^63 - 1), as a decimal 15 digits.
    const operand = await computed("aggregate", {
      pipeline: [
        { $match: { _id: "big" } },
        {
          $project: {
            _id: 0,
            less: { $subtract: ["$n", 1] },
            type: { $type: { $subtract: ["$n", 1] } },
            decimal: { $toDecimal: "$n" },
          },
        },
      ],
    });
    expect(operand.body).toEqual([
      {
        less: { $numberDouble: "9223372036854776000" },
        type: "double",
        decimal: { $numberDecimal: "9.22337203685478E+18" },
      },
    ]);
  });

  it("an _id of 20,000 characters (and one of 300): inserted once, found, updated, deleted", async () => {
    const long = random(20_000);
    const medium = random(300);
    const object = { key: random(10_000) };
    const inserted = await action("insertMany", {
      documents: [
        { _id: long, n: 1 },
        { _id: medium, n: 2 },
        { _id: object, n: 3 },
      ],
    });
    expect(inserted.body.insertedIds).toEqual([long, medium, object]);
    const again = await action("insertOne", { document: { _id: long } });
    expect(again.body.error).toMatch(/^Duplicate key error/);
    for (const [id, n] of [
      [long, 1],
      [medium, 2],
      [object, 3],
    ] as const) {
      expect((await action("findOne", { query: { _id: id } })).body).toEqual({ _id: id, n: { $numberInt: String(n) } });
    }
    const updated = await action("updateOne", { query: { _id: long }, update: { $set: { n: 4 } } });
    expect(updated.body.modifiedCount).toEqual({ $numberInt: "1" });
    expect((await action("find", { query: { _id: { $in: [long, medium] } }, sort: { n: 1 } })).body).toEqual([
      { _id: medium, n: { $numberInt: "2" } },
      { _id: long, n: { $numberInt: "4" } },
    ]);
    expect((await action("deleteOne", { query: { _id: long } })).body).toEqual({ deletedCount: { $numberInt: "1" } });
    expect((await action("count", { query: {} })).body).toEqual({ $numberLong: "2" });
  });

  it("an $in of 100,000 values, on _id and on a field", async () => {
    await action("insertMany", {
      collection: "tags",
      documents: [
        { _id: "v5", tag: "v7" },
        { _id: "w", tag: "w" },
      ],
    });
    const values = Array.from({ length: 100_000 }, (_, i) => `v${i}`);
    for (const field of ["_id", "tag"]) {
      const found = await action("find", { collection: "tags", query: { [field]: { $in: values } } });
      expect(found.body, field).toEqual([{ _id: "v5", tag: "v7" }]);
    }
  });

  it(`a custom function's identity id of ${maxIdentityIdLength} characters logs in the same user each time`, async () => {
    const username = random(maxIdentityIdLength);
    const pin = String(username.length).repeat(3).slice(0, 3);
    const login = () =>
      call(app, "login", {
        method: "POST",
        url: `${base}/app/${appId}/auth/providers/custom-function/login`,
        payload: { username, pin },
      });
    const first = await login();
    expect(first.response.statusCode).toBe(200);
    expect((await login()).body.user_id).toBe(first.body.user_id);
    const profile = await call(app, "getProfile", {
      method: "GET",
      url: `${base}/auth/profile`,
      headers: bearer(first.body.access_token),
    });
    expect(profile.body.identities[0].id).toBe(username);
  });

  it(`an API key name of ${maxApiKeyNameLength} characters: created, listed, and still once per user`, async () => {
    const owner = await emailUser(app, appId, "long@example.com", "secret-1");
    const name = random(maxApiKeyNameLength);
    const create = () =>
      call(app, "createApiKey", {
        method: "POST",
        url: `${base}/auth/api_keys`,
        headers: bearer(owner.refresh_token),
        payload: { name },
      });
    const created = await create();
    expect(created.response.statusCode).toBe(201);
    expect(created.body.name).toBe(name);
    expect((await create()).response.statusCode).toBe(409);
    const listed = await call(app, "listApiKeys", {
      method: "GET",
      url: `${base}/auth/api_keys`,
      headers: bearer(owner.refresh_token),
    });
    expect(listed.body.map((k: { name: string }) => k.name)).toEqual([name]);
  });
});
