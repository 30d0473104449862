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
import { countersOf } from "../state/rate-counters.ts";
import { normalizeEmail, type Store } from "../store/store.ts";

const day = 24 * 60 * 60 * 1000;
const hour = 60 * 60 * 1000;

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
    max,
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
