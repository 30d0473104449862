/**
 * The app's Data API (decision 0035): `POST /app/<appId>/endpoint/data/v1/action/<action>` runs
 * the action under the app's rules as the user of the request's credentials (or the settings'
 * user or system), answering the Data API document's shapes as JSON or Extended JSON.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, call, emailUser, newApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
let appId: string;
let ada: Awaited<ReturnType<typeof emailUser>>;
let bob: Awaited<ReturnType<typeof emailUser>>;

beforeAll(async () => {
  app = await testApp();
  appId = await newApp(app, {
    dataApi: { versions: ["v1"], returnType: "JSON" },
    rules: {
      "todo.tasks": {
        read: { owner: "%%user.id" },
        write: { owner: "%%user.id" },
        insert: { owner: "%%user.id" },
        delete: { owner: "%%user.id" },
      },
    },
  });
  ada = await emailUser(app, appId, "ada@example.com", "correct horse");
  bob = await emailUser(app, appId, "bob@example.com", "battery staple");
});
afterAll(() => app.close());

const action = (
  name: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
  id = appId,
  contentType = "application/json",
) =>
  call(app, "callDataApi", {
    method: "POST",
    url: `/app/${id}/endpoint/data/v1/action/${name}`,
    headers: { "content-type": contentType, ...headers },
    payload: JSON.stringify({ dataSource: "mongodb-atlas", database: "todo", collection: "tasks", ...body }),
  });

describe("the Data API", () => {
  it("inserts, finds, updates and deletes a user's documents under the rules, as JSON", async () => {
    const as = bearer(ada.access_token);
    const one = await action("insertOne", { document: { owner: ada.user_id, text: "Feed the dog", n: 1 } }, as);
    expect(one.response.statusCode).toBe(200);
    expect(one.response.headers["content-type"]).toBe("application/json");
    expect(one.body).toEqual({ insertedId: expect.stringMatching(/^[0-9a-f]{24}$/) });
    const many = await action(
      "insertMany",
      {
        documents: [
          { owner: ada.user_id, text: "Do the dishes", n: 2 },
          { owner: ada.user_id, text: "Water the plants", n: 3 },
        ],
      },
      as,
    );
    expect(many.body.insertedIds).toHaveLength(2);
    // Another user's insert of ada's document is refused by the rules.
    const foreign = await action(
      "insertOne",
      { document: { owner: ada.user_id, text: "not mine" } },
      bearer(bob.access_token),
    );
    expect(foreign.response.statusCode).toBe(400);

    const found = await action(
      "find",
      { filter: { n: { $gte: 2 } }, sort: { n: -1 }, skip: 1, limit: 5, projection: { text: 1, _id: 0 } },
      as,
    );
    expect(found.body).toEqual({ documents: [{ text: "Do the dishes" }] });
    expect((await action("find", {}, bearer(bob.access_token))).body).toEqual({ documents: [] });
    const first = await action("findOne", { filter: { n: 1 }, projection: { text: 1 } }, as);
    expect(first.body).toEqual({ document: { _id: one.body.insertedId, text: "Feed the dog" } });
    expect((await action("findOne", { filter: { n: 99 } }, as)).body).toEqual({ document: null });

    const updated = await action("updateOne", { filter: { n: 1 }, update: { $set: { done: true } } }, as);
    expect(updated.body).toEqual({ matchedCount: 1, modifiedCount: 1 });
    const upserted = await action(
      "updateOne",
      { filter: { owner: ada.user_id, n: 9 }, update: { $set: { text: "New" } }, upsert: true },
      as,
    );
    expect(upserted.body).toEqual({ matchedCount: 0, modifiedCount: 0, upsertedId: expect.any(String) });
    const counted = await action("aggregate", { pipeline: [{ $group: { _id: null, n: { $sum: 1 } } }] }, as);
    expect(counted.body).toEqual({ documents: [{ _id: null, n: 4 }] });
    expect((await action("deleteMany", { filter: { n: { $gte: 2 } } }, as)).body).toEqual({ deletedCount: 3 });
  });

  it("reads Extended JSON and answers it when asked", async () => {
    const as = { ...bearer(ada.access_token), accept: "application/ejson" };
    const inserted = await action(
      "insertOne",
      {
        document: {
          _id: { $oid: "629971c0d71aad65bd59c595" },
          owner: ada.user_id,
          date: { $date: { $numberLong: "1654589430998" } },
        },
      },
      as,
      appId,
      "application/ejson",
    );
    expect(inserted.response.headers["content-type"]).toBe("application/ejson");
    expect(JSON.parse(inserted.response.body)).toEqual({ insertedId: { $oid: "629971c0d71aad65bd59c595" } });
    const found = await action(
      "findOne",
      { filter: { _id: { $oid: "629971c0d71aad65bd59c595" } } },
      bearer(ada.access_token),
    );
    expect(found.body.document).toMatchObject({ _id: "629971c0d71aad65bd59c595", date: "2022-06-07T08:10:30.998Z" });
  });

  it("authenticates as the custom endpoints do, and is off unless configured", async () => {
    const none = await action("find", {});
    expect(none.response.statusCode).toBe(400);
    expect(none.body).toMatchObject({
      error: "no authentication methods were specified",
      error_code: "InvalidParameter",
    });
    const byPassword = await action("find", {}, { email: "ada@example.com", password: "correct horse" });
    expect(byPassword.response.statusCode).toBe(200);
    const off = await newApp(app);
    const refused = await action("find", {}, bearer(ada.access_token), off);
    expect(refused.response.statusCode).toBe(404);
    expect(refused.body).toMatchObject({ error_code: "EndpointNotFound" });
  });

  it("refuses a body that is not a document, another data source, and applies its can_evaluate", async () => {
    const bad = await call(app, "callDataApi", {
      method: "POST",
      url: `/app/${appId}/endpoint/data/v1/action/find`,
      headers: { ...bearer(ada.access_token), "content-type": "application/json" },
      payload: "[1, 2",
    });
    expect(bad.response.statusCode).toBe(400);
    expect(bad.body).toMatchObject({ error_code: "BadRequest" });
    // (The default app's cluster is Cluster0: its name is taken as well as the service's.)
    const cluster = await action("find", { dataSource: "Cluster0" }, bearer(ada.access_token));
    expect(cluster.response.statusCode).toBe(200);
    const elsewhere = await action("find", { dataSource: "Cluster9" }, bearer(ada.access_token));
    expect(elsewhere.body).toMatchObject({ error_code: "ServiceNotFound" });
    const guarded = await newApp(app, {
      dataApi: { runAsSystem: true, canEvaluate: { "%%request.requestHeaders.X-Key": "open-sesame" } },
    });
    const post = (headers: Record<string, string>) =>
      call(app, "callDataApi", {
        method: "POST",
        url: `/app/${guarded}/endpoint/data/v1/action/find`,
        headers: { "content-type": "application/json", ...headers },
        payload: JSON.stringify({ dataSource: "mongodb-atlas", database: "todo", collection: "tasks" }),
      });
    expect((await post({ "x-key": "open-sesame" })).response.statusCode).toBe(200);
    expect((await post({ "x-key": "wrong" })).body).toMatchObject({ error_code: "FunctionExecutionError" });
  });

  it("reads the user's custom data for the rules only with fetch_custom_user_data", async () => {
    const withCustomData = async (fetchCustomUserData: boolean) => {
      const id = await newApp(app, {
        dataApi: { versions: ["v1"], fetchCustomUserData },
        customUserData: { enabled: true, database: "hr", collection: "people", userIdField: "user_id" },
        // Managers read every task: a role that applies by the caller's custom data.
        rules: {
          "todo.tasks": {
            roles: [{ name: "manager", apply_when: { "%%user.custom_data.manager": true }, read: true }],
          },
        },
      });
      const manager = await emailUser(app, id, "manager@example.com", "correct horse");
      await call(app, "insertDocuments", {
        method: "POST",
        url: `/_mock/v1/apps/${id}/data/hr/people`,
        payload: { documents: [{ user_id: manager.user_id, manager: true }] },
      });
      await call(app, "insertDocuments", {
        method: "POST",
        url: `/_mock/v1/apps/${id}/data/todo/tasks`,
        payload: { documents: [{ text: "Plan the week" }] },
      });
      return (await action("find", { projection: { _id: 0 } }, bearer(manager.access_token), id)).body;
    };
    expect(await withCustomData(true)).toEqual({ documents: [{ text: "Plan the week" }] });
    // Not read: `%%user.custom_data` is {}, no role applies, nothing is read.
    expect(await withCustomData(false)).toEqual({ documents: [] });
  });
});
