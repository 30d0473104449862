/**
 * The abuse limits' counters in the database (migration 4), so that every instance on it counts
 * the same attempts: one statement per hit, a fixed window per key timed by the database's clock.
 * Windows that have ended are swept from time to time.
 */
import type { RateLimitCounters } from "../store.ts";
import type { Database } from "./database.ts";

/** Hits between two sweeps of ended windows (by one instance). */
const sweepEvery = 200;

const hitStatement = `
  INSERT INTO rate_limit_counters AS c (key, hits, window_ends)
  VALUES ($1, 1, clock_timestamp() + $2 * interval '1 millisecond')
  ON CONFLICT (key) DO UPDATE SET
    hits = CASE WHEN c.window_ends <= clock_timestamp() THEN 1 ELSE c.hits + 1 END,
    window_ends = CASE WHEN c.window_ends <= clock_timestamp()
      THEN clock_timestamp() + $2 * interval '1 millisecond' ELSE c.window_ends END
  RETURNING hits, greatest(0, ceil(extract(epoch FROM window_ends - clock_timestamp()) * 1000))::integer AS ttl_ms`;

export class PgRateLimits implements RateLimitCounters {
  private sinceSweep = 0;

  constructor(private readonly db: Database) {}

  async hit(key: string, windowMs: number): Promise<{ hits: number; ttlMs: number }> {
    if (++this.sinceSweep >= sweepEvery) {
      this.sinceSweep = 0;
      // Not waited for, and a failure changes nothing: the next sweep takes what this one left.
      this.db.query("DELETE FROM rate_limit_counters WHERE window_ends < clock_timestamp()").catch(() => undefined);
    }
    const [row] = await this.db.rows<{ hits: number; ttl_ms: number }>(hitStatement, [key, windowMs]);
    return { hits: row!.hits, ttlMs: row!.ttl_ms };
  }
}
