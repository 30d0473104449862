/**
 * Confirmation and reset tokens in PostgreSQL. Using one up is a single conditional update, so of
 * racing requests on any instances exactly one gets it.
 */
import {
  AppGoneError,
  type AuthTokenFilter,
  type AuthTokenKind,
  type AuthTokenRecords,
  type ConsumeResult,
  normalizeEmail,
  type StoredAuthToken,
} from "../store.ts";
import { type Database, type Queryable, rowsOf } from "./database.ts";

/** The tokens of the app ($1) of an address ($2) and kind ($3), each when given. */
const matching = "app_id = $1 AND ($2::text IS NULL OR email_key = $2) AND ($3::text IS NULL OR kind = $3)";

export class PgAuthTokens implements AuthTokenRecords {
  constructor(
    private readonly db: Database,
    private readonly appId: string,
  ) {}

  async add(token: StoredAuthToken): Promise<boolean> {
    // Only while the app and the token's registration are there, their rows locked (KEY SHARE)
    // until this commits, the app's first (CASE keeps the order), as resets and deletions lock it.
    const [row] = await this.db.rows<{ app: boolean; added: boolean }>(
      `WITH app AS MATERIALIZED (SELECT 1 FROM apps WHERE app_id = $1 FOR KEY SHARE),
            added AS (
              INSERT INTO auth_tokens (app_id, token_id, email_key, kind, used, expires_at, doc)
              SELECT $1, $2, $3, $4, $5, $6, $7
              WHERE CASE WHEN NOT EXISTS (SELECT 1 FROM app) THEN false
                ELSE EXISTS (SELECT 1 FROM userpass_accounts WHERE app_id = $1 AND email_key = $3
                  AND ($8::text IS NULL OR id = $8) FOR KEY SHARE) END
              RETURNING 1)
       SELECT EXISTS (SELECT 1 FROM app) AS app, EXISTS (SELECT 1 FROM added) AS added`,
      [
        this.appId,
        token.tokenId,
        normalizeEmail(token.email),
        token.kind,
        token.used,
        token.expiresAt,
        token,
        token.accountId ?? null,
      ],
    );
    if (!row!.app) throw new AppGoneError(this.appId);
    return row!.added;
  }

  private async find(tokenId: string): Promise<StoredAuthToken | undefined> {
    const [row] = await this.db.rows<{ doc: StoredAuthToken; used: boolean }>(
      "SELECT doc, used FROM auth_tokens WHERE app_id = $1 AND token_id = $2",
      [this.appId, tokenId],
    );
    return row ? { ...row.doc, used: row.used } : undefined;
  }

  async check(kind: AuthTokenKind, token: string, tokenId: string, now: number): Promise<ConsumeResult> {
    const stored = await this.find(tokenId);
    if (!stored || stored.kind !== kind || stored.token !== token) return { ok: false, reason: "unknown" };
    if (stored.used) return { ok: false, reason: "used" };
    if (now >= stored.expiresAt) return { ok: false, reason: "expired" };
    return { ok: true, token: stored };
  }

  async consume(kind: AuthTokenKind, token: string, tokenId: string, now: number): Promise<ConsumeResult> {
    const [row] = await this.db.rows<{ doc: StoredAuthToken }>(
      `UPDATE auth_tokens SET used = true
        WHERE app_id = $1 AND token_id = $2 AND kind = $3 AND doc->>'token' = $4 AND NOT used AND expires_at > $5
        RETURNING doc`,
      [this.appId, tokenId, kind, token, now],
    );
    if (row) return { ok: true, token: { ...row.doc, used: true } };
    // Not used up by this call: say why, as the check would.
    const why = await this.check(kind, token, tokenId, now);
    return why.ok ? { ok: false, reason: "used" } : why;
  }

  async markUsed(tokenId: string): Promise<void> {
    await this.db.query("UPDATE auth_tokens SET used = true WHERE app_id = $1 AND token_id = $2", [
      this.appId,
      tokenId,
    ]);
  }

  async list(filter: AuthTokenFilter = {}, q: Queryable = this.db): Promise<StoredAuthToken[]> {
    const rows = await rowsOf<{ doc: StoredAuthToken; used: boolean }>(
      q,
      `SELECT doc, used FROM auth_tokens WHERE ${matching} ORDER BY seq`,
      this.filterValues(filter),
    );
    return rows.map((r) => ({ ...r.doc, used: r.used }));
  }

  async newest(filter: AuthTokenFilter, limit: number): Promise<{ tokens: StoredAuthToken[]; total: number }> {
    const values = this.filterValues(filter);
    const [rows, [count]] = await Promise.all([
      this.db.rows<{ doc: StoredAuthToken; used: boolean }>(
        `SELECT doc, used FROM auth_tokens WHERE ${matching} ORDER BY seq DESC LIMIT $4`,
        [...values, limit],
      ),
      this.db.rows<{ n: number }>(`SELECT count(*)::int AS n FROM auth_tokens WHERE ${matching}`, values),
    ]);
    return { tokens: rows.reverse().map((r) => ({ ...r.doc, used: r.used })), total: count?.n ?? 0 };
  }

  private filterValues(filter: AuthTokenFilter): unknown[] {
    return [this.appId, filter.email === undefined ? null : normalizeEmail(filter.email), filter.kind ?? null];
  }
}
