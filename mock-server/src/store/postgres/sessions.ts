/**
 * Refresh-token sessions in PostgreSQL: read on every request (with the user), so a revocation holds
 * on every instance at once. Every removal is announced on the sessions channel in the same
 * transaction (delivered when, and only if, it commits), so each instance ends the change streams
 * open on the ended sessions.
 */
import type { EndedSessions, SessionRecords, StoredSession } from "../store.ts";
import type { PgContext } from "./context.ts";
import type { Database, Queryable } from "./database.ts";
import { channels } from "./notifications.ts";

type Listener = (appId: string, ended: EndedSessions) => void;

/** Announces ended sessions to the other instances (with the transaction) and to this one (after it). */
export class SessionEnds {
  private readonly listeners = new Set<Listener>();

  constructor(private readonly context: PgContext) {
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

  /** Tells this instance (once the write is committed). */
  tell(appId: string, ended: EndedSessions): void {
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

  /**
   * Adds a session and ends the user's oldest ones past the app's limit (app_usage's
   * max_sessions_per_user). One statement when the user is far below the limit (at least a tenth
   * of it, and 10, to spare: the usual login); otherwise the user's row is the lock, and racing
   * logins of one user, on any instance, trim in turn, each seeing the sessions the previous one
   * committed (every login adds its session before it trims, so the last trim sees them all).
   */
  async add(session: StoredSession): Promise<void> {
    const [added] = await this.db.rows<{ n: number; max: number | null }>(
      `WITH added AS (
         INSERT INTO sessions (app_id, id, user_id, api_key_id, doc) VALUES ($1, $2, $3, $4, $5) RETURNING id)
       SELECT (SELECT count(*)::int FROM sessions WHERE app_id = $1 AND user_id = $3) AS n,
              (SELECT max_sessions_per_user FROM app_usage WHERE app_id = $1) AS max`,
      [this.appId, session.id, session.userId, session.apiKeyId ?? null, session],
    );
    // (n counts the sessions before this one.)
    if (!added || added.max === null || added.n + 1 + Math.max(Math.floor(added.max / 10), 10) <= added.max) return;
    const ended = await this.db.transaction(async (client) => {
      await client.query("SELECT 1 FROM users WHERE app_id = $1 AND id = $2 FOR UPDATE", [this.appId, session.userId]);
      // The sessions it ends are announced like any other end, so their change streams end too.
      const { rows } = await client.query<{ id: string }>(
        `DELETE FROM sessions WHERE app_id = $1 AND user_id = $2 AND id IN (
           SELECT id FROM sessions WHERE app_id = $1 AND user_id = $2 ORDER BY seq DESC
           OFFSET coalesce((SELECT max_sessions_per_user FROM app_usage WHERE app_id = $1), 2147483647))
         RETURNING id`,
        [this.appId, session.userId],
      );
      for (const { id } of rows)
        await this.ends.announce(client, this.appId, { userId: session.userId, sessionId: id });
      return rows.map((r) => r.id);
    });
    for (const id of ended) this.ends.tell(this.appId, { userId: session.userId, sessionId: id });
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
