/**
 * Account steps racing on two instances of one database (and, in memory, on one emulator) leave
 * consistent state: generated pairs of steps — logins, links, deletions, confirmations, resets, API keys,
 * custom data, the control API's user changes — each pair sent at once, one step to each instance.
 * No answer is a server error, and after every run: no session, API key or registration is left
 * of a deleted user, each user's count of sessions is its sessions and within the app's limit, the
 * app's counted users are its users and pending registrations and within its limit, and its
 * counted documents are its documents.
 */
import fc from "fast-check";
import type { FastifyInstance } from "fastify";
import { describe, expect, it } from "vitest";
import { appConfig, prelude, type Step, side, step } from "../helpers/account-steps.ts";
import { call, memoryAndTwoInstances } from "../helpers/app.ts";
import { adminQuery } from "../helpers/postgres.ts";

/**
 * What the control API shows of the app: every user's sessions within the limit, the users too;
 * at most one e-mail/password identity a user, and its registration there (the user's address).
 */
async function shown(app: FastifyInstance, appId: string) {
  const { body } = await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` });
  const users = body.users as {
    id: string;
    email?: string;
    identities?: { provider_type: string }[];
    sessions: unknown[];
  }[];
  expect(users.length).toBeLessThanOrEqual(appConfig.limits.users);
  for (const user of users) {
    expect(user.sessions.length).toBeLessThanOrEqual(appConfig.limits.sessionsPerUser);
    const userpass = (user.identities ?? []).filter((identity) => identity.provider_type === "local-userpass");
    expect(userpass.length, JSON.stringify(user)).toBeLessThanOrEqual(1);
    if (userpass.length === 1) expect(user.email, JSON.stringify(user)).toBeDefined();
  }
}

/** Rows of `sql` (its parameter the app id): none expected, each shown when one is there. */
async function none(url: string, what: string, sql: string, appId: string) {
  const { rows } = await adminQuery(url, sql, [appId]);
  expect(rows, what).toEqual([]);
}

/** What the database holds of the app hangs together. */
async function consistent(url: string, appId: string) {
  await none(
    url,
    "sessions of no user",
    "SELECT s.id FROM sessions s WHERE s.app_id = $1 AND NOT EXISTS (SELECT 1 FROM users u WHERE u.app_id = s.app_id AND u.id = s.user_id)",
    appId,
  );
  await none(
    url,
    "API keys of no user",
    "SELECT k.id FROM api_keys k WHERE k.app_id = $1 AND NOT EXISTS (SELECT 1 FROM users u WHERE u.app_id = k.app_id AND u.id = k.user_id)",
    appId,
  );
  await none(
    url,
    "registrations of a deleted user",
    `SELECT r.id FROM userpass_accounts r WHERE r.app_id = $1 AND r.user_id IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM users u WHERE u.app_id = r.app_id AND u.id = r.user_id)`,
    appId,
  );
  await none(
    url,
    "users whose session count is not their sessions",
    `SELECT u.id, u.session_count, (SELECT count(*) FROM sessions s WHERE s.app_id = u.app_id AND s.user_id = u.id) AS sessions
       FROM users u WHERE u.app_id = $1
        AND u.session_count <> (SELECT count(*) FROM sessions s WHERE s.app_id = u.app_id AND s.user_id = u.id)`,
    appId,
  );
  await none(
    url,
    "counted users, documents and bytes that are not the app's",
    `SELECT c.users, c.documents, c.bytes, h.users AS held_users, h.documents AS held_documents, h.bytes AS held_bytes
       FROM (SELECT coalesce(sum(users), 0) AS users, coalesce(sum(documents), 0) AS documents,
                    coalesce(sum(document_bytes), 0) AS bytes FROM app_usage_counts WHERE app_id = $1) c,
            (SELECT (SELECT count(*) FROM users WHERE app_id = $1)
                    + (SELECT count(*) FROM userpass_accounts WHERE app_id = $1 AND user_id IS NULL) AS users,
                    (SELECT count(*) FROM documents WHERE app_id = $1) AS documents,
                    (SELECT coalesce(sum(octet_length(ejson)), 0) FROM documents WHERE app_id = $1) AS bytes) h
      WHERE c.users <> h.users OR c.documents <> h.documents OR c.bytes <> h.bytes`,
    appId,
  );
}

const rounds = fc.array(fc.tuple(step, step), { minLength: 1, maxLength: 10 });

describe("account steps racing", () => {
  const emulators = memoryAndTwoInstances();

  /** Runs the prelude, then each round's two steps at once (on `a` and `b`); no server error. */
  async function race(a: FastifyInstance, b: FastifyInstance, pairs: [Step, Step][]) {
    const racing = await side(a, b === a ? undefined : b);
    for (const s of prelude) await racing.perform(s);
    for (const [x, y] of pairs) {
      const answers = await Promise.all([racing.perform(x, a), racing.perform(y, b)]);
      for (const answer of answers) expect(answer.status, JSON.stringify([x, y, answer])).toBeLessThan(500);
    }
    return racing.appId;
  }

  it("leave two PostgreSQL instances' accounts consistent", async () => {
    const { postgres, second } = emulators;
    const url = postgres.emulator.options.databaseUrl!;
    await fc.assert(
      fc.asyncProperty(rounds, async (pairs) => {
        const appId = await race(postgres, second, pairs);
        await shown(postgres, appId);
        await consistent(url, appId);
      }),
      { seed: 20261129, numRuns: 20 },
    );
  }, 120_000);

  it("leave the in-memory store's accounts consistent", async () => {
    const { memory } = emulators;
    await fc.assert(
      fc.asyncProperty(rounds, async (pairs) => {
        const appId = await race(memory, memory, pairs);
        await shown(memory, appId);
      }),
      { seed: 20261129, numRuns: 25 },
    );
  }, 120_000);
});
