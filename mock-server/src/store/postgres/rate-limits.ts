/**
 * The abuse limits' counters in the database (migration 4), so that every instance on it counts
 * the same attempts: one statement per hit, a fixed window per key timed by the database's clock
 * in production; in the harness by the app's clock the caller passes (so that moving it ends a
 * window; instances whose clocks differ then count one window by different times). Windows that
 * have ended by the database's clock are swept from time to time (the harness's clocks only run
 * ahead of it, so no window is swept before it ends).
 */
import type { RateLimitCounters } from "../store.ts";
import type { Database } from "./database.ts";

/** Hits between two sweeps of ended windows (by one instance). */
const sweepEvery = 200;

/** `$3`: the caller's clock (ms), or null for the database's. */
const now = "coalesce(to_timestamp($3::float8 / 1000), clock_timestamp())";

/**
 * The key's window has ended, or the caller's clock was put back more than a window behind its
 * start (by less, it is a request that read the clock a little before the one that opened it).
 */
const over = `(c.window_ends <= ${now} OR c.window_ends - 2 * $2 * interval '1 millisecond' > ${now})`;

const hitStatement = `
  INSERT INTO rate_limit_counters AS c (key, hits, window_ends)
  VALUES ($1, 1, ${now} + $2 * interval '1 millisecond')
  ON CONFLICT (key) DO UPDATE SET
    hits = CASE WHEN ${over} THEN 1 ELSE c.hits + 1 END,
    window_ends = CASE WHEN ${over} THEN ${now} + $2 * interval '1 millisecond' ELSE c.window_ends END
  RETURNING hits, greatest(0, ceil(extract(epoch FROM window_ends - ${now}) * 1000))::integer AS ttl_ms`;

export class PgRateLimits implements RateLimitCounters {
  private sinceSweep = 0;

  constructor(private readonly db: Database) {}

  async hit(key: string, windowMs: number, at?: number): Promise<{ hits: number; ttlMs: number }> {
    if (++this.sinceSweep >= sweepEvery) {
      this.sinceSweep = 0;
      // Not waited for, and a failure changes nothing: the next sweep takes what this one left.
      this.db.query("DELETE FROM rate_limit_counters WHERE window_ends < clock_timestamp()").catch(() => undefined);
    }
    const [row] = await this.db.rows<{ hits: number; ttl_ms: number }>(hitStatement, [key, windowMs, at ?? null]);
    return { hits: row!.hits, ttlMs: row!.ttl_ms };
  }

  async forgetScope(scope: string): Promise<void> {
    await this.db.query("DELETE FROM rate_limit_counters WHERE split_part(key, '|', 2) = $1", [scope]);
  }
}
