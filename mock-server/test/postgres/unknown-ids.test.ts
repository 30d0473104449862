/**
 * Requests naming an app or an EmailJS account that does not exist (its id in their path or body,
 * before any token or limit): an instance keeps the ids of every app and account, kept true by
 * their notifications (store/postgres/id-directory.ts), and answers them without a statement each
 * — a flood of new ids puts nothing on the database every instance shares — yet finds one created
 * anywhere before the request came (it waits for a sync shared by every such request); when
 * notifications stall or break it asks the database. Tokens whose session ended are answered
 * without the database once a read found it gone (store/postgres/auth-cache.ts).
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { anonymousLogin, base, bearer, call, getProfile, newApp, testApp } from "../helpers/app.ts";
import { newAccount, sendEmail } from "../helpers/emailjs.ts";
import { adminQuery, postgresAdminUrl, statementsOf, type TestDatabase } from "../helpers/postgres.ts";
import { contextOf, listenerProcesses, twoStores } from "../helpers/two-stores.ts";
import { until } from "../helpers/until.ts";

const stores = twoStores("unknown-apps");
let database: TestDatabase;
let a: PostgresStore;
let b: PostgresStore;
beforeAll(() => {
  ({ database, a, b } = stores);
});

let ids = 0;
const newAppId = () => `unknown-app-${++ids}`;
const record = (appId: string) => ({ appId, domainId: `domain-${appId}`, createdAt: 0, appDir: null, config: {} });

/** How many statements a look-up of the app asked the database, and what it found. */
async function lookUp(store: PostgresStore, appId: string) {
  let found: unknown;
  const { texts } = await statementsOf(
    async () => {
      found = await store.apps.get(appId);
    },
    { own: true },
  );
  return { statements: texts.length, found: found !== undefined };
}

