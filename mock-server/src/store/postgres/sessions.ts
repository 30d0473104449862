/**
 * Refresh-token sessions in PostgreSQL. Every removal is announced on the sessions channel in the
 * same transaction (delivered when, and only if, it commits), so each instance ends the change
 * streams open on the ended sessions and forgets what it kept of them (auth-cache.ts).
 */
import type pg from "pg";
import {
  type CustomDataPlace,
  type EndedSessions,
  maxTokenUserDataBytes,
  type SessionRecords,
  type StoredSession,
  type StoredUser,
} from "../store.ts";
import type { AuthCache } from "./auth-cache.ts";
import type { PgContext } from "./context.ts";
import { customDataSelect } from "./custom-data.ts";
import { type Database, type Queryable, rowsOf } from "./database.ts";
import { channels } from "./notifications.ts";
import { rowKey } from "./row-keys.ts";
import { usersChanged } from "./users.ts";

type Listener = (appId: string, ended: EndedSessions) => void;

/** Announces ended sessions to the other instances (with the transaction) and to this one (after it). */
export class SessionEnds {
  private readonly listeners = new Set<Listener>();

  constructor(readonly context: PgContext) {
    context.subscribe(channels.sessions, (payload) => {
      const { i, a, u, s, k } = JSON.parse(payload) as { i: string; a: string; u: string; s?: string; k?: string };
      if (i !== context.instanceId)
        this.tell(a, { userId: u, ...(s ? { sessionId: s } : {}), ...(k ? { apiKeyId: k } : {}) });
    });
  }

  get instanceId(): string {
    return this.context.instanceId;
  }

