/** Refresh-token sessions in PostgreSQL: read on every refresh, so a revocation holds on every instance. */
import type { SessionRecords, StoredSession } from "../store.ts";
import type { Database } from "./database.ts";

export class PgSessions implements SessionRecords {
  constructor(
    private readonly db: Database,
    private readonly appId: string,
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
   * max_sessions_per_user). The user's row is the lock: racing logins of one user, on any instance,
   * add and trim in turn, each seeing the sessions the previous one committed.
   */
  async add(session: StoredSession): Promise<void> {
    await this.db.transaction(async (client) => {
      await client.query("SELECT 1 FROM users WHERE app_id = $1 AND id = $2 FOR UPDATE", [this.appId, session.userId]);
      // (The DELETE sees the sessions before this statement: all but the newest limit - 1 go.)
      await client.query(
        `WITH added AS (
           INSERT INTO sessions (app_id, id, user_id, api_key_id, doc) VALUES ($1, $2, $3, $4, $5) RETURNING id)
         DELETE FROM sessions WHERE app_id = $1 AND user_id = $3 AND id IN (
           SELECT id FROM sessions WHERE app_id = $1 AND user_id = $3 ORDER BY seq DESC
           OFFSET coalesce((SELECT max_sessions_per_user - 1 FROM app_usage WHERE app_id = $1), 2147483647))`,
        [this.appId, session.id, session.userId, session.apiKeyId ?? null, session],
      );
    });
  }

  async remove(id: string): Promise<boolean> {
    const { rowCount } = await this.db.query("DELETE FROM sessions WHERE app_id = $1 AND id = $2", [this.appId, id]);
    return rowCount === 1;
  }

  async forUser(userId: string): Promise<StoredSession[]> {
    const rows = await this.db.rows<{ doc: StoredSession }>(
      "SELECT doc FROM sessions WHERE app_id = $1 AND user_id = $2 ORDER BY seq",
      [this.appId, userId],
    );
    return rows.map((r) => r.doc);
  }

  async removeForUser(userId: string): Promise<number> {
    const { rowCount } = await this.db.query("DELETE FROM sessions WHERE app_id = $1 AND user_id = $2", [
      this.appId,
      userId,
    ]);
    return rowCount ?? 0;
  }

  async all(): Promise<StoredSession[]> {
    const rows = await this.db.rows<{ doc: StoredSession }>("SELECT doc FROM sessions WHERE app_id = $1 ORDER BY seq", [
      this.appId,
    ]);
    return rows.map((r) => r.doc);
  }
}