describe("an id no app has", () => {
  it("is answered without the database once the instance has its apps' ids, whatever the id", async () => {
    expect(await lookUp(b, newAppId())).toEqual({ statements: 1, found: false });
    for (let i = 0; i < 5; i++) expect(await lookUp(b, newAppId())).toEqual({ statements: 0, found: false });
  });

  it("is found once its app is created, on this instance or another, by the next request", async () => {
    expect(await lookUp(b, newAppId())).toMatchObject({ statements: 0 });
    const here = newAppId();
    expect(await b.apps.create(record(here))).toBe(true);
    expect(await lookUp(b, here)).toMatchObject({ found: true });
    // (No waiting for the notification: the look-up itself waits until it has arrived.)
    const there = newAppId();
    expect(await a.apps.create(record(there))).toBe(true);
    expect(await lookUp(b, there)).toMatchObject({ found: true });
    const upserted = newAppId();
    await a.apps.upsert(record(upserted));
    expect(await lookUp(b, upserted)).toMatchObject({ found: true });
    // A deleted app is not found; the ids are read again at the next look-up once its
    // notification came.
    await a.apps.delete(there);
    await b.caughtUp();
    expect(await lookUp(b, there)).toEqual({ statements: 1, found: false });
    expect(await lookUp(b, newAppId())).toEqual({ statements: 0, found: false });
  });

  it("is asked of the database each time past so many apps", async () => {
    const fresh = await PostgresStore.open({ url: database.url });
    fresh.apps.directory.max = 1;
    try {
      expect(b.apps.directory.max).toBe(100_000);
      expect(await lookUp(fresh, newAppId())).toMatchObject({ found: false, statements: 2 });
      expect(await lookUp(fresh, newAppId())).toEqual({ found: false, statements: 1 });
    } finally {
      await fresh.close();
    }
  });

  it.skipIf(process.env.TEST_DATABASE_URL)(
    "is asked of the database while notifications stall, so an app created elsewhere is found",
    async () => {
      expect(await lookUp(b, newAppId())).toMatchObject({ statements: 0 });
      // Both listening connections' server processes stopped: b hears of nothing, and nothing breaks.
      const listeners = await listenerProcesses(database);
      expect(listeners).toHaveLength(2);
      for (const pid of listeners) process.kill(pid, "SIGSTOP");
      try {
        const appId = newAppId();
        await a.apps.create(record(appId));
        expect(await lookUp(b, appId)).toEqual({ statements: 1, found: true });
      } finally {
        for (const pid of listeners) process.kill(pid, "SIGCONT");
      }
    },
  );

  it("is asked again once the listening connection broke and came back", async () => {
    expect(await lookUp(b, newAppId())).toMatchObject({ statements: 0 });
    const listener = contextOf(b).listener;
    await adminQuery(
      postgresAdminUrl(),
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = $1 AND application_name = 'app-services-emulator-listener'`,
      [database.name],
    );
    await until(() => !listener.listening, "the break noticed");
    await until(() => listener.listening, "listening again", { timeoutMs: 10_000 });
    expect(await lookUp(b, newAppId())).toEqual({ statements: 1, found: false });
    expect(await lookUp(b, newAppId())).toEqual({ statements: 0, found: false });
  });
});

describe("an EmailJS public key no account has", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await testApp({ databaseUrl: database.url, signingSecret: "a-test-signing-secret-of-32-chars" });
  });
  afterAll(() => app.close());

  const keyLookUp = async (store: PostgresStore, publicKey: string) => {
    let found: unknown;
    const { texts } = await statementsOf(
      async () => {
        found = await store.emailjs.get(publicKey);
      },
      { own: true },
    );
    return { statements: texts.length, found: found !== undefined };
  };

  it("is answered without the database; an account created on another instance is found at once", async () => {
    // (The emulator's start made its default account: b has heard of it.)
    await b.caughtUp();
    expect(await keyLookUp(b, "no-such-key-1")).toEqual({ statements: 1, found: false });
    expect(await keyLookUp(b, "no-such-key-2")).toEqual({ statements: 0, found: false });
    const sent = () =>
      sendEmail(app, { service_id: "default_service", template_id: "t", user_id: `no-such-key-${Math.random()}` });
    expect((await sent()).response.statusCode).toBe(400);
    const { texts } = await statementsOf(
      async () => {
        for (let i = 0; i < 5; i++) expect((await sent()).response.statusCode).toBe(400);
      },
      { own: true },
    );
    expect(texts).toEqual([]);
    // Created through the other instance (the emulator): found by the next look-up, then deleted.
    const { publicKey } = await newAccount(app);
    expect(await keyLookUp(b, publicKey)).toMatchObject({ found: true });
    const deleted = await call(app, "deleteEmailJsAccount", {
      method: "DELETE",
      url: `/_mock/v1/emailjs/accounts/${publicKey}`,
    });
    expect(deleted.response.statusCode).toBe(204);
    await b.caughtUp();
    expect(await keyLookUp(b, publicKey)).toEqual({ statements: 1, found: false });
  });
});

describe("requests naming an app that does not exist", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await testApp({ databaseUrl: database.url, signingSecret: "a-test-signing-secret-of-32-chars" });
  });
  afterAll(() => app.close());

  const location = (appId: string) =>
    call(app, "getLocation", { method: "GET", url: `/api/client/v2.0/app/${appId}/location` });

  it("answer 404 without a statement each, and an app a state import brings is found", async () => {
    expect((await location(newAppId())).response.statusCode).toBe(404);
    const { texts } = await statementsOf(
      async () => {
        for (let i = 0; i < 5; i++) expect((await location(newAppId())).response.statusCode).toBe(404);
      },
      { own: true },
    );
    expect(texts).toEqual([]);

    const { body: created } = await call(app, "createApp", { method: "POST", url: "/_mock/v1/apps", payload: {} });
    const exported = await call(app, "exportState", { method: "GET", url: "/_mock/v1/state" });
    await call(app, "deleteApp", { method: "DELETE", url: `/_mock/v1/apps/${created.appId}` });
    await b.caughtUp();
    expect(await lookUp(b, created.appId)).toMatchObject({ found: false });
    expect(await lookUp(b, newAppId())).toMatchObject({ statements: 0 });
    const imported = await call(app, "importState", { method: "PUT", url: "/_mock/v1/state", payload: exported.body });
    expect(imported.response.statusCode).toBe(204);
    expect(await lookUp(b, created.appId)).toMatchObject({ found: true });
    expect((await location(created.appId)).response.statusCode).toBe(200);
  });
});

describe("tokens whose session ended", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await testApp({ databaseUrl: database.url, signingSecret: "a-test-signing-secret-of-32-chars" });
  });
  afterAll(() => app.close());

  it("are refused again and again with one statement in all", async () => {
    const appId = await newApp(app);
    const session = await anonymousLogin(app, appId);
    const ended = await call(app, "logOut", {
      method: "DELETE",
      url: `${base}/auth/session`,
      headers: bearer(session.refresh_token),
    });
    expect(ended.response.statusCode).toBe(204);
    const refresh = () =>
      call(app, "refreshAccessToken", {
        method: "POST",
        url: `${base}/auth/session`,
        headers: bearer(session.refresh_token),
      });
    /** Statuses of `work`'s requests, and the statements they made. */
    const counted = async (work: () => Promise<number[]>) => {
      let statuses: number[] = [];
      const { texts } = await statementsOf(
        async () => {
          statuses = await work();
        },
        { own: true },
      );
      return { statuses, statements: texts.length };
    };
    const profile = async () => [(await getProfile(app, session.access_token)).response.statusCode];
    expect((await counted(async () => [(await refresh()).response.statusCode])).statuses).toEqual([401]);
    expect((await counted(profile)).statuses).toEqual([401]);
    // A refresh token of an ended session: never asked again.
    expect(
      await counted(async () => {
        const statuses = [];
        for (let i = 0; i < 5; i++) statuses.push((await refresh()).response.statusCode);
        return statuses;
      }),
    ).toEqual({ statuses: [401, 401, 401, 401, 401], statements: 0 });
    // An access token: answered from what the instance keeps while it is current (as for a live one).
    for (let i = 0; i < 3; i++) {
      await (app.emulator.store as unknown as { caughtUp(): Promise<void> }).caughtUp();
      expect(await counted(profile)).toEqual({ statuses: [401], statements: 0 });
    }
    const refused = await refresh();
    expect(refused.body).toMatchObject({ error: "invalid session: failed to find refresh token" });
  });
});
