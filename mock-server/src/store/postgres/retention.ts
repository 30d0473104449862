/**
 * The retention sweeps in PostgreSQL (docs/decisions/0029-retention.md): each call is one
 * statement that removes at most `batch` rows, oldest first, through the index of when they ended
 * (migration 10). The rows are locked as they are chosen and rows locked elsewhere are skipped, so
 * sweeps of several instances at once take different rows and never wait on each other or on a
 * request; each statement commits alone, so a failing one removes nothing.
 */
import type { RetentionSweeps } from "../store.ts";
import type { Database } from "./database.ts";

const count = (rows: { n: number }[]) => rows[0]?.n ?? 0;

export class PgRetention implements RetentionSweeps {
  constructor(private readonly db: Database) {}

  async mail(before: number, batch: number): Promise<number> {
    // Queued mail has no `done_at`: it is never chosen, whatever its age.
    return count(
      await this.db.rows<{ n: number }>(
        `WITH gone AS (
           DELETE FROM mail WHERE id = ANY (ARRAY(
             SELECT id FROM mail WHERE done_at < $1 ORDER BY done_at LIMIT $2 FOR UPDATE SKIP LOCKED))
           RETURNING 1)
         SELECT count(*)::integer AS n FROM gone`,
        [before, batch],
      ),
    );
  }

  async tokens(before: number, batch: number): Promise<number> {
    // Using a token needs it unexpired, and these expired before `before`: no request wants them.
    return count(
      await this.db.rows<{ n: number }>(
        `WITH gone AS (
           DELETE FROM auth_tokens WHERE ctid = ANY (ARRAY(
             SELECT ctid FROM auth_tokens WHERE expires_at < $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED))
           RETURNING 1)
         SELECT count(*)::integer AS n FROM gone`,
        [before, batch],
      ),
    );
  }

  async sessions(now: number, batch: number): Promise<number> {
    // As every statement that ends sessions (sessions.ts): the owners' rows first, then their
    // sessions, each user's count kept. The users of the oldest expired sessions are chosen; a user
    // whose row is held (a login) is skipped for the next sweep. Nothing is announced: a session
    // past its lifetime is refused already, wherever it is kept.
    return count(
      await this.db.rows<{ n: number }>(
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
      ),
    );
  }
}
