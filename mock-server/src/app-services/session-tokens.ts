/**
 * Sessions and their tokens. Both tokens are HS256 JWTs with the claims the hosted service puts in
 * them (realm-core decodes both; realm-web reads `sub`, `exp`, `iat`, `user_data`, `baas_device_id`).
 */
import { tokenLifetimes } from "../config/app-config.ts";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import type { AppRuntime } from "../runtime/app-runtime.ts";
import type { Emulator } from "../runtime/emulator.ts";
import { newObjectIdHex } from "../state/ids.ts";
import { type FoundCustomData, maxTokenUserDataBytes, type StoredSession, type StoredUser } from "../store/store.ts";

export const zeroDeviceId = "000000000000000000000000";

/** The device id of a login: the request's `options.device.deviceId` (EJSON `$oid` or hex), else a new one. */
export function deviceIdFrom(body: unknown): string {
  const device = (body as { options?: { device?: { deviceId?: unknown } } } | undefined)?.options?.device;
  const raw = device?.deviceId;
  const hex = typeof raw === "string" ? raw : (raw as { $oid?: unknown } | undefined)?.$oid;
  return typeof hex === "string" && /^[0-9a-f]{24}$/i.test(hex) && hex !== zeroDeviceId
    ? hex.toLowerCase()
    : newObjectIdHex();
}

/**
 * An access token of the session. `customData`: the user's custom data when the store read it
 * already (null: none); otherwise it is read now. Custom data longer than a token carries
 * (`maxTokenUserDataBytes`) is left out of it — such a token would be refused by the server's and
 * the proxies' header limits on every request — and the log says so once per user.
 */
export async function accessTokenFor(
  emulator: Emulator,
  app: AppRuntime,
  user: StoredUser,
  session: StoredSession,
  customData?: FoundCustomData,
): Promise<string> {
  const found = customData !== undefined ? customData : await app.customUserDataForToken(user.id);
  const { claim: userData, oversized } = app.tokenUserData(found);
  if (oversized !== undefined && app.firstOversized(user.id))
    emulator.apps.log?.warn(
      { appId: app.appId, userId: user.id, bytes: oversized },
      `custom user data of ${oversized} bytes (as Extended JSON) is left out of the user's access tokens: they carry at most ${maxTokenUserDataBytes}`,
    );
  const iat = Math.floor(app.clock.now() / 1000);
  return emulator.tokenKey.sign({
    baas_device_id: session.deviceId,
    baas_domain_id: app.domainId,
    exp: iat + tokenLifetimes(app.config).accessTokenTtlSeconds,
    iat,
    iss: session.id,
    stitch_devId: session.deviceId,
    stitch_domainId: app.domainId,
    sub: user.id,
    typ: "access",
    ...(userData ? { user_data: userData } : {}),
  });
}

function refreshTokenFor(emulator: Emulator, app: AppRuntime, session: StoredSession): string {
  const identity = {
    id: session.identityId,
    provider_type: session.providerType,
    provider_id: app.providerId(session.providerType),
  };
  return emulator.tokenKey.sign({
    baas_data: null,
    baas_device_id: session.deviceId,
    baas_domain_id: app.domainId,
    baas_id: session.id,
    baas_identity: identity,
    exp: Math.floor(session.expiresAt / 1000),
    iat: Math.floor(session.createdAt / 1000),
    stitch_data: null,
    stitch_devId: session.deviceId,
    stitch_domainId: app.domainId,
    stitch_id: session.id,
    stitch_ident: identity,
    sub: session.userId,
    typ: "refresh",
  });
}

export interface SessionStart {
  providerType: string;
  identityId: string;
  deviceId: string;
  apiKeyId?: string;
}

/** A new session of a user (not stored yet). */
export function newSession(app: AppRuntime, userId: string, start: SessionStart): StoredSession {
  const now = app.clock.now();
  const lifetimes = tokenLifetimes(app.config);
  const anonymous = start.providerType === "anon-user";
  const ttlSeconds = anonymous ? lifetimes.anonRefreshTokenTtlSeconds : lifetimes.refreshTokenTtlSeconds;
  return {
    id: newObjectIdHex(),
    userId,
    deviceId: start.deviceId,
    providerType: start.providerType,
    identityId: start.identityId,
    createdAt: now,
    expiresAt: now + ttlSeconds * 1000,
    ...(start.apiKeyId ? { apiKeyId: start.apiKeyId } : {}),
  };
}

/** The login reply of a stored session (`customData` as for accessTokenFor). */
export async function sessionReply(
  emulator: Emulator,
  app: AppRuntime,
  user: StoredUser,
  session: StoredSession,
  customData?: FoundCustomData,
) {
  return {
    access_token: await accessTokenFor(emulator, app, user, session, customData),
    refresh_token: refreshTokenFor(emulator, app, session),
    user_id: user.id,
    device_id: session.deviceId,
  };
}

/** Why a session did not start: its API key gone or disabled, its user disabled; undefined when the user is gone. */
async function notStarted(app: AppRuntime, userId: string, apiKeyId: string | undefined) {
  if (apiKeyId !== undefined) {
    const key = await app.apiKeys.get(apiKeyId);
    if (!key || key.disabled) return errors.invalidApiKey();
  }
  return (await app.users.get(userId))?.disabled ? errors.userDisabled() : undefined;
}

/**
 * Opens a session for a user and returns the login reply; undefined when the user was deleted since
 * the login read it (a login a moment later would find its identity without a user).
 */
export async function startSession(emulator: Emulator, app: AppRuntime, user: StoredUser, start: SessionStart) {
  const session = newSession(app, user.id, start);
  // (The user's custom data, for the access token, read with it where the store can.)
  const started = await app.store.startSession(session, session.createdAt, app.customUserDataPlace());
  // The user (or the API key) deleted or disabled since the login read it: no session is kept
  // (none that enabling them again would revive); a refusal is the login's as a moment later, a
  // user gone is the caller's to go on from (signInAs).
  if (!started) {
    const refusal = await notStarted(app, user.id, session.apiKeyId);
    if (refusal) throw refusal;
    return undefined;
  }
  const { customData } = started;
  return sessionReply(emulator, app, user, session, customData);
}
