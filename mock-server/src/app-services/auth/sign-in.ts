/**
 * What follows a provider's verdict, for `POST …/login` and the OAuth 2.0 callback alike: the
 * user who owns the identity (created at its first login; the store decides between concurrent
 * first logins), a new session and its tokens; or, when linking, the identity attached to the
 * signed-in user.
 */
import type { FastifyBaseLogger, FastifyRequest } from "fastify";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { publicOrigin } from "../../http/areas.ts";
import type { SignInContext } from "../../oauth2/authenticate.ts";
import { type ProviderAccount, profileData } from "../../oauth2/profile.ts";
import type { OAuth2Settings } from "../../oauth2/settings.ts";
import type { AppRuntime } from "../../runtime/app-runtime.ts";
import { fireAuthTriggers } from "../../runtime/auth-triggers.ts";
import type { Emulator } from "../../runtime/emulator.ts";
import { newObjectIdHex } from "../../state/ids.ts";
import {
  type IdentityClaim,
  type RegistrationClaim,
  type RegistrationSession,
  type StoredIdentity,
  type StoredUser,
  secondUserpass,
} from "../../store/store.ts";
import type { Caller } from "../auth-context.ts";
import { accessTokenFor, newSession, type SessionStart, sessionReply, startSession } from "../session-tokens.ts";

export interface Authenticated {
  /** The user the credentials belong to, if a user object exists already. */
  user: StoredUser | undefined;
  identity: StoredIdentity;
  /** Profile data for a user created by this login. */
  data: Record<string, unknown>;
  /** The e-mail/password registration that remembers the user who owns the identity. */
  claimAccount?: RegistrationClaim;
  /** That registration as the password check found it, when it was tied to its user then. */
  registration?: RegistrationLogin;
  apiKeyId?: string;
  /** The provider tells the profile afresh at each login (custom token, OAuth 2.0): keep it current. */
  refreshData?: boolean;
}

/**
 * An e-mail/password registration tied to its user, as read for the password check: the login
 * reads it again with its owner as it starts the session (`AppStore.startRegistrationSession`).
 */
export interface RegistrationLogin {
  accountId: string;
  /** The user it was tied to. */
  ownerId: string;
  /** The hash the password matched. */
  passwordHash: string;
}

/** The identity a Google, Apple or Facebook account is, with the profile data the app asks for. */
export async function providerIdentity(
  app: AppRuntime,
  settings: OAuth2Settings,
  account: ProviderAccount,
): Promise<Authenticated> {
  return {
    user: await app.users.byIdentity(settings.provider, account.sub),
    identity: { id: account.sub, provider_type: settings.provider, provider_id: app.providerId(settings.provider) },
    data: profileData(settings, account),
    refreshData: true,
  };
}

/** How the OAuth 2.0 providers are reached from this request. */
export function signInContext(request: FastifyRequest, app: AppRuntime): SignInContext {
  return { app, origin: publicOrigin(request), source: request.server.emulator.oauth2, log: request.log };
}

export type LoginReply = Awaited<ReturnType<typeof sessionReply>>;

/**
 * Starts the session of an e-mail/password login whose registration was tied to its user, in one
 * step that reads the registration again (`AppStore.startRegistrationSession`), and keeps the
 * registration for the next login here (`UserRecords.keepAccount`). Answers the login reply, or,
 * when the step did not start it, the registration as it is now (undefined: gone).
 */
export async function startRegistrationLogin(
  emulator: Emulator,
  app: AppRuntime,
  registration: RegistrationLogin,
  deviceId: string,
  log: FastifyBaseLogger,
): Promise<{ reply: LoginReply } | { now: RegistrationSession | undefined }> {
  const { accountId, ownerId, passwordHash } = registration;
  const session = newSession(app, ownerId, { providerType: "local-userpass", identityId: accountId, deviceId });
  const found = await app.store.startRegistrationSession(
    accountId,
    passwordHash,
    session,
    session.createdAt,
    app.customUserDataPlace(),
  );
  if (!found?.started) return { now: found };
  app.users.keepAccount?.(found.account);
  const reply = await sessionReply(emulator, app, found.owner, session, found.customData);
  emulator.events.emit({ type: "user", appId: app.appId, action: "logged-in", id: found.owner.id });
  fireAuthTriggers(app, "LOGIN", found.owner, ["local-userpass"], log);
  return { reply };
}

/** The user with its profile data as the provider tells it now, where the provider tells it at each login. */
async function refreshed(app: AppRuntime, auth: Authenticated, user: StoredUser): Promise<StoredUser> {
  return auth.refreshData ? ((await app.users.update(user.id, { data: auth.data })) ?? user) : user;
}

/** A new user of the identity (not stored yet). */
const newUserOf = (app: AppRuntime, auth: Authenticated): StoredUser => ({
  id: newObjectIdHex(),
  type: "normal",
  disabled: false,
  createdAt: app.clock.now(),
  identities: [auth.identity],
  data: auth.data,
});

/**
 * The user of an identity that has none yet, made now. The store decides who owns a new identity:
 * of concurrent first logins (on any instance) one creates the user, the others get it.
 */
async function createUser(
  emulator: Emulator,
  app: AppRuntime,
  auth: Authenticated,
  log: FastifyBaseLogger,
): Promise<StoredUser> {
  const claim = await app.withRoomForUsers(() => app.users.create(newUserOf(app, auth), auth.claimAccount));
  return claimed(emulator, app, auth, claim, log);
}

