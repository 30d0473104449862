/**
 * How often one session may refresh its access token on this instance, in production: each
 * refresh reads the session, its user and their custom user data from the store, so a client
 * refreshing in a loop would put them on the database every instance shares without end, while
 * realm-web refreshes when an access token expires (30 minutes) or is refused — a few times at
 * most, a few more with several tabs. Counted in this process (counting in the database would
 * itself be a write per refresh): several instances allow that many each.
 */

/** Refreshes one session may make in a minute, on one instance. */
export const refreshesPerSessionPerMinute = 60;
const windowMs = 60_000;
/** Windows kept at most; past it those ended go, then the oldest, down to half. */
const maxWindows = 100_000;

export class SessionRefreshes {
  private readonly windows = new Map<string, { count: number; endsAt: number }>();

  /** Counts a refresh of the session: undefined when allowed, else the time (ms) until it is again. */
  take(sessionKey: string, now = Date.now()): number | undefined {
    let window = this.windows.get(sessionKey);
    if (!window || window.endsAt <= now) {
      this.windows.delete(sessionKey);
      if (this.windows.size >= maxWindows) this.sweep(now);
      window = { count: 0, endsAt: now + windowMs };
      this.windows.set(sessionKey, window);
    }
    if (window.count >= refreshesPerSessionPerMinute) return window.endsAt - now;
    window.count++;
    return undefined;
  }

  private sweep(now: number): void {
    for (const [key, window] of this.windows) if (window.endsAt <= now) this.windows.delete(key);
    for (const key of this.windows.keys()) {
      if (this.windows.size < maxWindows / 2) break;
      this.windows.delete(key);
    }
  }
}