  on(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The notification, sent with the transaction `q` belongs to. */
  async announce(q: Queryable, appId: string, ended: EndedSessions): Promise<void> {
    await q.query("SELECT pg_notify($1, $2)", [channels.sessions, JSON.stringify(this.payload(appId, ended))]);
  }

  /** What the notification says: `{i: instance, a: appId, u: userId, s?: sessionId, k?: apiKeyId}`. */
  payload(appId: string, ended: EndedSessions) {
    return {
      i: this.instanceId,
      a: appId,
      u: ended.userId,
      ...(ended.sessionId ? { s: ended.sessionId } : {}),
      ...(ended.apiKeyId ? { k: ended.apiKeyId } : {}),
    };
  }

  /** Tells this instance (once the write is committed): what it kept of the sessions goes first. */
  tell(appId: string, ended: EndedSessions): void {
    this.context.auth.forgetSessions(appId, ended.userId, ended.sessionId, ended.apiKeyId);
    for (const listener of this.listeners) listener(appId, ended);
  }
}

/**
 * The user's row, locked first: every statement that adds or ends a user's sessions takes it
 * before any session row (a login's trim locks the sessions it ends after it), so they never
 * wait for each other in opposite orders; and the user's `session_count` changes one statement
 * at a time.
 */
const lockedOwner = (userId: string) =>
  `owner AS (SELECT id, session_count FROM users WHERE app_id = $1 AND id = ${userId} FOR UPDATE)`;

/** The count of sessions after `gone` (a CTE of ended sessions' `user_id`). */
const counted = `counted AS (
         UPDATE users u SET session_count = u.session_count - (SELECT count(*) FROM gone)
           FROM owner o WHERE u.app_id = $1 AND u.id = o.id RETURNING 1)`;

/**
 * The user's oldest sessions past the limit once `added` more are in, ended (announced with the
 * statement), read oldest first: how many comes from the user's count (`owner`, locked), so at
 * the limit one is read, below it none. They are locked as they are read, and one ended meanwhile
 * by another statement is skipped for the next one. The statement's snapshot, taken before the
 * user's lock, may not see sessions another login added after it (they are newer than any it
 * ends); where too few are left to end, the user stays past the limit and `over` says so (the
 * caller trims again with a later snapshot: with many logins racing against a limit of one or two).
 * Parameters: $1 app, $2 user, then the sessions channel and the instance id.
 */
const ending = (added: number, channel: string, instance: string) => `ended AS (
         DELETE FROM sessions WHERE ctid = ANY (ARRAY(
           SELECT ctid FROM sessions WHERE app_id = $1 AND user_id = $2 ORDER BY seq
            LIMIT greatest((SELECT session_count FROM owner) + ${added} - (SELECT max_sessions_per_user FROM app_usage WHERE app_id = $1), 0)
            FOR UPDATE))
         RETURNING id, pg_notify(${channel}, json_build_object('i', ${instance}::text, 'a', $1::text, 'u', $2::text, 's', id)::text))`;

/** Whether the user is left past the app's limit (`counts`: a CTE of the new count). */
const over = (counts: string) =>
  `(SELECT c.session_count > (SELECT max_sessions_per_user FROM app_usage WHERE app_id = $1) FROM ${counts} c) AS over`;

/**
 * Not waiting for its commit to reach the disk (set where the user's row is locked: a statement
 * that writes nothing commits nothing): the user's row is held only while the statement runs, not
 * for a disk flush, so logins of one user do not take turns on flushes. `durably` follows it.
 */
const lazily = "set_config('synchronous_commit', 'off', true)";

/**
 * Sent after a statement that committed `lazily`, on the same connection, and waited for: a
 * transaction that writes a WAL record (a logical decoding message, which no table holds) and
 * commits synchronously, so its commit waits for the WAL to be flushed past its own record, and so
 * past the earlier commit. The login is answered only then: acknowledged means durable.
 */
const durably: [string, unknown[]] = ["SELECT pg_logical_emit_message(true, 'app-services-emulator', 'durable')", []];

/**
 * A session started (see `ending`) in one statement, its own transaction, committed `lazily`:
 * the user's row locked when the user is not disabled (with an e-mail/password login, only when it
 * is the registration's owner and the registration confirmed with the password hash the password
 * matched; with an API key's, only while the key is there and enabled, its row locked too; checked
 * again once locked: a user or key disabled or deleted meanwhile gets none; the app's row locked
 * before them, as the session's foreign key would lock it after them, where a deletion of the app
 * holding it waited for the user's row: a deadlock), the session
 * added, the oldest past the limit ended, the count and the login time written; with a
 * registration, the registration and its owner answered (as accountAndOwner), and with a custom
 * data place, the user's document (as findByField: the first in natural order whose field is the
 * user's id, found through the GIN index; `seq + 0` keeps the planner from walking the collection
 * in order instead).
 *
 * Planned once per connection: the custom data's collection and the user's id in its containment
 * are subqueries, values no plan knows, so a plan for the values (which would know a collection
 * empty or small, and the user's few documents) is estimated no cheaper than the plan for every
 * value, and PostgreSQL keeps the latter after its first five (planned for its values, the
 * statement cost 0.55–0.86 ms of planning each time); the custom data is read first, before the
 * user's row is locked. The sessions ended are deleted by their row's place (`ctid`), as locked:
 * no plan walks the app's sessions to find them by id.
 * Parameters: $1 app, $2 user, $3 session id, $4 API key id, $5 session, $6 login time or null,
 * $7 sessions channel, $8 users channel, $9 instance id; then the registration's id, identity key
 * and password hash; then the custom data's database, collection and field.
 */
function startStatement(registration: boolean, customData: boolean, apiKey: boolean): string {
  let n = 9;
  const account = registration ? { id: `$${++n}`, key: `$${++n}`, hash: `$${++n}` } : undefined;
  const custom = customData ? { db: `$${++n}`, coll: `$${++n}`, field: `$${++n}` } : undefined;
  const accountCte = account
    ? `account AS (
         SELECT a.id, a.email, a.password_hash, a.confirmed, a.user_id, a.created_at, u.id AS owner_id, u.doc AS owner_doc
           FROM userpass_accounts a
           LEFT JOIN users u ON u.app_id = a.app_id AND u.id = coalesce(a.user_id,
             (SELECT i.user_id FROM identities i
               WHERE i.app_id = a.app_id AND i.provider_type = 'local-userpass' AND i.identity_id = ${account.key}))
          WHERE a.app_id = $1 AND a.id = ${account.id}),
       `
    : "";
  const ownerCheck = account
    ? ` AND u.id IN (SELECT owner_id FROM account WHERE confirmed AND password_hash = ${account.hash})`
    : "";
  // The key's row locked too, so that a key disabled or deleted meanwhile is seen as it is now.
  const keyJoin = apiKey
    ? " JOIN api_keys k ON k.app_id = u.app_id AND k.id = $4 AND k.user_id = u.id AND NOT k.disabled"
    : "";
  // (custom-data.ts: a text longer than a token carries is not sent; its length says so.)
  const customRead = custom ? "c.custom, c.custom_bytes, " : "";
  const customJoin = custom
    ? ` LEFT JOIN LATERAL (${customDataSelect({
        app: "$1",
        db: `(SELECT ${custom.db}::text)`,
        coll: `(SELECT ${custom.coll}::text)`,
        field: custom.field,
        userId: "(SELECT $2::text)",
        maxBytes: String(maxTokenUserDataBytes),
      })}) AS c ON true`
    : "";
  return `WITH ${accountCte}owner AS (
         SELECT u.id, u.session_count, ${lazily} FROM users u${keyJoin}
          WHERE u.app_id = $1 AND u.id = $2${ownerCheck} AND NOT coalesce((u.doc ->> 'disabled')::boolean, false)
            AND EXISTS (SELECT 1 FROM apps WHERE app_id = $1 FOR KEY SHARE)
          FOR UPDATE OF u${apiKey ? " FOR SHARE OF k" : ""}),
       added AS (
         INSERT INTO sessions (app_id, id, user_id, api_key_id, doc) SELECT $1, $3, id, $4, $5 FROM owner RETURNING id),
       ${ending(1, "$7", "$9")},
       login AS (
         UPDATE users u SET session_count = o.session_count + (SELECT count(*) FROM added) - (SELECT count(*) FROM ended),
                doc = CASE WHEN $6::bigint IS NULL THEN u.doc ELSE jsonb_set(u.doc, '{lastLoginAt}', to_jsonb($6::bigint)) END
           FROM owner o WHERE u.app_id = $1 AND u.id = o.id
         RETURNING u.session_count,
                   CASE WHEN $6::bigint IS NOT NULL THEN pg_notify($8, json_build_object('i', $9::text, 'a', $1::text, 'u', $2::text)::text) END)
       SELECT ${account ? "a.id, a.email, a.password_hash, a.confirmed, a.user_id, a.created_at, a.owner_id, a.owner_doc, " : ""}${customRead}
              (SELECT count(*)::int FROM added) AS added, (SELECT array_agg(id) FROM ended) AS ended, ${over("login")}
         FROM (SELECT 1) AS one${account ? " LEFT JOIN account a ON true" : ""}${customJoin}`;
}

/** The oldest sessions past the limit ended again (see `ending`). $1 app, $2 user, $3 channel, $4 instance. */
const trimStatement = `WITH owner AS (
         SELECT id, session_count, ${lazily} FROM users WHERE app_id = $1 AND id = $2 FOR UPDATE),
       ${ending(0, "$3", "$4")},
       trimmed AS (
         UPDATE users u SET session_count = o.session_count - (SELECT count(*) FROM ended)
           FROM owner o WHERE u.app_id = $1 AND u.id = o.id RETURNING u.session_count)
       SELECT 0 AS added, (SELECT array_agg(id) FROM ended) AS ended, ${over("trimmed")}`;

interface TrimmedRow {
  /** 1 when the statement added the session (its user was there, and with a registration, usable). */
  added: number;
  ended: string[] | null;
  over: boolean | null;
}

/** What `start` answers: with a registration, its columns (null when it is gone), with custom data its text. */
export type StartedRow = TrimmedRow & {
  id?: string | null;
  email?: string;
  password_hash?: string;
  confirmed?: boolean;
  user_id?: string | null;
  created_at?: number;
  owner_id?: string | null;
  owner_doc?: Omit<StoredUser, "id"> | null;
  /** The custom data's text, null when there is none or it is longer than a token carries (then `custom_bytes` says how long). */
  custom?: string | null;
  custom_bytes?: number | null;
};

/** What a login's start checks and reads besides its session: the registration, the custom data. */
type StartLogin = { account?: { id: string; passwordHash: string }; customData?: CustomDataPlace };

export class PgSessions implements SessionRecords {
  constructor(
    private readonly db: Database,
    private readonly appId: string,
    private readonly ends: SessionEnds,
    /** What this instance keeps, and knows gone, of users and sessions (auth-cache.ts). */
    private readonly auth?: AuthCache,
  ) {}

