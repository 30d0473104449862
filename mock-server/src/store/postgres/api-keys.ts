/**
 * User API keys in PostgreSQL (the secret's SHA-256 only). A key's name is unique per user by a
 * constraint; the per-user limit is counted while the user's row is locked, so concurrent creations
 * on any instances cannot pass it.
 */
import type { AddApiKeyResult, ApiKeyRecords, StoredApiKey } from "../store.ts";
import { type Database, isUniqueViolation, lockApp, type Queryable, rowsOf } from "./database.ts";
import { PgSessions, type SessionEnds } from "./sessions.ts";

interface KeyRow {
  id: string;
  user_id: string;
  name: string;
  key_hash: string;
  disabled: boolean;
  created_at: number;
}

const columns = "id, user_id, name, key_hash, disabled, created_at";
const toKey = (row: KeyRow): StoredApiKey => ({
  id: row.id,
  userId: row.user_id,
  name: row.name,
  keyHash: row.key_hash,
  disabled: row.disabled,
  createdAt: row.created_at,
});

export class PgApiKeys implements ApiKeyRecords {
  constructor(
    private readonly db: Database,
    private readonly appId: string,
    private readonly ends: SessionEnds,
  ) {}

  async get(id: string): Promise<StoredApiKey | undefined> {
    const [row] = await this.db.rows<KeyRow>(`SELECT ${columns} FROM api_keys WHERE app_id = $1 AND id = $2`, [
      this.appId,
      id,
    ]);
    return row ? toKey(row) : undefined;
  }

  async byHash(keyHash: string): Promise<StoredApiKey | undefined> {
    const [row] = await this.db.rows<KeyRow>(`SELECT ${columns} FROM api_keys WHERE app_id = $1 AND key_hash = $2`, [
      this.appId,
      keyHash,
    ]);
    return row ? toKey(row) : undefined;
  }

  async forUser(userId: string): Promise<StoredApiKey[]> {
    const rows = await this.db.rows<KeyRow>(
      `SELECT ${columns} FROM api_keys WHERE app_id = $1 AND user_id = $2 ORDER BY seq`,
      [this.appId, userId],
    );
    return rows.map(toKey);
  }

  async forUsers(userIds: string[]): Promise<StoredApiKey[]> {
    if (userIds.length === 0) return [];
    const rows = await this.db.rows<KeyRow>(
      `SELECT ${columns} FROM api_keys WHERE app_id = $1 AND user_id = ANY($2::text[]) ORDER BY user_id, seq`,
      [this.appId, userIds],
    );
    return rows.map(toKey);
  }

  async add(key: StoredApiKey, maxPerUser: number): Promise<AddApiKeyResult> {
    try {
      return await this.db.transaction(async (client) => {
        await lockApp(client, this.appId);
        // Concurrent creations for one user take turns on the user's row (the limit is a count),
        // and a deletion of the user waits for this one (its keys go with it) or this sees it gone.
        const { rowCount } = await client.query("SELECT 1 FROM users WHERE app_id = $1 AND id = $2 FOR UPDATE", [
          this.appId,
          key.userId,
        ]);
        if (rowCount === 0) return "no-user" as const;
        const { rows } = await client.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM api_keys WHERE app_id = $1 AND user_id = $2",
          [this.appId, key.userId],
        );
        if ((rows[0]?.n ?? 0) >= maxPerUser) return "limit" as const;
        await client.query(
          `INSERT INTO api_keys (app_id, id, user_id, name, key_hash, disabled, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          [this.appId, key.id, key.userId, key.name, key.keyHash, key.disabled, key.createdAt],
        );
        return "ok" as const;
      });
    } catch (error) {
      if (isUniqueViolation(error)) return "name-taken";
      throw error;
    }
  }

  async setDisabled(id: string, disabled: boolean): Promise<boolean> {
    if (!disabled) {
      const { rowCount } = await this.db.query("UPDATE api_keys SET disabled = false WHERE app_id = $1 AND id = $2", [
        this.appId,
        id,
      ]);
      return rowCount === 1;
    }
    return this.endingSessions(
      id,
      "UPDATE api_keys SET disabled = true WHERE app_id = $1 AND id = $2 RETURNING user_id",
    );
  }

  async remove(id: string): Promise<boolean> {
    return this.endingSessions(id, "DELETE FROM api_keys WHERE app_id = $1 AND id = $2 RETURNING user_id");
  }

  /**
   * Changes a key (`change` answers its owner) and ends the sessions it opened, in one transaction.
   * The owner's row is locked first, as everything that changes a user's keys or sessions locks it
   * (a key's creation, a deletion of the user, sessions.ts): taken after the key's row, a deletion
   * racing the user's deletion or the creation of a key of its name waited for them in the
   * opposite order, and PostgreSQL ended one of each such pair as a deadlock.
   */
  private async endingSessions(id: string, change: string): Promise<boolean> {
    const outcome = await this.db.transaction(async (client) => {
      await client.query(
        `SELECT 1 FROM users WHERE app_id = $1 AND id = (SELECT user_id FROM api_keys WHERE app_id = $1 AND id = $2)
           FOR UPDATE`,
        [this.appId, id],
      );
      const { rows } = await client.query<{ user_id: string }>(change, [this.appId, id]);
      const userId = rows[0]?.user_id;
      if (userId === undefined) return { found: false, userId: "", ended: false };
      const ended = await PgSessions.removeForApiKey(client, this.ends, this.appId, userId, id);
      return { found: true, userId, ended };
    });
    if (outcome.ended) this.ends.tell(this.appId, { userId: outcome.userId, apiKeyId: id });
    return outcome.found;
  }

  async all(q: Queryable = this.db): Promise<StoredApiKey[]> {
    const rows = await rowsOf<KeyRow>(q, `SELECT ${columns} FROM api_keys WHERE app_id = $1 ORDER BY seq`, [
      this.appId,
    ]);
    return rows.map(toKey);
  }
}