/** The user a first login's claim gives: its own, told as created, or the identity's owner's. */
async function claimed(
  emulator: Emulator,
  app: AppRuntime,
  auth: Authenticated,
  claim: IdentityClaim,
  log: FastifyBaseLogger,
): Promise<StoredUser> {
  // The registration went, or its password changed, while the password was checked.
  if ("registrationGone" in claim) throw errors.invalidPassword();
  if (!claim.ok) return refreshed(app, auth, claim.owner);
  emulator.events.emit({ type: "user", appId: app.appId, action: "created", id: claim.user.id });
  fireAuthTriggers(app, "CREATE", claim.user, [auth.identity.provider_type], log);
  return claim.user;
}

/**
 * A first login's user made and its session started together, where the store can
 * (`AppStore.createAndStart`: one round trip on PostgreSQL): the login reply, with the user; or
 * the user alone when the session is the caller's to start (the identity another user's, say).
 */
async function createAndStart(
  emulator: Emulator,
  app: AppRuntime,
  auth: Authenticated,
  start: SessionStart,
  log: FastifyBaseLogger,
): Promise<{ user: StoredUser; reply?: LoginReply }> {
  const together = app.store.createAndStart?.bind(app.store);
  if (!together || auth.claimAccount !== undefined) return { user: await createUser(emulator, app, auth, log) };
  const user = newUserOf(app, auth);
  const session = newSession(app, user.id, start);
  const { claim, started } = await app.withRoomForUsers(() =>
    together(user, session, session.createdAt, app.customUserDataPlace()),
  );
  const made = await claimed(emulator, app, auth, claim, log);
  if (!started) return { user: made };
  return { user: made, reply: await sessionReply(emulator, app, made, session, started.customData) };
}

/**
 * The user credentials name without a session (an HTTPS endpoint's request): the identity's user,
 * made now when it has none and `create` says so (`create_user_on_auth`); undefined when it has
 * none. No login is counted and no session starts.
 */
export async function userOfCredentials(
  emulator: Emulator,
  app: AppRuntime,
  auth: Authenticated,
  create: boolean,
  log: FastifyBaseLogger,
): Promise<StoredUser | undefined> {
  if (auth.user) return refreshed(app, auth, auth.user);
  if (auth.registration) return app.users.get(auth.registration.ownerId);
  return create ? createUser(emulator, app, auth, log) : undefined;
}

/** Logs in as the identity's user (made now if it has none) and opens a session: the login reply. */
export async function signInAs(
  emulator: Emulator,
  app: AppRuntime,
  auth: Authenticated,
  deviceId: string,
  log: FastifyBaseLogger,
) {
  const start = {
    providerType: auth.identity.provider_type,
    identityId: auth.identity.id,
    deviceId,
    ...(auth.apiKeyId ? { apiKeyId: auth.apiKeyId } : {}),
  };
  let user = auth.user;
  if (auth.registration) {
    const started = await startRegistrationLogin(emulator, app, auth.registration, deviceId, log);
    if ("reply" in started) return started.reply;
    // The registration went (its user deleted), or its password changed, while the password was
    // checked: the password is not (or no longer) its.
    const now = started.now;
    if (!now || now.account.passwordHash !== auth.registration.passwordHash) throw errors.invalidPassword();
    // Its user is disabled, or gone or another one: as any other login from here on.
    user = now.owner;
  }
  let reply: LoginReply | undefined;
  for (let attempt = 1; ; attempt++) {
    if (user) user = await refreshed(app, auth, user);
    else ({ user, reply } = await createAndStart(emulator, app, auth, start, log));
    if (user.disabled) throw errors.userDisabled();
    reply ??= await startSession(emulator, app, user, start);
    if (reply) break;
    // The user was deleted since the login found it. A moment later the identity has no user (or
    // a new one, another login's): the login goes on as that one would — once; again, it fails.
    if (attempt === 2) throw errors.sessionUserGone();
    user = await app.users.byIdentity(auth.identity.provider_type, auth.identity.id);
  }
  emulator.events.emit({ type: "user", appId: app.appId, action: "logged-in", id: user.id });
  fireAuthTriggers(app, "LOGIN", user, [auth.identity.provider_type], log);
  return reply;
}

/** Attaches the identity to the caller's user: the link reply (a new access token, no refresh token). */
export async function linkIdentity(emulator: Emulator, caller: Caller, auth: Authenticated, deviceId: string) {
  const { app } = caller;
  let user = caller.user;
  if (auth.apiKeyId !== undefined) {
    if (auth.user?.id !== user.id) throw errors.linkIdentityTaken();
  } else if (auth.user && auth.user.id !== user.id) {
    throw errors.linkIdentityTaken();
  } else if (!auth.user) {
    if (secondUserpass(user, auth.identity)) throw errors.linkSecondUserpass();
    const claim = await app.users.addIdentity(user.id, auth.identity, auth.data, auth.claimAccount);
    if (!claim) throw errors.sessionUserGone();
    // The registration went, or its password changed, while the password was checked.
    if ("registrationGone" in claim) throw errors.linkInvalidPassword();
    // Another link gave the user an e-mail/password identity meanwhile.
    if ("userpassHeld" in claim) throw errors.linkSecondUserpass();
    // Another login claimed the identity meanwhile.
    if (!claim.ok && claim.owner.id !== user.id) throw errors.linkIdentityTaken();
    user = claim.ok ? claim.user : claim.owner;
    emulator.events.emit({ type: "user", appId: app.appId, action: "linked", id: user.id });
  }
  const accessToken = await accessTokenFor(emulator, app, user, caller.session);
  return { access_token: accessToken, user_id: user.id, device_id: deviceId };
}