  async get(id: string): Promise<StoredSession | undefined> {
    if (this.auth?.sessionGone(this.appId, id)) return undefined;
    const ticket = this.auth?.ticket();
    try {
      const [row] = await this.db.rows<{ doc: StoredSession }>(
        "SELECT doc FROM sessions WHERE app_id = $1 AND id = $2",
        [this.appId, id],
      );
      if (!row && ticket !== undefined) this.auth!.foundGone(ticket, this.appId, "session", id);
      return row?.doc;
    } finally {
      if (ticket !== undefined) this.auth!.drop(ticket);
    }
  }

  /** Whether a read found the session gone: it never comes back (its refresh token asks nothing). */
  knownGone(id: string): boolean {
    return this.auth?.sessionGone(this.appId, id) ?? false;
  }

  /** Adds a session and ends the user's oldest ones past the app's limit (see `start`). */
  async add(session: StoredSession): Promise<void> {
    await this.start(session, null);
  }

  /**
   * Adds a session, ends the user's oldest ones past the app's limit (app_usage's
   * max_sessions_per_user; each announced like any other end) and, with `lastLoginAt`, records the
   * login on the user (announced on the users channel): one statement (`startStatement`), with the
   * registration's check and the custom data read of a login by e-mail/password when asked.
   * Answered once it is durable, in one round trip; see docs/decisions/0025-counted-sessions.md.
   */
  async start(session: StoredSession, lastLoginAt: number | null, login: StartLogin = {}): Promise<StartedRow> {
    const { row, error } = await this.startAfter(undefined, session, lastLoginAt, login);
    if (error !== undefined) throw error;
    return row!;
  }

