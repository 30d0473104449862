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

  async add(session: StoredSession): Promise<void> {
    await this.db.query("INSERT INTO sessions (app_id, id, user_id, api_key_id, doc) VALUES ($1, $2, $3, $4, $5)", [
      this.appId,
      session.id,
      session.userId,
      session.apiKeyId ?? null,
      session,
    ]);
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
