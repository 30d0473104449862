/**
 * How often one session may refresh its access token on this instance, in production: each
 * refresh reads the session, its user and their custom user data from the store, so a client
 * refreshing in a loop would put them on the database every instance shares without end, while
 * realm-web refreshes when an access token expires (30 minutes) or is refused — a few times at
 * most, a few more with several tabs. Counted in this process's fixed windows (state/rate-counters.ts;
 * counting in the database would itself be a write per refresh): several instances allow that many each.
 */
import type { LocalCounters } from "../state/rate-counters.ts";

/** Refreshes one session may make in a minute, on one instance. */
export const refreshesPerSessionPerMinute = 60;

/** Counts a refresh of the session: undefined when allowed, else the time (ms) until it is again. */
export async function takeRefresh(counters: LocalCounters, sessionKey: string): Promise<number | undefined> {
  const { hits, ttlMs } = await counters.hit(sessionKey, 60_000);
  return hits > refreshesPerSessionPerMinute ? ttlMs : undefined;
}
