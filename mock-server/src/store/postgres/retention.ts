/**
 * The retention sweeps in PostgreSQL (docs/decisions/0030-retention.md): each call is one
 * statement that removes at most `batch` rows, oldest first, through the index of when they ended
 * (migration 10). The rows are locked as they are chosen and rows locked elsewhere are skipped, so
 * sweeps of several instances at once take different rows and never wait on each other or on a
 * request; each statement commits alone, so a failing one removes nothing.
 */
import type { RetentionSweeps } from "../store.ts";
import type { Database } from "./database.ts";

/** At most `$2` rows of `table` whose `column` is before `$1`, oldest first, removed by `key`. */
const oldestBefore = (table: string, key: string, column: string) => `
  WITH gone AS (
    DELETE FROM ${table} WHERE ${key} = ANY (ARRAY(
      SELECT ${key} FROM ${table} WHERE ${column} < $1 ORDER BY ${column} LIMIT $2 FOR UPDATE SKIP LOCKED))
    RETURNING 1)
  SELECT count(*)::integer AS n FROM gone`;

/** The statements of the sweeps of mail and tokens ($1: before, $2: batch). */
export const sweepStatements = {
  // Queued mail has no `done_at`: it is never chosen, whatever its age.
  mail: oldestBefore("mail", "id", "done_at"),
  // Using a token needs it unexpired, and these expired before `$1`: no request wants them.
  tokens: oldestBefore("auth_tokens", "ctid", "expires_at"),
};

export class PgRetention implements RetentionSweeps {
  constructor(private readonly db: Database) {}

  private async removed(sql: string, params: unknown[]): Promise<number> {
    const [row] = await this.db.rows<{ n: number }>(sql, params);
    return row?.n ?? 0;
  }

  mail(before: number, batch: number): Promise<number> {
    return this.removed(sweepStatements.mail, [before, batch]);
  }

  tokens(before: number, batch: number): Promise<number> {
    return this.removed(sweepStatements.tokens, [before, batch]);
  }

  sessions(now: number, batch: number): Promise<number> {
    // As every statement that ends sessions (sessions.ts): the owners' rows first, then their
    // sessions, each user's count kept. The users of the oldest expired sessions are chosen; a user
    // whose row is held (a login) is skipped for the next sweep. Nothing is announced: a session
    // past its lifetime is refused already, wherever it is kept.
    return this.removed(
      `WITH expired AS (
           SELECT DISTINCT app_id, user_id FROM (
             SELECT app_id, user_id FROM sessions WHERE (doc->>'expiresAt')::float8 <= $1
              ORDER BY (doc->>'expiresAt')::float8 LIMIT $2) AS oldest),
         owner AS (
           SELECT u.app_id, u.id FROM users u JOIN expired e ON u.app_id = e.app_id AND u.id = e.user_id
            ORDER BY u.app_id, u.id FOR UPDATE OF u SKIP LOCKED),
         gone AS (
           DELETE FROM sessions s USING owner o
            WHERE s.app_id = o.app_id AND s.user_id = o.id AND (s.doc->>'expiresAt')::float8 <= $1
           RETURNING s.app_id, s.user_id),
         counted AS (
           UPDATE users u SET session_count = u.session_count - g.n
             FROM (SELECT app_id, user_id, count(*)::integer AS n FROM gone GROUP BY app_id, user_id) AS g
            WHERE u.app_id = g.app_id AND u.id = g.user_id RETURNING 1)
         SELECT (SELECT count(*) FROM gone)::integer AS n, (SELECT count(*) FROM counted) AS c`,
      [now, batch],
    );
  }
}
