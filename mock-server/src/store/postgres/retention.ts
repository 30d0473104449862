/**
 * The retention sweeps in PostgreSQL (docs/decisions/0030-retention.md): each call is one
 * statement that removes at most `batch` rows, oldest first, through the index of when they ended
 * (migration 10). The rows are locked as they are chosen and rows locked elsewhere are skipped, so
 * sweeps of several instances at once take different rows and never wait on each other or on a
 * request; each statement commits alone, so a failing one removes nothing.
 */
import type { RetentionSweeps } from "../store.ts";
import type { PgContext } from "./context.ts";
import type { Database } from "./database.ts";
import { channels } from "./notifications.ts";
import type { SessionEnds } from "./sessions.ts";
import { usersChanged } from "./users.ts";

/** At most `$2` rows of `table` whose `column` is before `$1`, oldest first, removed by `key`. */
const oldestBefore = (table: string, key: string, column: string) => `
  WITH gone AS (
    DELETE FROM ${table} WHERE ${key} = ANY (ARRAY(
      SELECT ${key} FROM ${table} WHERE ${column} < $1 ORDER BY ${column} LIMIT $2 FOR UPDATE SKIP LOCKED))
    RETURNING 1)
  SELECT count(*)::integer AS n FROM gone`;

/**
 * A user all of whose identities are anonymous (store.ts `isAnonymousUser`), in SQL: the predicate
 * of the index the sweep reads (migration 12), which it must repeat word for word.
 */
const anonymousUser = `doc->'identities' @> '[{"provider_type": "anon-user"}]'
         AND NOT jsonb_path_exists(doc->'identities', '$[*] ? (@.provider_type != "anon-user")')`;

/** The statements of the sweeps ($1: before, $2: batch). */
export const sweepStatements = {
  // Queued mail has no `done_at`: it is never chosen, whatever its age.
  mail: oldestBefore("mail", "id", "done_at"),
  // Using a token needs it unexpired, and these expired before `$1`: no request wants them.
  tokens: oldestBefore("auth_tokens", "ctid", "expires_at"),
  // As a deletion (apps.ts `deleteUser`) removes a user, in one statement: the users locked first
  // (one held by a login or a deletion now is skipped for the next sweep), then their sessions and
  // API keys; their identities go with them (ON DELETE CASCADE) and the app's count of users with
  // the users' rows (the usage triggers). Anonymous users have no e-mail/password registration.
  // Each user's end is announced on the sessions and users channels, so every instance ends its
  // change streams and forgets what it kept of the user (auth-cache.ts); answered: the users.
  // $3: the sessions channel, $4: the users channel, $5: this instance.
  anonymousUsers: anonymousUsersOf("every app"),
  /** The same for one app ($6), on that app's clock (AppStore.removeEndedUsers). */
  anonymousUsersOfApp: anonymousUsersOf("one app"),
};

function anonymousUsersOf(scope: "every app" | "one app"): string {
  return `
    WITH chosen AS (
           SELECT app_id, id FROM users
            WHERE ${anonymousUser} AND (doc->>'createdAt')::float8 <= $1${scope === "one app" ? " AND app_id = $6" : ""}
            ORDER BY (doc->>'createdAt')::float8 LIMIT $2 FOR UPDATE SKIP LOCKED),
         gone AS (
           DELETE FROM users u USING chosen c WHERE u.app_id = c.app_id AND u.id = c.id RETURNING u.app_id, u.id),
         sessions_gone AS (
           DELETE FROM sessions s USING gone g WHERE s.app_id = g.app_id AND s.user_id = g.id RETURNING 1),
         keys_gone AS (
           DELETE FROM api_keys k USING gone g WHERE k.app_id = g.app_id AND k.user_id = g.id RETURNING 1)
    SELECT g.app_id, g.id,
           pg_notify($3, json_build_object('i', $5::text, 'a', g.app_id, 'u', g.id)::text),
           pg_notify($4, json_build_object('i', $5::text, 'a', g.app_id, 'u', g.id)::text)
      FROM gone g, (SELECT count(*) FROM sessions_gone) AS s, (SELECT count(*) FROM keys_gone) AS k`;
}

export class PgRetention implements RetentionSweeps {
  private readonly db: Database;

  constructor(
    private readonly context: PgContext,
    private readonly ends: SessionEnds,
  ) {
    this.db = context.db;
  }

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

  async anonymousUsers(createdBefore: number, batch: number): Promise<number> {
    return (await removeAnonymousUsers(this.context, this.ends, createdBefore, batch)).length;
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

/**
 * Removes at most `batch` anonymous users created at or before `createdBefore` (of one app, with
 * `appId`), as a deletion does, announced to every instance: their ids.
 */
export async function removeAnonymousUsers(
  context: PgContext,
  ends: SessionEnds,
  createdBefore: number,
  batch: number,
  appId?: string,
): Promise<string[]> {
  const params: unknown[] = [createdBefore, batch, channels.sessions, channels.users, context.instanceId];
  const gone = await context.db.rows<{ app_id: string; id: string }>(
    appId === undefined ? sweepStatements.anonymousUsers : sweepStatements.anonymousUsersOfApp,
    appId === undefined ? params : [...params, appId],
  );
  // This instance learns of them now (the others from the notifications).
  for (const { app_id: app, id: userId } of gone) {
    usersChanged(context, app, userId);
    ends.tell(app, { userId });
  }
  return gone.map((row) => row.id);
}
