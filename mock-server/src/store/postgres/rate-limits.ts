/**
 * The abuse limits' counters in the database (migration 4), so that every instance on it counts
 * the same attempts: one statement per hit, a fixed window per key timed by the database's clock
 * in production; in the harness by the app's clock the caller passes (so that moving it ends a
 * window; instances whose clocks differ then count one window by different times). Windows that
 * have ended by the database's clock are swept from time to time (the harness's clocks only run
 * ahead of it, so no window is swept before it ends).
 *
 * A key past its limit in a window by the database's clock stays past it until the window ends,
 * whatever any instance does: each instance keeps such refusals and answers them without a
 * statement, so that a client hammering a limit it has reached (a flood of logins from one
 * address) writes nothing more to the database every instance shares, nor waits on its row's lock.
 * An app reset or deleted, an EmailJS account deleted (on any instance: their notifications)
 * forgets its refusals with its windows.
 */
import type { RateLimitCounters } from "../store.ts";
import type { PgContext } from "./context.ts";
import { channels } from "./notifications.ts";

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
  /** Keys past their limit, until when (this process's `performance.now()`), oldest first. */
  private readonly refused = new Map<string, number>();
  /** Refusals kept at most (past it, those ended go, then the oldest, down to half). */
  maxRefusals = 100_000;

  constructor(private readonly context: PgContext) {
    context.subscribe(channels.apps, (payload) => {
      const { a, c } = JSON.parse(payload) as { a: string; c: string };
      if (c === "reset" || c === "deleted") this.forgetRefusals(a);
    });
    context.subscribe(channels.emailjs, (payload) => this.forgetRefusals((JSON.parse(payload) as { k: string }).k));
  }

  async hit(key: string, windowMs: number, at?: number, max?: number): Promise<{ hits: number; ttlMs: number }> {
    // (Kept by the database's clock only: the harness's clocks move, and refusals need no keeping there.)
    const keep = max !== undefined && at === undefined;
    if (keep) {
      const until = this.refused.get(key);
      if (until !== undefined) {
        const left = until - performance.now();
        if (left > 0) return { hits: max + 1, ttlMs: Math.ceil(left) };
        this.refused.delete(key);
      }
    }
    if (++this.sinceSweep >= sweepEvery) {
      this.sinceSweep = 0;
      // Not waited for, and a failure changes nothing: the next sweep takes what this one left.
      this.context.db
        .query("DELETE FROM rate_limit_counters WHERE window_ends < clock_timestamp()")
        .catch(() => undefined);
    }
    // (The window's time left was measured after this: kept from now, a refusal ends no later.)
    const asked = performance.now();
    const [row] = await this.context.db.rows<{ hits: number; ttl_ms: number }>(hitStatement, [
      key,
      windowMs,
      at ?? null,
    ]);
    if (keep && row!.hits > max) this.keepRefusal(key, asked + row!.ttl_ms);
    return { hits: row!.hits, ttlMs: row!.ttl_ms };
  }

  async forgetScope(scope: string): Promise<void> {
    this.forgetRefusals(scope);
    await this.context.db.query("DELETE FROM rate_limit_counters WHERE split_part(key, '|', 2) = $1", [scope]);
  }

  private keepRefusal(key: string, until: number): void {
    if (this.refused.size >= this.maxRefusals) {
      const now = performance.now();
      for (const [k, end] of this.refused) if (end <= now) this.refused.delete(k);
      for (const k of this.refused.keys()) {
        if (this.refused.size < this.maxRefusals / 2) break;
        this.refused.delete(k);
      }
    }
    this.refused.delete(key);
    this.refused.set(key, until);
  }

  private forgetRefusals(scope: string): void {
    for (const key of this.refused.keys()) if (key.split("|")[1] === scope) this.refused.delete(key);
  }
}
