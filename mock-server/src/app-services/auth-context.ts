/**
 * Who is calling: bearer tokens checked against the emulator's key, the app's clock and the
 * stores. Every failure is the error the hosted service answers (so SDKs refresh, retry or log
 * out exactly as they would there).
 */
import type { FastifyRequest } from "fastify";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import type { AppRuntime } from "../runtime/app-runtime.ts";
import type { Emulator } from "../runtime/emulator.ts";
import { type JwtPayload, peekJwtPayload } from "../state/jwt.ts";
import {
  type FoundCustomData,
  type StoredSession,
  type StoredUser,
  type UserAndSession,
  userActive,
} from "../store/store.ts";

/**
 * none: no token (any Authorization header is ignored, as realm-web sends one on e-mail/password calls);
 * access / refresh: that token is required; login: the access token only with `?link=true`;
 * stream: the access token from the Authorization header or the `baas_at` query parameter;
 * refresh-with-data: the refresh token, the user's custom data read beside its session and user
 * (for a new access token, which carries it).
 */
export type AuthMode = "none" | "access" | "refresh" | "login" | "stream" | "refresh-with-data";

export interface Caller {
  app: AppRuntime;
  user: StoredUser;
  /** The session the token belongs to (the access token's `iss`, the refresh token's `baas_id`). */
  sessionId: string;
  session: StoredSession;
  claims: JwtPayload;
  /** The user's custom data, when it was read with the session (null: none; too large for a token: unread). */
  customData?: FoundCustomData;
}

/** The bearer token of the request (`Authorization: Bearer …`, or `baas_at` for streams). */
export function bearerToken(request: FastifyRequest, allowQuery: boolean): string {
  const header = request.headers.authorization;
  if (header === undefined || header === "") {
    const query = allowQuery ? (request.query as { baas_at?: unknown }).baas_at : undefined;
    if (typeof query === "string" && query !== "") return query;
    throw errors.mustAuthenticate();
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1]) throw errors.expectedBearer();
  return match[1];
}

/** The app a token names, without trusting it (to route faults, journal and CORS before auth). */
export function appOfToken(emulator: Emulator, token: string): Promise<AppRuntime | undefined> {
  const domain = peekJwtPayload(token)?.baas_domain_id;
  return typeof domain === "string" ? emulator.apps.byDomainId(domain) : Promise.resolve(undefined);
}

const nowSeconds = (app: AppRuntime) => Math.floor(app.clock.now() / 1000);

/**
 * The caller of an access token. Answered at once when the token's app is cached on this instance
 * and its store holds users and sessions in this process (the in-memory store): every
 * authenticated request comes here, and promise turns cost it more than the lookups do. Otherwise
 * a promise. Either way a refusal is thrown (synchronously, or as the promise's rejection).
 */
export function authenticateAccess(emulator: Emulator, token: string): Caller | Promise<Caller> {
  const verdict = emulator.tokenKey.verify(token);
  if (!verdict.ok) throw verdict.reason === "malformed" ? errors.expectedBearer() : errors.accessTokenInvalid();
  if (verdict.fallback) emulator.fallbackTokenUses.access++;
  const claims = verdict.payload;
  if (claims.typ !== "access") throw errors.wrongTokenType("access");
  const domain = claims.baas_domain_id;
  if (typeof domain !== "string") throw errors.accessTokenInvalid();
  const app = emulator.apps.cachedByDomainId(domain);
  return app
    ? accessCaller(app, claims)
    : emulator.apps.byDomainId(domain).then((found) => accessCaller(found, claims));
}

function accessCaller(app: AppRuntime | undefined, claims: JwtPayload): Caller | Promise<Caller> {
  if (!app) throw errors.accessTokenInvalid();
  if (typeof claims.exp !== "number" || nowSeconds(app) >= claims.exp) throw errors.accessTokenExpired();
  const { sub, iss } = claims;
  if (typeof sub !== "string" || typeof iss !== "string") throw errors.accessTokenInvalid();
  // Read from the store on every request, in one step: a user disabled or deleted, or a session
  // ended (logout, revocation, its API key disabled, a password reset) on any instance is refused.
  const store = app.store;
  const now = store.userSessionNow?.(sub, iss);
  return now
    ? sessionCaller(app, claims, now)
    : store.userSession(sub, iss).then((found) => sessionCaller(app, claims, found));
}

function sessionCaller(app: AppRuntime, claims: JwtPayload, found: UserAndSession): Caller {
  const { user, session } = found;
  // An anonymous user past its lifetime is gone, as a deleted one (its creation time comes with it,
  // from the store or what this instance keeps: nothing more is read).
  if (!userActive(user, app.clock.now())) throw errors.sessionUserGone();
  // A session past its lifetime is one not found (see authenticateRefresh).
  if (!session || app.clock.now() >= session.expiresAt) throw errors.refreshTokenNotFound();
  return { app, user, sessionId: session.id, session, claims };
}

/**
 * The caller of a refresh token. `beforeRead`, given the token's session once its signature and
 * claims are checked, may refuse it (throw) before anything is read.
 */
export async function authenticateRefresh(
  emulator: Emulator,
  token: string,
  withData = false,
  beforeRead?: (appId: string, sessionId: string) => void | Promise<void>,
): Promise<Caller> {
  const verdict = emulator.tokenKey.verify(token);
  if (!verdict.ok) throw verdict.reason === "malformed" ? errors.expectedBearer() : errors.refreshTokenSignature();
  if (verdict.fallback) emulator.fallbackTokenUses.refresh++;
  const claims = verdict.payload;
  if (claims.typ !== "refresh") throw errors.wrongTokenType("refresh");
  const app =
    typeof claims.baas_domain_id === "string" ? await emulator.apps.byDomainId(claims.baas_domain_id) : undefined;
  if (!app || typeof claims.baas_id !== "string") throw errors.refreshTokenNotFound();
  await beforeRead?.(app.appId, claims.baas_id);
  // (Ended, as a read here found before: nothing more is read.)
  if (app.sessions.knownGone?.(claims.baas_id)) throw errors.refreshTokenNotFound();
  // The session and its user (the token names both), and with them the user's custom data when
  // asked, read together: one round trip on PostgreSQL.
  const { sub } = claims;
  const named = typeof sub === "string";
  const [session, user, customData] = await Promise.all([
    app.sessions.get(claims.baas_id),
    named ? app.users.get(sub) : undefined,
    named && withData ? app.customUserDataForToken(sub) : undefined,
  ]);
  if (!session) throw errors.refreshTokenNotFound();
  // Past its lifetime the session is gone, and answers so: realm-web's logOut() lets only this
  // text pass, and its source counts an expired token among the cases that bring it.
  if (app.clock.now() >= session.expiresAt) {
    await app.sessions.remove(session.id);
    throw errors.refreshTokenNotFound();
  }
  if (session.userId !== sub) {
    // (Not the user the token names: that user's, read now.)
    const owner = await app.users.get(session.userId);
    if (!userActive(owner, app.clock.now())) throw errors.refreshTokenNotFound();
    return { app, user: owner, sessionId: session.id, session, claims };
  }
  if (!userActive(user, app.clock.now())) throw errors.refreshTokenNotFound();
  return { app, user, sessionId: session.id, session, claims, customData };
}
