/**
 * Sign in with Apple's client secret: a JWT signed (ES256) with the team's `.p8` key, `iss` the
 * team id, `sub` the client id, `aud` Apple's issuer, at most six months long. App Services had
 * its users make one and store it as the secret, which then expires; given the `.p8` key instead
 * (with `teamId` and `keyId`), the server makes short-lived ones itself and never needs a new
 * secret. A secret that is not a PEM key is sent as it is.
 */
import { type CryptoKey, importPKCS8, SignJWT } from "jose";
import type { OAuth2Settings } from "./settings.ts";

const lifetimeSeconds = 300;
const keys = new Map<string, Promise<CryptoKey>>();
const minted = new Map<string, { token: string; exp: number }>();

export class AppleSecretConfigError extends Error {}

export async function appleClientSecret(settings: OAuth2Settings, audience: string, nowMs: number): Promise<string> {
  const secret = settings.clientSecret ?? "";
  if (!secret.includes("-----BEGIN")) return secret;
  if (!settings.teamId || !settings.keyId)
    throw new AppleSecretConfigError("oauth2-apple: a .p8 key as clientSecret needs config.teamId and config.keyId");
  const now = Math.floor(nowMs / 1000);
  const cacheKey = `${settings.clientId}\0${settings.teamId}\0${settings.keyId}\0${audience}\0${secret}`;
  const cached = minted.get(cacheKey);
  // Reused while it has a minute left (Apple's limit is six months; short keeps a leak harmless).
  if (cached && cached.exp - now > 60) return cached.token;
  let key = keys.get(secret);
  if (!key) {
    key = importPKCS8(secret, "ES256");
    keys.set(secret, key);
    key.catch(() => keys.delete(secret));
  }
  const exp = now + lifetimeSeconds;
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: "ES256", kid: settings.keyId })
    .setIssuer(settings.teamId)
    .setIssuedAt(now)
    .setExpirationTime(exp)
    .setAudience(audience)
    .setSubject(settings.clientId)
    .sign(await key.catch((error: Error) => Promise.reject(new AppleSecretConfigError(error.message))));
  if (minted.size > 100) minted.clear();
  minted.set(cacheKey, { token, exp });
  return token;
}
