/**
 * Abuse limits on the calls that guess passwords or links' tokens, send mail or run the app's
 * confirmation and reset functions: login, register, confirmation resend and retry, confirm,
 * reset e-mail, reset function and reset, and an HTTPS endpoint's request signing in with
 * `email` and `password` headers — and its `apiKey` header's failed guesses (`withApiKeyGuesses`).
 * Each is limited per client address (an IPv6 client: its /64, http/client-address.ts) and, where
 * the body names one, per e-mail address (so one attacker cannot lock everyone out from one address
 * and one victim's address cannot be flooded from many). Off unless `--auth-rate-limit` is given.
 * On PostgreSQL the counters are the database's, shared by every instance on it (several
 * instances allow what one would); in memory they are the process's. Fixed windows, which go by
 * the app's clock in the harness (a test moves it past a window) and by the database's in
 * production (counted-limits.ts, `windowClock`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { AuthRateLimit } from "../config/options.ts";
import { AppServicesError, appServicesErrors as errors } from "../errors/catalogue.ts";
import { addressKey } from "../http/client-address.ts";
import { countersOf } from "../state/rate-counters.ts";
import type { RateLimitCounters } from "../store/store.ts";
import { windowClock } from "./counted-limits.ts";

/** `MAX/WINDOW` with the window in s, m or h (`10/1m`), or null with the reason it is not. */
export function parseAuthRateLimit(text: string): AuthRateLimit | string {
  const match = /^(\d+)\/(\d+)(s|m|h)$/.exec(text.trim());
  const units = { s: 1000, m: 60_000, h: 3_600_000 } as const;
  if (!match) return `'${text}' is not MAX/WINDOW, e.g. 10/1m (window in s, m or h)`;
  const max = Number(match[1]);
  const windowMs = Number(match[2]) * units[match[3] as keyof typeof units];
  if (max < 1 || windowMs < 1000 || windowMs > 86_400_000)
    return `'${text}' must allow at least 1 request in a window of 1 s to 24 h`;
  return { max, windowMs };
}

/**
 * The operations limited, and where their body names the e-mail address (none: per client address
 * only; the OAuth 2.0 flow's steps ask the provider, so they are limited too).
 */
const limited: Record<string, "username" | "email" | "none" | "password-header"> = {
  login: "username",
  // An HTTPS endpoint's or the Data API's request that signs in with `email` and `password` headers
  // (others are not counted).
  callDataApi: "password-header",
  callEndpointGet: "password-header",
  callEndpointPost: "password-header",
  callEndpointPut: "password-header",
  callEndpointPatch: "password-header",
  callEndpointDelete: "password-header",
  beginOAuthLogin: "none",
  finishOAuthLogin: "none",
  finishOAuthLoginForm: "none",
  registerUser: "email",
  resendConfirmationEmail: "email",
  // It runs the app's confirmation function and issues a token every time.
  retryCustomConfirmation: "email",
  sendResetPasswordEmail: "email",
  callResetPasswordFunction: "email",
  // A link's token guessed: each guess a look-up in the store.
  confirmUser: "none",
  resetPassword: "none",
};

function emailOf(request: FastifyRequest, field: "username" | "email" | "none" | "password-header"): string | null {
  if (field === "none") return null;
  if (field === "password-header") {
    const email = request.headers.email;
    return typeof email === "string" && email !== "" ? email.trim().toLowerCase() : null;
  }
  const body = request.body as Record<string, unknown> | undefined;
  const value = body && typeof body === "object" ? body[field] : undefined;
  return typeof value === "string" && value.length > 0 ? value.trim().toLowerCase() : null;
}

export function registerAbuseLimits(
  app: FastifyInstance,
  limit: AuthRateLimit | null,
  counters: RateLimitCounters,
): void {
  if (!limit) return;
  const { max, windowMs } = limit;
  const { options } = app.emulator;
  // Counted per app and per operation: sending mail does not use up sign-in attempts.
  const check = async (
    request: FastifyRequest,
    reply: FastifyReply,
    field: "username" | "email" | "none" | "password-header",
  ) => {
    const runtime = request.appRuntime;
    // An endpoint's password guesses are logins' (one window for both, whatever the method).
    const operation = field === "password-header" ? "login" : request.routeOptions.config.operationId;
    const scope = `${runtime?.appId ?? ""}|${operation}`;
    const keys = [`ip|${scope}|${addressKey(request.ip)}`];
    const email = emailOf(request, field);
    if (email !== null) keys.push(`email|${scope}|${email}`);
    // The app's clock in the harness (moving it ends a window), the counters' own in production.
    const now = runtime ? windowClock(options, runtime.clock) : undefined;
    for (const key of keys) {
      const { hits, ttlMs } = await counters.hit(key, windowMs, now, max);
      // (Refused: the attempt is not made, so it counts against no other key.)
      if (hits > max) {
        reply.header("retry-after", String(Math.max(1, Math.ceil(ttlMs / 1000))));
        throw errors.tooManyRequests();
      }
    }
  };
  // After the body is parsed (the e-mail is in it) and before the operation runs. (A callback
  // hook: every other request of the API passes it, and an async one costs each a promise.)
  app.addHook("preHandler", (request, reply, done) => {
    const field = limited[request.routeOptions.config.operationId ?? ""];
    if (!field) return done();
    if (field === "password-header" && (request.headers.email === undefined || request.headers.password === undefined))
      return done();
    check(request, reply, field).then(() => done(), done);
  });
}

/**
 * An HTTPS endpoint's or the Data API's request signing in with an `apiKey` header: a key that opens
 * nothing is a guess, counted per client address in a window of `--auth-rate-limit` (a valid key is
 * not counted: a backend calls with its key at any rate); past the limit the address's API-key
 * requests are refused (`429`, `Retry-After`) until the window ends — without asking the store,
 * where the refusal is known already.
 */
export async function withApiKeyGuesses<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  app: { appId: string; clock: { now(): number } },
  attempt: () => Promise<T>,
): Promise<T> {
  const { emulator } = request.server;
  const limit = emulator.options.authRateLimit;
  if (!limit) return attempt();
  const counters = countersOf(emulator.store);
  const key = `ip|${app.appId}|apiKeyGuess|${addressKey(request.ip)}`;
  const now = windowClock(emulator.options, app.clock);
  const refuse = (ttlMs: number): never => {
    reply.header("retry-after", String(Math.max(1, Math.ceil(ttlMs / 1000))));
    throw errors.tooManyRequests();
  };
  const known = counters.refused?.(key, limit.max, now);
  if (known !== undefined) refuse(known);
  try {
    return await attempt();
  } catch (error) {
    if (!(error instanceof AppServicesError) || error.statusCode !== 401) throw error;
    const { hits, ttlMs } = await counters.hit(key, limit.windowMs, now, limit.max);
    if (hits > limit.max) refuse(ttlMs);
    throw error;
  }
}