  /**
   * `start`, with a statement of its own sent first in the same round trip (`before`, in its own
   * transaction: a first login's user, `PgAppStore.createAndStart`); answers what that statement
   * answered (its result or its error), the row, and the error of the start or its flush, if any
   * (not thrown: what `before` did stands whatever came of the session).
   */
  async startAfter(
    before: [text: string, values: unknown[]] | undefined,
    session: StoredSession,
    lastLoginAt: number | null,
    login: StartLogin = {},
  ): Promise<{
    before: { result?: pg.QueryResult; error?: unknown } | undefined;
    row: StartedRow | undefined;
    error?: unknown;
  }> {
    const { account, customData } = login;
    const values: unknown[] = [
      this.appId,
      session.userId,
      session.id,
      session.apiKeyId ?? null,
      session,
      lastLoginAt,
      channels.sessions,
      channels.users,
      this.ends.instanceId,
    ];
    if (account) values.push(account.id, rowKey(account.id), account.passwordHash);
    if (customData) values.push(customData.database, customData.collection, customData.userIdField);
    const answers = await this.db.pipeline([
      ...(before ? [before] : []),
      [startStatement(account !== undefined, customData !== undefined, session.apiKeyId !== undefined), values],
      durably,
    ]);
    const [first, started, flushed] = before ? answers : [undefined, ...answers];
    const row = started?.result?.rows[0] as StartedRow | undefined;
    if (row) await this.ended(session.userId, row, lastLoginAt !== null);
    const error = started?.error ?? flushed?.error;
    return { before: first, row, ...(error !== undefined ? { error } : {}) };
  }

  /**
   * What a statement that started or trimmed did, told to this instance; then, while the user is
   * left past the limit, trimmed again (see `trimStatement`).
   */
  private async ended(userId: string, row: TrimmedRow, loggedIn: boolean): Promise<void> {
    if (loggedIn && row.added === 1) usersChanged(this.ends.context, this.appId, userId);
    for (let trimmed: TrimmedRow | undefined = row; trimmed; ) {
      for (const id of trimmed.ended ?? []) this.ends.tell(this.appId, { userId, sessionId: id });
      if (!trimmed.over) return;
      [trimmed] = await this.db.rows<TrimmedRow>(trimStatement, [
        this.appId,
        userId,
        channels.sessions,
        this.ends.instanceId,
      ]);
    }
  }

