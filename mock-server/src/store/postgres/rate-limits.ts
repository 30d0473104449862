/**
 * The abuse limits' counters in the database (migration 4), so that every instance on it counts
 * the same attempts: one statement per hit, a fixed window per key timed by the database's clock
 * in production; in the harness by the app's clock the caller passes (so that moving it ends a
 * window; instances whose clocks differ then count one window by different times). Windows that
 * have ended by the database's clock are swept from time to time (the harness's clocks only run
 * ahead of it, so no window is swept before it ends).
 *
 * A key past its limit stays past it until its window ends, whatever any instance does: each
 * instance keeps such refusals (by the database's clock, or in the harness by the app's clock the
 * caller gives) and answers them without a statement, so that a client hammering a limit it has
 * reached (a flood of logins from one address) writes nothing more to the database every instance
 * shares, nor waits on its row's lock.
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

/** A key past its limit: until when, by the database's clock (this process's `performance.now()`) or an app's. */
interface Refusal {
  until: number;
  windowMs: number;
  byAppClock: boolean;
}

export class PgRateLimits implements RateLimitCounters {
  private sinceSweep = 0;
  /** Keys past their limit, oldest first. */
  private readonly refusals = new Map<string, Refusal>();
  /** Refusals kept at most (past it, those ended go, then the oldest, down to half). */
  maxRefusals = 100_000;

  constructor(private readonly context: PgContext) {
    context.subscribe(channels.apps, (payload) => {
      const { a, c } = JSON.parse(payload) as { a: string; c: string };
      if (c === "reset" || c === "deleted") this.forgetRefusals(a);
    });
    context.subscribe(channels.emailjs, (payload) => {
      const { k, c } = JSON.parse(payload) as { k: string; c?: string };
      if (c !== "created") this.forgetRefusals(k);
    });
  }

  async hit(key: string, windowMs: number, at?: number, max?: number): Promise<{ hits: number; ttlMs: number }> {
    if (max !== undefined) {
      const left = this.refused(key, max, at);
      if (left !== undefined) return { hits: max + 1, ttlMs: left };
    }
    if (++this.sinceSweep >= sweepEvery) {
      this.sinceSweep = 0;
      // Not waited for, and a failure changes nothing: the next sweep takes what this one left.
      this.context.db
        .query("DELETE FROM rate_limit_counters WHERE window_ends < clock_timestamp()")
        .catch(() => undefined);
    }
    // (By the database's clock the window's time left was measured after this: kept from now, a
    // refusal ends no later. By an app's clock it was measured from `at`.)
    const asked = at ?? performance.now();
    const [row] = await this.context.db.rows<{ hits: number; ttl_ms: number }>(hitStatement, [
      key,
      windowMs,
      at ?? null,
    ]);
    if (max !== undefined && row!.hits > max)
      this.keepRefusal(key, { until: asked + row!.ttl_ms, windowMs, byAppClock: at !== undefined });
    return { hits: row!.hits, ttlMs: row!.ttl_ms };
  }

  refused(key: string, _max: number, at?: number): number | undefined {
    const refusal = this.refusals.get(key);
    if (!refusal || refusal.byAppClock !== (at !== undefined)) return undefined;
    const now = at ?? performance.now();
    // Ended, or (an app's clock) put back more than a window behind its start, as the database
    // would start a new window then.
    if (now >= refusal.until || refusal.until - 2 * refusal.windowMs > now) {
      this.refusals.delete(key);
      return undefined;
    }
    return Math.ceil(refusal.until - now);
  }

  async forgetScope(scope: string): Promise<void> {
    this.forgetRefusals(scope);
    await this.context.db.query("DELETE FROM rate_limit_counters WHERE split_part(key, '|', 2) = $1", [scope]);
  }

  private keepRefusal(key: string, refusal: Refusal): void {
    if (this.refusals.size >= this.maxRefusals) {
      const now = performance.now();
      for (const [k, r] of this.refusals) if (!r.byAppClock && r.until <= now) this.refusals.delete(k);
      for (const k of this.refusals.keys()) {
        if (this.refusals.size < this.maxRefusals / 2) break;
        this.refusals.delete(k);
      }
    }
    this.refusals.delete(key);
    this.refusals.set(key, refusal);
  }

  private forgetRefusals(scope: string): void {
    for (const key of this.refusals.keys()) if (key.split("|")[1] === scope) this.refusals.delete(key);
  }
}
