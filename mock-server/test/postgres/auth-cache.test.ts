/**
 * Two stores (instances) on one database: what one keeps of the users and sessions of access-token
 * requests (store/postgres/auth-cache.ts) follows every change the other makes — through the
 * notifications, as they arrive — and, when the notifications stall or the listening connection
 * breaks, the store stops answering from what it keeps within the revocation window and reads the
 * database again (docs/decisions/0020-auth-cache.md).
 */
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { revocationWindowMs } from "../../src/store/postgres/auth-cache.ts";
import type { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { AppStore, StoredSession, StoredUser } from "../../src/store/store.ts";
import { adminQuery, postgresAdminUrl, statementsOf, type TestDatabase } from "../helpers/postgres.ts";
import { contextOf, listenerProcesses, twoStores } from "../helpers/two-stores.ts";
import { until } from "../helpers/until.ts";

const stores = twoStores("auth-cache");
let database: TestDatabase;
let a: PostgresStore;
let b: PostgresStore;
beforeAll(() => {
  ({ database, a, b } = stores);
});

let appCount = 0;
let appId: string;
beforeEach(async () => {
  appId = `cache-app-${++appCount}`;
  await a.apps.create({ appId, domainId: `domain-${appId}`, createdAt: 0, appDir: null, config: {} });
});

let ids = 0;
const newId = () => (++ids).toString(16).padStart(24, "0");

async function userWithSession(
  store: AppStore,
  apiKeyId?: string,
): Promise<{ user: StoredUser; session: StoredSession }> {
  const user: StoredUser = {
    id: newId(),
    type: "normal",
    disabled: false,
    createdAt: 0,
    identities: [{ id: newId(), provider_type: "anon-user", provider_id: "p" }],
    data: {},
  };
  expect((await store.users.create(user)).ok).toBe(true);
  const session: StoredSession = {
    id: newId(),
    userId: user.id,
    deviceId: newId(),
    providerType: "anon-user",
    identityId: user.identities[0]!.id,
    createdAt: 0,
    expiresAt: Date.now() + 3_600_000,
    ...(apiKeyId ? { apiKeyId } : {}),
  };
  await store.startSession(session, 1);
  return { user, session };
}

/** Reads through `store` until it keeps the pair (its notifications current), so later reads need no database. */
async function kept(store: PostgresStore, userId: string, sessionId: string) {
  const scope = store.apps.scope(appId);
  await until(async () => {
    const found = await scope.userSession(userId, sessionId);
    expect(found.session?.id).toBe(sessionId);
    return contextOf(store).auth.userSession(appId, userId, sessionId) !== null;
  }, "the pair kept");
}

/** What `store` answers, and whether it answered from what it keeps. */
async function seenBy(store: PostgresStore, userId: string, sessionId: string) {
  const fromCache = contextOf(store).auth.userSession(appId, userId, sessionId) !== null;
  const found = await store.apps.scope(appId).userSession(userId, sessionId);
  return { fromCache, user: found.user, session: found.session };
}

describe("what an instance keeps of users and sessions, on PostgreSQL", () => {
  it("answers access-token requests without the database once kept", async () => {
    const { user, session } = await userWithSession(b.apps.scope(appId));
    await kept(a, user.id, session.id);
    const seen = await seenBy(a, user.id, session.id);
    expect(seen.fromCache).toBe(true);
    expect(seen.session).toEqual(session);
    expect(seen.user).toMatchObject({ id: user.id, lastLoginAt: 1 });
  });

  it("follows every change made through the other instance, as its notification arrives", async () => {
    const scopeB = b.apps.scope(appId);
    const changes: [
      string,
      (pair: { user: StoredUser; session: StoredSession }) => Promise<unknown>,
      "user" | "session",
    ][] = [
      ["logout", ({ session }) => scopeB.sessions.remove(session.id), "session"],
      ["sessions revoked", ({ user }) => scopeB.sessions.removeForUser(user.id), "session"],
      ["user disabled", ({ user }) => scopeB.users.update(user.id, { disabled: true }), "user"],
      ["profile data changed", ({ user }) => scopeB.users.update(user.id, { data: { name: "new" } }), "user"],
      ["another login (its time)", ({ user }) => scopeB.users.update(user.id, { lastLoginAt: 2 }), "user"],
      ["user deleted", ({ user }) => scopeB.deleteUser(user.id), "user"],
      // These users are anonymous, created at 0: past their lifetime, the retention sweep removes them.
      ["anonymous user swept", () => b.retention.anonymousUsers(1, 1000), "user"],
    ];
    for (const [what, change, kind] of changes) {
      const pair = await userWithSession(scopeB);
      await kept(a, pair.user.id, pair.session.id);
      await change(pair);
      // b's own answer is the change's at once; a's as soon as the notification arrives.
      const own = await seenBy(b, pair.user.id, pair.session.id);
      expect(own.fromCache, what).toBe(false);
      await until(async () => {
        const seen = await seenBy(a, pair.user.id, pair.session.id);
        if (kind === "session") return seen.session === undefined;
        const now = await scopeB.users.get(pair.user.id);
        return now === undefined ? seen.user === undefined : JSON.stringify(seen.user) === JSON.stringify(now);
      }, what);
    }
  });

  it("follows the end of an API key's sessions and a login past the sessions limit", async () => {
    const scopeB = b.apps.scope(appId);
    const owner = await userWithSession(scopeB);
    const key = { id: newId(), userId: owner.user.id, name: "k", keyHash: newId(), disabled: false, createdAt: 0 };
    expect(await scopeB.apiKeys.add(key, 20)).toBe("ok");
    const keyed = { user: owner.user, session: { ...owner.session, id: newId(), apiKeyId: key.id } };
    await scopeB.startSession(keyed.session, 2);
    await kept(a, keyed.user.id, keyed.session.id);
    await kept(a, owner.user.id, owner.session.id);
    await scopeB.apiKeys.setDisabled(key.id, true);
    await until(async () => (await seenBy(a, keyed.user.id, keyed.session.id)).session === undefined, "key's sessions");
    // The user's other session goes on.
    expect((await seenBy(a, owner.user.id, owner.session.id)).session?.id).toBe(owner.session.id);

    await b.apps.upsert({
      appId,
      domainId: `domain-${appId}`,
      createdAt: 0,
      appDir: null,
      config: { limits: { sessionsPerUser: 1 } },
    });
    const limited = await userWithSession(scopeB);
    await kept(a, limited.user.id, limited.session.id);
    await scopeB.startSession({ ...limited.session, id: newId() }, 3);
    await until(
      async () => (await seenBy(a, limited.user.id, limited.session.id)).session === undefined,
      "the oldest session ended",
    );
  });

  it("forgets an app's users and sessions when the app is reset on the other instance", async () => {
    const { user, session } = await userWithSession(b.apps.scope(appId));
    await kept(a, user.id, session.id);
    await b.apps.reset(appId);
    await until(async () => (await seenBy(a, user.id, session.id)).user === undefined, "the reset");
  });

  it.skipIf(process.env.TEST_DATABASE_URL)(
    "knows, once caught up, every change the other instance committed before (caughtUp)",
    async () => {
      const pairs = await Promise.all([1, 2, 3].map(() => userWithSession(b.apps.scope(appId))));
      for (const { user, session } of pairs) await kept(a, user.id, session.id);
      // The listening connections' server processes stopped while b changes them: a cannot have
      // heard of the changes when they start again, until it has caught up.
      const listeners = await listenerProcesses(database);
      expect(listeners).toHaveLength(2);
      for (const pid of listeners) process.kill(pid, "SIGSTOP");
      const scopeB = b.apps.scope(appId);
      try {
        await scopeB.sessions.remove(pairs[0]!.session.id);
        await scopeB.users.update(pairs[1]!.user.id, { disabled: true });
        await scopeB.deleteUser(pairs[2]!.user.id);
      } finally {
        for (const pid of listeners) process.kill(pid, "SIGCONT");
      }
      await a.caughtUp();
      const auth = contextOf(a).auth;
      for (const { user, session } of pairs) expect(auth.userSession(appId, user.id, session.id)).toBeNull();
    },
  );

  it.skipIf(process.env.TEST_DATABASE_URL)(
    "stops answering from what it keeps within the window while its notifications stall, and reads the database",
    async () => {
      const { user, session } = await userWithSession(b.apps.scope(appId));
      await kept(a, user.id, session.id);
      // Both listening connections' server processes stopped: nothing is delivered, nothing breaks.
      const listeners = await listenerProcesses(database);
      expect(listeners).toHaveLength(2);
      for (const pid of listeners) process.kill(pid, "SIGSTOP");
      try {
        await b.apps.scope(appId).sessions.remove(session.id);
        // a hears nothing of it: it answers from what it keeps only within the window, then asks.
        await until(async () => (await seenBy(a, user.id, session.id)).session === undefined, "a reads again", {
          timeoutMs: 10 * revocationWindowMs + 5_000,
        });
        const again = await seenBy(a, user.id, session.id);
        expect(again.fromCache).toBe(false);
        // A sync on its way before the stop may still come back and make a current again for a
        // moment: what a read found gone is not answered from what a keeps even then.
        const listener = contextOf(a).listener;
        const fresh = listener.fresh;
        listener.fresh = () => true;
        try {
          expect(await seenBy(a, user.id, session.id)).toMatchObject({ fromCache: false, session: undefined });
        } finally {
          listener.fresh = fresh;
        }
      } finally {
        for (const pid of listeners) process.kill(pid, "SIGCONT");
      }
      // Current again: the user's other session is kept and answered again.
      const other = await userWithSession(b.apps.scope(appId));
      await kept(a, other.user.id, other.session.id);
    },
  );

  it("forgets everything when its listening connection breaks, and keeps again once it is back", async () => {
    const { user, session } = await userWithSession(b.apps.scope(appId));
    await kept(a, user.id, session.id);
    const auth = contextOf(a).auth;
    expect(auth.size.sessions).toBeGreaterThan(0);
    const listener = contextOf(a).listener;
    await adminQuery(
      postgresAdminUrl(),
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = $1 AND application_name = 'app-services-emulator-listener' AND pid <> pg_backend_pid()`,
      [database.name],
    );
    await until(() => auth.size.sessions === 0 || !listener.listening, "the break noticed");
    await until(() => listener.listening, "listening again", { timeoutMs: 10_000 });
    expect(auth.size.sessions).toBe(0);
    await kept(a, user.id, session.id);
  });

  it.skipIf(process.env.TEST_DATABASE_URL)("says it cannot catch up when its listening connection breaks", async () => {
    const listener = contextOf(a).listener;
    await until(() => listener.listening, "listening");
    const listeners = await listenerProcesses(database);
    expect(listeners).toHaveLength(2);
    for (const pid of listeners) process.kill(pid, "SIGSTOP");
    const refused = expect(a.caughtUp()).rejects.toThrow();
    try {
      await adminQuery(postgresAdminUrl(), "SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid", [
        listeners,
      ]);
    } finally {
      for (const pid of listeners) process.kill(pid, "SIGCONT");
    }
    await refused;
    // Listening again (with backoff), it catches up again.
    const caughtUp = () =>
      a.caughtUp().then(
        () => true,
        () => false,
      );
    await until(caughtUp, "caught up again", { timeoutMs: 10_000 });
  });

  it("after an outage of its notifications, tells of the apps changed or deleted meanwhile", async () => {
    const other = `cache-app-${++appCount}`;
    await a.apps.create({ appId: other, domainId: `domain-${other}`, createdAt: 0, appDir: null, config: {} });
    expect(await a.apps.get(appId)).toMatchObject({ config: {} });
    const told: string[] = [];
    const stop = a.apps.onChange((id, change) => told.push(`${id} ${change}`));
    try {
      // Changes a does not hear of (written without their notifications, as if sent while it was away).
      await adminQuery(database.url, `UPDATE apps SET config = '{"name": "changed"}' WHERE app_id = $1`, [appId]);
      await adminQuery(database.url, "DELETE FROM apps WHERE app_id = $1", [other]);
      const listener = contextOf(a).listener;
      await adminQuery(
        postgresAdminUrl(),
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = $1 AND application_name = 'app-services-emulator-listener'`,
        [database.name],
      );
      // (Each app it holds that did not change is told to read its trigger suspensions again.)
      const records = () => told.filter((line) => !line.endsWith(" triggers"));
      await until(() => records().length === 2, "both told", { timeoutMs: 10_000 });
      expect(records().sort()).toEqual([`${appId} updated`, `${other} deleted`].sort());
      expect(listener.listening).toBe(true);
    } finally {
      stop();
    }
  });

  it("answers a token whose session ended or whose user is gone without the database, once a read found it", async () => {
    const scopeA = a.apps.scope(appId);
    const scopeB = b.apps.scope(appId);
    /** A look-up through b, and how many statements it made. */
    const counted = async <T>(work: () => Promise<T>) => {
      let answer: T | undefined;
      const { texts } = await statementsOf(
        async () => {
          answer = await work();
        },
        { own: true },
      );
      return { answer: answer as T, statements: texts.length };
    };
    const ended = await userWithSession(scopeA);
    await kept(b, ended.user.id, ended.session.id);
    await scopeA.sessions.remove(ended.session.id);
    await b.caughtUp();
    // The first read after the end asks; later ones (b current) answer from what it keeps.
    expect((await counted(() => scopeB.userSession(ended.user.id, ended.session.id))).statements).toBe(1);
    const again = await counted(() => scopeB.userSession(ended.user.id, ended.session.id));
    expect(again.statements).toBe(0);
    expect(again.answer.session).toBeUndefined();
    expect(again.answer.user).toMatchObject({ id: ended.user.id });
    // A refresh token's look-up of it, too.
    expect(await counted(() => scopeB.sessions.get(ended.session.id))).toEqual({ answer: undefined, statements: 0 });
    expect(scopeB.sessions.knownGone?.(ended.session.id)).toBe(true);

    const deleted = await userWithSession(scopeA);
    await scopeA.deleteUser(deleted.user.id);
    await b.caughtUp();
    expect((await counted(() => scopeB.userSession(deleted.user.id, deleted.session.id))).statements).toBe(1);
    expect(await counted(() => scopeB.userSession(deleted.user.id, deleted.session.id))).toEqual({
      answer: { user: undefined, session: undefined },
      statements: 0,
    });
    // A live session is no such thing, nor another app's with the same ids.
    const live = await userWithSession(scopeA);
    expect((await scopeB.userSession(live.user.id, live.session.id)).session?.id).toBe(live.session.id);
    expect(scopeB.sessions.knownGone?.(live.session.id)).toBe(false);

    // An app reset (or a state import, which announces its apps as deleted) forgets them.
    await a.apps.reset(appId);
    await b.caughtUp();
    expect(scopeB.sessions.knownGone?.(ended.session.id)).toBe(false);
    expect(contextOf(b).auth.goneAnswer(appId, deleted.user.id, deleted.session.id)).toBeNull();
  });
});
