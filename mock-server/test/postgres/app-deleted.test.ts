/**
 * A request whose app is deleted (on any instance) while it runs answers as a request a moment
 * later does — its app not found — and writes nothing: on PostgreSQL its write meets the foreign
 * key to `apps` (AppGoneError), where it answered 500. Generated account steps and data actions
 * racing their app's deletion on another instance answer no server error.
 */
import fc from "fast-check";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, expect, it } from "vitest";
import { prelude, side, step } from "../helpers/account-steps.ts";
import { anonymousLogin, base, bearer, call, emailUser, newOpenApp, testApp } from "../helpers/app.ts";
import { action, document, numbered, signedIn } from "../helpers/data-actions.ts";
import { adminQuery } from "../helpers/postgres.ts";

let app: FastifyInstance;
let other: FastifyInstance;
beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
  const { databaseUrl } = app.emulator.options;
  other = await testApp({ allowFunctionSource: true, databaseUrl, signingSecret: app.emulator.signingSecret });
});
// (The other instance first: closing the first drops their database.)
afterAll(async () => {
  await other?.close();
  await app?.close();
});

it("answers a request whose path names no app 401 InvalidSession when its token's app goes meanwhile", async () => {
  const appId = await newOpenApp(app);
  const owner = await emailUser(app, appId, "keys@example.com", "secret-1");
  const keys = (await app.emulator.apps.get(appId))!.apiKeys;
  const add = keys.add.bind(keys);
  keys.add = async (key, maxPerUser) => {
    expect((await other.inject({ method: "DELETE", url: `/_mock/v1/apps/${appId}` })).statusCode).toBe(204);
    return add(key, maxPerUser);
  };
  const { response, body } = await call(app, "createApiKey", {
    method: "POST",
    url: `${base}/auth/api_keys`,
    headers: bearer(owner.refresh_token),
    payload: { name: "late" },
  });
  expect(response.statusCode).toBe(401);
  expect(body).toMatchObject({ error: "unauthorized", error_code: "InvalidSession" });
});

it("answers a first login claiming a registration 404 when its app goes meanwhile", async () => {
  const appId = await newOpenApp(app, { providers: { "local-userpass": { autoConfirm: true } } });
  await call(app, "registerUser", {
    method: "POST",
    url: `${base}/app/${appId}/auth/providers/local-userpass/register`,
    payload: { email: "first@example.com", password: "secret-1" },
  });
  const users = (await app.emulator.apps.get(appId))!.users;
  const create = users.create.bind(users);
  users.create = async (...args) => {
    expect((await other.inject({ method: "DELETE", url: `/_mock/v1/apps/${appId}` })).statusCode).toBe(204);
    return create(...args);
  };
  const { response, body } = await call(app, "login", {
    method: "POST",
    url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
    payload: { username: "first@example.com", password: "secret-1" },
  });
  expect(response.statusCode).toBe(404);
  expect(body).toEqual({ error: `cannot find app using Client App ID '${appId}'` });
});

/**
 * `requests` (answered statuses) while the other instance deletes (or resets) the app, after
 * `turns` turns of the event loop (where in the requests it lands): none may be a server error.
 */
async function racingDeletion(
  appId: string,
  turns: number,
  requests: () => Promise<[unknown, number][]>,
  change: "delete" | "reset" = "delete",
) {
  const deletion = (async () => {
    for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
    const url = `/_mock/v1/apps/${appId}${change === "reset" ? "/reset" : ""}`;
    await other.inject({ method: change === "reset" ? "POST" : "DELETE", url });
  })();
  const [answered] = await Promise.all([requests(), deletion]);
  for (const [request, status] of answered) expect(status, JSON.stringify(request)).toBeLessThan(500);
}

it("answers account steps racing their app's deletion with no server error", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), fc.nat(5), async (steps, turns) => {
      const racing = await side(app);
      for (const s of prelude) await racing.perform(s);
      await racingDeletion(racing.appId, turns, async () => {
        const answered: [unknown, number][] = [];
        for (const s of steps) answered.push([s, (await racing.perform(s)).status]);
        return answered;
      });
    }),
    { seed: 20261129, numRuns: 20 },
  );
}, 120_000);

it("answers account steps racing their app's reset with no server error, and keeps no mail of a cleared token", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), fc.nat(5), async (steps, turns) => {
      const racing = await side(app);
      for (const s of prelude) await racing.perform(s);
      await racingDeletion(
        racing.appId,
        turns,
        async () => {
          const answered: [unknown, number][] = [];
          for (const s of steps) answered.push([s, (await racing.perform(s)).status]);
          return answered;
        },
        "reset",
      );
      const { rows: stray } = await adminQuery(
        app.emulator.options.databaseUrl!,
        `SELECT m.id FROM mail m WHERE m.app_id = $1 AND m.kind IN ('confirm', 'reset')
           AND NOT EXISTS (SELECT 1 FROM auth_tokens t WHERE t.app_id = m.app_id AND t.token_id = m.doc->>'tokenId')`,
        [racing.appId],
      );
      expect(stray).toEqual([]);
    }),
    { seed: 20261129, numRuns: 20 },
  );
}, 120_000);

it("answers data actions racing their app's deletion with no server error", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(document, { minLength: 1, maxLength: 4 }),
      fc.array(action, { minLength: 1, maxLength: 5 }),
      fc.nat(5),
      async (documents, actions, turns) => {
        const { appId, send } = await signedIn(app);
        const [first, ...rest] = numbered(documents, actions);
        await send("c", first![0], first![1]);
        await racingDeletion(appId, turns, async () => {
          const answered: [unknown, number][] = [];
          for (const [name, argument] of rest)
            answered.push([[name, argument], (await send("c", name, argument)).status]);
          return answered;
        });
      },
    ),
    { seed: 20261129, numRuns: 5 },
  );
}, 120_000);

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
