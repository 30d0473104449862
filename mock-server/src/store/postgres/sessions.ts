/**
 * Refresh-token sessions in PostgreSQL. Every removal is announced on the sessions channel in the
 * same transaction (delivered when, and only if, it commits), so each instance ends the change
 * streams open on the ended sessions and forgets what it kept of them (auth-cache.ts).
 */
import type { EndedSessions, SessionRecords, StoredSession } from "../store.ts";
import type { PgContext } from "./context.ts";
import type { Database, Queryable } from "./database.ts";
import { channels } from "./notifications.ts";
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

export class PgSessions implements SessionRecords {
  constructor(
    private readonly db: Database,
    private readonly appId: string,
    private readonly ends: SessionEnds,
  ) {}

  async get(id: string): Promise<StoredSession | undefined> {
    const [row] = await this.db.rows<{ doc: StoredSession }>("SELECT doc FROM sessions WHERE app_id = $1 AND id = $2", [
      this.appId,
      id,
    ]);
    return row?.doc;
  }

  /** Adds a session and ends the user's oldest ones past the app's limit (see `start`). */
  async add(session: StoredSession): Promise<void> {
    await this.start(session, null);
  }

  /**
   * Adds a session, ends the user's oldest ones past the app's limit (app_usage's
   * max_sessions_per_user; each announced like any other end) and, with `lastLoginAt`, records the
   * login on the user (announced on the users channel). Two statements, each its own transaction,
   * sent together and answered in one round trip (`Database.pipeline`):
   * 1. the session, inserted and committed durably (the login is answered only then);
   * 2. the trim and the login time, in one statement whose snapshot is taken after the insert
   *    committed. Racing logins of one user, on any instance, each trim after their own insert, so
   *    the trim with the latest snapshot sees every session added and keeps the newest `limit`;
   *    an earlier trim only ends sessions older than `limit` it saw, which are older than those
   *    too: the user is left with exactly the limit. This transaction does not wait for its commit
   *    to reach the disk, so the user's row (updated) is held only while it runs, not for a disk
   *    flush (logins of one user took turns on that flush); what it writes — a login time,
   *    sessions ended for the limit — is flushed with the next commit anyway, and a crash in
   *    between can only bring back the login time before it, or a session the limit had ended.
   *    The sessions to end are listed once (an ARRAY subquery: an init plan) and deleted by key:
   *    as `id IN (…)`, with statistics that had not yet seen the user's sessions, the planner ran
   *    the list again for each of them (1.8 ms a login at the limit of 100, against 0.4 ms).
   */
  async start(session: StoredSession, lastLoginAt: number | null): Promise<void> {
    const answers = await this.db.pipeline([
      [
        "INSERT INTO sessions (app_id, id, user_id, api_key_id, doc) VALUES ($1, $2, $3, $4, $5)",
        [this.appId, session.id, session.userId, session.apiKeyId ?? null, session],
      ],
      [
        // (The login time only once the session is in: a failed insert leaves it as it was.) Its
        // own transaction, set not to wait for its flush (set_config local to it: read at its
        // commit, which ends the statement); evaluated wherever the statement writes a row.
        `WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true)),
         login AS (
           UPDATE users SET doc = jsonb_set(doc, '{lastLoginAt}', to_jsonb($3::bigint))
            WHERE app_id = $1 AND id = $2 AND $3::bigint IS NOT NULL
              AND EXISTS (SELECT 1 FROM sessions WHERE app_id = $1 AND id = $4)
           RETURNING id),
         ended AS (
           DELETE FROM sessions WHERE app_id = $1 AND user_id = $2 AND id = ANY (ARRAY(
             SELECT id FROM sessions WHERE app_id = $1 AND user_id = $2 ORDER BY seq DESC
             OFFSET coalesce((SELECT max_sessions_per_user FROM app_usage WHERE app_id = $1), 2147483647)))
           RETURNING id)
         SELECT id, pg_notify($5, json_build_object('i', $7::text, 'a', $1::text, 'u', $2::text, 's', id)::text)
           FROM ended, lazy
         UNION ALL
         SELECT NULL, pg_notify($6, json_build_object('i', $7::text, 'a', $1::text, 'u', id)::text) FROM login, lazy`,
        [this.appId, session.userId, lastLoginAt, session.id, channels.sessions, channels.users, this.ends.instanceId],
      ],
    ]);
    // (The second transaction may have committed though the insert failed: what it did is told.)
    const second = (answers[1]?.result?.rows ?? []) as { id: string | null }[];
    if (second.some((r) => r.id === null)) usersChanged(this.ends.context, this.appId, session.userId);
    for (const { id } of second) if (id !== null) this.ends.tell(this.appId, { userId: session.userId, sessionId: id });
    const failure = answers.find((a) => a.error !== undefined);
    if (failure) throw failure.error;
  }

  async remove(id: string): Promise<boolean> {
    // One statement (its own transaction): the notification goes out only if the delete commits.
    const [row] = await this.db.rows<{ user_id: string }>(
      `WITH gone AS (DELETE FROM sessions WHERE app_id = $1 AND id = $2 RETURNING user_id)
       SELECT user_id, pg_notify($3, json_build_object('i', $4::text, 'a', $1::text, 'u', user_id, 's', $2::text)::text)
         FROM gone`,
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

  async removeForUser(userId: string): Promise<number> {
    const ended = { userId };
    const [row] = await this.db.rows<{ n: number }>(
      `WITH gone AS (DELETE FROM sessions WHERE app_id = $1 AND user_id = $2 RETURNING 1)
       SELECT count(*)::int AS n, CASE WHEN count(*) > 0 THEN pg_notify($3, $4) END FROM gone`,
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
    const { rowCount } = await q.query("DELETE FROM sessions WHERE app_id = $1 AND user_id = $2 AND api_key_id = $3", [
      appId,
      userId,
      apiKeyId,
    ]);
    if (!rowCount) return false;
    await ends.announce(q, appId, { userId, apiKeyId });
    return true;
  }

  async all(): Promise<StoredSession[]> {
    const rows = await this.db.rows<{ doc: StoredSession }>("SELECT doc FROM sessions WHERE app_id = $1 ORDER BY seq", [
      this.appId,
    ]);
    return rows.map((r) => r.doc);
  }
}
