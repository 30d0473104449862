/**
 * Rate-limit counters kept in this process, for a store that keeps none shared by its instances
 * (the in-memory store): fixed windows per key, by the caller's clock.
 */
import type { RateLimitCounters, Store } from "../store/store.ts";

/** Windows kept at most; a sweep past it forgets the half started longest ago. */
export const maxLocalWindows = 100_000;
const firstSweepAt = 10_000;

/**
 * Fixed windows per key in this process, by the caller's clock. Ended windows are swept when the
 * count has doubled since the last sweep (so each hit costs a constant share of sweeping, however
 * many addresses a client rotates through); past `maxLocalWindows` the windows started longest
 * ago are forgotten too, which takes that many new keys within a window to do to any one key.
 */
export class LocalCounters implements RateLimitCounters {
  private readonly windows = new Map<string, { hits: number; endsAt: number }>();
  private sweepAt = firstSweepAt;
  /** Sweeps so far (tests count them). */
  sweeps = 0;

  get size(): number {
    return this.windows.size;
  }

  async hit(key: string, windowMs: number, now = Date.now()): Promise<{ hits: number; ttlMs: number }> {
    let window = this.windows.get(key);
    // Ended, or the clock put back more than a window behind its start (by less, it is a request
    // that read the clock a little before another one that opened the window).
    if (!window || window.endsAt <= now || window.endsAt - 2 * windowMs > now) {
      // Set anew, so that the map stays in the order the windows started.
      this.windows.delete(key);
      window = { hits: 0, endsAt: now + windowMs };
      this.windows.set(key, window);
      if (this.windows.size >= this.sweepAt) this.sweep();
    }
    window.hits++;
    return { hits: window.hits, ttlMs: window.endsAt - now };
  }

  refused(key: string, max: number, now = Date.now()): number | undefined {
    const window = this.windows.get(key);
    return window && window.hits > max && window.endsAt > now ? window.endsAt - now : undefined;
  }

  async forgetScope(scope: string): Promise<void> {
    for (const key of this.windows.keys()) if (key.split("|")[1] === scope) this.windows.delete(key);
  }

  private sweep(): void {
    this.sweeps++;
    // By real time: the apps' clocks only run ahead of it, so no window is swept before it ends.
    const now = Date.now();
    for (const [k, w] of this.windows) if (w.endsAt <= now) this.windows.delete(k);
    let over = this.windows.size - maxLocalWindows / 2;
    for (const k of this.windows.keys()) {
      if (over-- <= 0) break;
      this.windows.delete(k);
    }
    this.sweepAt = Math.min(maxLocalWindows, Math.max(firstSweepAt, 2 * this.windows.size));
  }
}

const local = new WeakMap<Store, LocalCounters>();

/** The store's shared counters, else this process's for the store. */
export function countersOf(store: Store): RateLimitCounters {
  if (store.rateLimits) return store.rateLimits;
  let counters = local.get(store);
  if (!counters) {
    counters = new LocalCounters();
    local.set(store, counters);
  }
  return counters;
}
