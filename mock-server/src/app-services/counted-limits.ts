/**
 * The app's limits that count requests in fixed windows (docs/decisions/0018-fair-shares.md):
 *
 * - new anonymous users a day per client address (`limits.anonymousUsersPerAddress`): anonymous
 *   login creates a user every time, so without it one address could create users, and hold their
 *   quotas and streams, without end;
 * - registrations a day per client address (`limits.registrationsPerAddress`): a pending
 *   registration counts toward the app's users and sends a mail, and it never expires;
 * - confirmation and reset mails an hour per recipient (`limits.mailsPerRecipientPerHour`): so
 *   that the app cannot be made to mail one address without end, from however many addresses.
 *
 * A client address is counted by `addressKey` (an IPv6 client by its /64). Counted in the
 * database where instances share one (every instance together), else in this process; the windows
 * go by the app's clock in the harness (`windowClock`).
 *
 * The last two guard what a deployment exposes (a public sign-up, real inboxes): their defaults
 * count in production; the harness, whose developer registers and resets as often as a test
 * needs, counts them only when the app's config sets them.
 */
import type { FastifyReply } from "fastify";
import { type AppLimits, appLimits } from "../config/app-config.ts";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { addressKey } from "../http/client-address.ts";
import { normalizeEmail, type RateLimitCounters, type Store } from "../store/store.ts";

const day = 24 * 60 * 60 * 1000;
const hour = 60 * 60 * 1000;

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

  async forgetApp(appId: string): Promise<void> {
    for (const key of this.windows.keys()) if (key.split("|")[1] === appId) this.windows.delete(key);
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

/**
 * The time a window goes by: in the harness the app's clock (a test that moves it ends the
 * window, and `Retry-After` agrees with it); in production, where clocks do not move, the
 * counters' own (the database's: one clock for every instance).
 */
export const windowClock = (options: { production: boolean }, clock: { now(): number }): number | undefined =>
  options.production ? undefined : clock.now();

type CountedApp = { appId: string; config: Parameters<typeof appLimits>[0]; clock: { now(): number } };
type Limit = keyof Pick<AppLimits, "anonymousUsersPerAddress" | "registrationsPerAddress" | "mailsPerRecipientPerHour">;

/** Limits whose defaults count only in production (see above). */
const deploymentLimits = new Set<Limit>(["registrationsPerAddress", "mailsPerRecipientPerHour"]);

/**
 * Counts one more of `kind` for `subject` (a client address's key, a recipient) in the app's
 * window for `limit`; past the limit throws `refusal`, the reply saying in `Retry-After` when the
 * window ends.
 */
async function admit(
  reply: FastifyReply,
  store: Store,
  app: CountedApp,
  limit: Limit,
  [kind, subject]: [string, string],
  windowMs: number,
  refusal: (limit: number) => Error,
): Promise<void> {
  if (
    deploymentLimits.has(limit) &&
    !reply.server.emulator.options.production &&
    app.config.limits?.[limit] === undefined
  )
    return;
  const max = appLimits(app.config)[limit];
  const { hits, ttlMs } = await countersOf(store).hit(
    `${kind}|${app.appId}|${subject}`,
    windowMs,
    windowClock(reply.server.emulator.options, app.clock),
  );
  if (hits <= max) return;
  reply.header("retry-after", String(Math.max(1, Math.ceil(ttlMs / 1000))));
  throw refusal(max);
}

/** One new anonymous user of the app from this client address. */
export const admitAnonymousSignup = (reply: FastifyReply, store: Store, app: CountedApp, address: string) =>
  admit(
    reply,
    store,
    app,
    "anonymousUsersPerAddress",
    ["anon", addressKey(address)],
    day,
    errors.tooManyAnonymousUsers,
  );

/** One registration of the app asked for from this client address. */
export const admitRegistration = (reply: FastifyReply, store: Store, app: CountedApp, address: string) =>
  admit(
    reply,
    store,
    app,
    "registrationsPerAddress",
    ["register", addressKey(address)],
    day,
    errors.tooManyRegistrations,
  );

/** One confirmation or reset mail of the app to this address. */
export const admitMail = (reply: FastifyReply, store: Store, app: CountedApp, to: string) =>
  admit(reply, store, app, "mailsPerRecipientPerHour", ["mail", normalizeEmail(to)], hour, errors.tooManyMails);
