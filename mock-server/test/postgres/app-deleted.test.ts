/**
 * A request whose app is deleted (on any instance) while it runs answers as a request a moment
 * later does — its app not found — and writes nothing: on PostgreSQL its write meets the foreign
 * key to `apps` (AppGoneError), where it answered 500.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, expect, it } from "vitest";
import { anonymousLogin, base, bearer, call, newOpenApp, testApp } from "../helpers/app.ts";
import { adminQuery } from "../helpers/postgres.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

/** The app's data store, its next `write` preceded by the app's deletion (through the control API). */
async function deletedBeforeItsNextWrite(appId: string) {
  const data = (await app.emulator.apps.get(appId))!.store.data;
  const write = data.write.bind(data);
  data.write = async (database, collection, plan, writer) => {
    data.write = write;
    expect((await app.inject({ method: "DELETE", url: `/_mock/v1/apps/${appId}` })).statusCode).toBe(204);
    return write(database, collection, plan, writer);
  };
}

it("answers a client's write 404 app not found, and writes nothing", async () => {
  const appId = await newOpenApp(app);
  const { access_token } = await anonymousLogin(app, appId);
  await deletedBeforeItsNextWrite(appId);
  const { response, body } = await call(app, "callFunction", {
    method: "POST",
    url: `${base}/app/${appId}/functions/call`,
    headers: bearer(access_token),
    payload: {
      name: "updateOne",
      service: "mongodb-atlas",
      arguments: [{ database: "d", collection: "c", query: { a: 1 }, update: { $set: { a: 2 } }, upsert: true }],
    },
  });
  expect(response.statusCode).toBe(404);
  expect(body).toEqual({ error: `cannot find app using Client App ID '${appId}'` });
  const url = app.emulator.options.databaseUrl!;
  const { rows } = await adminQuery(url, "SELECT count(*)::int AS n FROM documents WHERE app_id = $1", [appId]);
  expect(rows[0].n).toBe(0);
});

it("answers the control API's write 404 no app, and writes nothing", async () => {
  const appId = await newOpenApp(app);
  await deletedBeforeItsNextWrite(appId);
  const { response, body } = await call(app, "insertDocuments", {
    method: "POST",
    url: `/_mock/v1/apps/${appId}/data/d/c`,
    payload: { documents: [{ a: 1 }] },
  });
  expect(response.statusCode).toBe(404);
  expect(body).toEqual({ error: `no app with id '${appId}'`, code: "NotFound" });
});