  async remove(id: string): Promise<boolean> {
    // One statement (its own transaction): the notification goes out only if the delete commits.
    const [row] = await this.db.rows<{ user_id: string }>(
      `WITH target AS (SELECT user_id FROM sessions WHERE app_id = $1 AND id = $2),
       ${lockedOwner("(SELECT user_id FROM target)")},
       gone AS (
         DELETE FROM sessions WHERE app_id = $1 AND id = $2
            AND user_id = coalesce((SELECT id FROM owner), (SELECT user_id FROM target))
         RETURNING user_id),
       ${counted}
       SELECT user_id, pg_notify($3, json_build_object('i', $4::text, 'a', $1::text, 'u', user_id, 's', $2::text)::text)
         FROM gone, (SELECT count(*) FROM counted) AS c`,
      [this.appId, id, channels.sessions, this.ends.instanceId],
    );
    if (!row) return false;
    this.ends.tell(this.appId, { userId: row.user_id, sessionId: id });
    return true;
  }

  async forUser(userId: string): Promise<StoredSession[]> {
    const rows = await this.db.rows<{ doc: StoredSession }>(
      "SELECT doc FROM sessions WHERE app_id = $1 AND user_id = $2 ORDER BY seq",
      [this.appId, userId],
    );
    return rows.map((r) => r.doc);
  }

  async forUsers(userIds: string[]): Promise<StoredSession[]> {
    if (userIds.length === 0) return [];
    const rows = await this.db.rows<{ doc: StoredSession }>(
      "SELECT doc FROM sessions WHERE app_id = $1 AND user_id = ANY($2::text[]) ORDER BY user_id, seq",
      [this.appId, userIds],
    );
    return rows.map((r) => r.doc);
  }

  async removeForUser(userId: string): Promise<number> {
    const ended = { userId };
    const [row] = await this.db.rows<{ n: number }>(
      `WITH ${lockedOwner("$2")},
       gone AS (
         DELETE FROM sessions WHERE app_id = $1 AND user_id = coalesce((SELECT id FROM owner), $2) RETURNING user_id),
       ${counted}
       SELECT count(*)::int AS n, CASE WHEN count(*) > 0 THEN pg_notify($3, $4) END
         FROM gone, (SELECT count(*) FROM counted) AS c`,
      [this.appId, userId, channels.sessions, JSON.stringify(this.ends.payload(this.appId, ended))],
    );
    const removed = row?.n ?? 0;
    if (removed > 0) this.ends.tell(this.appId, ended);
    return removed;
  }

  /** Ends the sessions an API key opened, inside the caller's transaction; true when there were any. */
  static async removeForApiKey(
    q: Queryable,
    ends: SessionEnds,
    appId: string,
    userId: string,
    apiKeyId: string,
  ): Promise<boolean> {
    // By the user's index: a key's sessions are its owner's.
    const { rows } = await q.query<{ n: number }>(
      `WITH ${lockedOwner("$2")},
       gone AS (
         DELETE FROM sessions WHERE app_id = $1 AND user_id = coalesce((SELECT id FROM owner), $2) AND api_key_id = $3
         RETURNING user_id),
       ${counted}
       SELECT count(*)::int AS n FROM gone, (SELECT count(*) FROM counted) AS c`,
      [appId, userId, apiKeyId],
    );
    if (!rows[0]?.n) return false;
    await ends.announce(q, appId, { userId, apiKeyId });
    return true;
  }

  async all(q: Queryable = this.db): Promise<StoredSession[]> {
    const rows = await rowsOf<{ doc: StoredSession }>(q, "SELECT doc FROM sessions WHERE app_id = $1 ORDER BY seq", [
      this.appId,
    ]);
    return rows.map((r) => r.doc);
  }
}
