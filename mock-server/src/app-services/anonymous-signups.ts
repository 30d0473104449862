/**
 * The per-address cap on new anonymous users (config `limits.anonymousUsersPerAddress`, a fixed
 * 24-hour window per app and client address): anonymous login creates a user every time, so
 * without it one address could create users, and hold their quotas and streams, without end
 * (docs/decisions/0018-fair-shares.md). Counted in the database where instances share one (every
 * instance together), else in this process.
 */
import { appLimits } from "../config/app-config.ts";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { addressKey } from "../http/client-address.ts";
import type { RateLimitCounters, Store } from "../store/store.ts";

export const anonymousSignupWindowMs = 24 * 60 * 60 * 1000;

/** Fixed windows per key in this process (swept as they end). */
class LocalCounters implements RateLimitCounters {
  private readonly windows = new Map<string, { hits: number; endsAt: number }>();

  async hit(key: string, windowMs: number): Promise<{ hits: number; ttlMs: number }> {
    const now = Date.now();
    if (this.windows.size >= 10_000) {
      for (const [k, w] of this.windows) if (w.endsAt <= now) this.windows.delete(k);
    }
    let window = this.windows.get(key);
    if (!window || window.endsAt <= now) {
      window = { hits: 0, endsAt: now + windowMs };
      this.windows.set(key, window);
    }
    window.hits++;
    return { hits: window.hits, ttlMs: window.endsAt - now };
  }
}

const local = new WeakMap<Store, LocalCounters>();

function countersOf(store: Store): RateLimitCounters {
  if (store.rateLimits) return store.rateLimits;
  let counters = local.get(store);
  if (!counters) {
    counters = new LocalCounters();
    local.set(store, counters);
  }
  return counters;
}

/**
 * Counts one new anonymous user of the app from this client address (an IPv6 client's /64 counts
 * as one): refused (429, with the seconds to wait) past the app's cap. Answers nothing when it
 * may go on.
 */
export async function countAnonymousSignup(
  store: Store,
  app: { appId: string; config: Parameters<typeof appLimits>[0] },
  address: string,
): Promise<{ retryAfterSeconds: number } | undefined> {
  const limit = appLimits(app.config).anonymousUsersPerAddress;
  const { hits, ttlMs } = await countersOf(store).hit(
    `anon|${app.appId}|${addressKey(address)}`,
    anonymousSignupWindowMs,
  );
  return hits > limit ? { retryAfterSeconds: Math.max(1, Math.ceil(ttlMs / 1000)) } : undefined;
}

export const anonymousSignupRefusal = (app: { config: Parameters<typeof appLimits>[0] }) =>
  errors.tooManyAnonymousUsers(appLimits(app.config).anonymousUsersPerAddress);
