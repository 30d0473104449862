/**
 * The custom-token (custom JWT) provider as App Services configured it: a token signed with one of
 * the app's keys (up to three, for rotation: HS256 secrets, or PEM public keys with RS256), or with
 * the RS256 key its `kid` names in a JSON Web Key Set (`jwkUri`: Firebase's, Auth0's, Okta's);
 * `sub` as the identity id, `exp` and `nbf` checked against the app's clock, the audience (one, or
 * several: all of them, or any one with `requireAnyAudience`), and metadata claims copied into the
 * profile's data.
 */
import { createPublicKey, createVerify, type KeyObject } from "node:crypto";
import { compactVerify, createRemoteJWKSet, errors as joseErrors } from "jose";
import { mayHoldLoneSurrogates, wellFormedParse } from "../../data/well-formed-json.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import type { AppRuntime } from "../../runtime/app-runtime.ts";
import { Hs256Key, type JwtPayload } from "../../state/jwt.ts";
import { maxIdentityIdLength } from "../../store/store.ts";

function claimAt(payload: Record<string, unknown>, path: string): unknown {
  let value: unknown = payload;
  for (const part of path.split(".")) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/**
 * Key sets by URL, shared by the apps that name the same one: jose's fetches it when a token names
 * a key it does not hold (at most every 30 s), keeps it 10 minutes, and gives up a fetch after 5 s.
 */
const keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();
function keySet(url: string): ReturnType<typeof createRemoteJWKSet> {
  let set = keySets.get(url);
  if (!set) {
    set = createRemoteJWKSet(new URL(url));
    if (keySets.size >= 100) keySets.delete(keySets.keys().next().value!);
    keySets.set(url, set);
  }
  return set;
}

/** The token's payload when a JWKS key signed it (RS256 only), or why not. */
async function verifiedByKeySet(url: string, token: string): Promise<JwtPayload> {
  try {
    const { payload } = await compactVerify(token, keySet(url), { algorithms: ["RS256"] });
    return decodePayload(payload);
  } catch (error) {
    if (error instanceof joseErrors.JWKSNoMatchingKey || error instanceof joseErrors.JWSSignatureVerificationFailed)
      throw errors.customTokenInvalid("signature is invalid");
    if (error instanceof joseErrors.JOSEAlgNotAllowed) throw errors.customTokenInvalid("signature is invalid");
    if (
      error instanceof joseErrors.JWKSTimeout ||
      error instanceof joseErrors.JWKSInvalid ||
      error instanceof joseErrors.JOSENotSupported ||
      (error instanceof TypeError && !(error instanceof joseErrors.JOSEError))
    )
      throw errors.customTokenInvalid(`the JWK URI could not be read (${(error as Error).message})`);
    if (error instanceof joseErrors.JWSInvalid) throw errors.customTokenInvalid("malformed token");
    throw errors.customTokenInvalid(`the JWK URI could not be read (${(error as Error).message})`);
  }
}

function decodePayload(bytes: Uint8Array): JwtPayload {
  try {
    const payload: unknown = JSON.parse(Buffer.from(bytes).toString("utf8"));
    if (payload !== null && typeof payload === "object" && !Array.isArray(payload)) return payload as JwtPayload;
  } catch {
    // refused below
  }
  throw errors.customTokenInvalid("malformed token");
}

/** RS256 public keys, kept per PEM text. */
const publicKeys = new Map<string, KeyObject | null>();
function publicKey(pem: string): KeyObject | null {
  if (!publicKeys.has(pem)) {
    let key: KeyObject | null = null;
    try {
      key = createPublicKey(pem);
    } catch {
      key = null;
    }
    if (publicKeys.size >= 100) publicKeys.delete(publicKeys.keys().next().value!);
    publicKeys.set(pem, key);
  }
  return publicKeys.get(pem) ?? null;
}

/** The token's payload when an RS256 signature of one of the keys holds, or why not. */
function verifiedByPublicKeys(keys: string[], token: string): JwtPayload {
  const parts = token.split(".");
  if (parts.length !== 3) throw errors.customTokenInvalid("malformed token");
  const [head, body, signature] = parts as [string, string, string];
  let header: unknown;
  try {
    header = JSON.parse(Buffer.from(head, "base64url").toString("utf8"));
  } catch {
    throw errors.customTokenInvalid("malformed token");
  }
  if ((header as { alg?: unknown } | null)?.alg !== "RS256") throw errors.customTokenInvalid("signature is invalid");
  const signed = Buffer.from(signature, "base64url");
  for (const pem of keys) {
    const key = publicKey(pem);
    if (key && createVerify("RSA-SHA256").update(`${head}.${body}`).verify(key, signed)) {
      return decodePayload(Buffer.from(body, "base64url"));
    }
  }
  throw errors.customTokenInvalid("signature is invalid");
}

/** The token's payload when an HS256 signature of one of the keys holds, or why not. */
function verifiedBySecrets(keys: string[], token: string): JwtPayload {
  let reason: "malformed" | "signature" = "signature";
  for (const secret of keys) {
    const verdict = new Hs256Key(secret).verify(token);
    if (verdict.ok) return verdict.payload;
    reason = verdict.reason;
    if (reason === "malformed") break;
  }
  throw errors.customTokenInvalid(reason === "signature" ? "signature is invalid" : "malformed token");
}

/** Whether the token's audiences meet the provider's: all of them, or any one. */
function audienceMatches(aud: unknown, wanted: string | string[], any: boolean): boolean {
  const given = (Array.isArray(aud) ? aud : [aud]).filter((a): a is string => typeof a === "string");
  const required = Array.isArray(wanted) ? wanted : [wanted];
  if (required.length === 0) return true;
  return any ? required.some((a) => given.includes(a)) : required.every((a) => given.includes(a));
}

/** App Services' limits of a custom JWT: the token's characters, and each metadata field's. */
export const customTokenLimits = { tokenLength: 1_000_000, metadataFieldLength: 4096 };

/** A metadata field's length as the limit counts it: a string's characters, another value's JSON. */
const fieldLength = (value: unknown) => (typeof value === "string" ? value : (JSON.stringify(value) ?? "")).length;

export async function verifyCustomToken(
  app: AppRuntime,
  token: string,
): Promise<{ sub: string; data: Record<string, unknown> }> {
  // (Refused before any work on it: a signature over a long token is a long hash.)
  if (token.length > customTokenLimits.tokenLength)
    throw errors.customTokenInvalid(`the token is longer than ${customTokenLimits.tokenLength} characters`);
  const config = app.config.providers?.["custom-token"] ?? {};
  const keys = [config.signingKey, ...(config.signingKeys ?? [])].filter((k): k is string => !!k);
  let payload: JwtPayload;
  if (config.jwkUri) payload = await verifiedByKeySet(config.jwkUri, token);
  else if (keys.length === 0) throw errors.providerNotEnabled("custom-token");
  else if (config.signingAlgorithm === "RS256") payload = verifiedByPublicKeys(keys, token);
  else payload = verifiedBySecrets(keys, token);
  // (A lone surrogate escaped in the claims is U+FFFD, as the service's JSON parser reads it.)
  const claims = JSON.stringify(payload);
  if (mayHoldLoneSurrogates(claims)) payload = wellFormedParse(claims, JSON.parse) as JwtPayload;
  const now = app.clock.now() / 1000;
  if (typeof payload.exp !== "number") throw errors.customTokenInvalid("the exp claim is required");
  if (now >= payload.exp) throw errors.customTokenInvalid("token is expired");
  if (typeof payload.nbf === "number" && now < payload.nbf) throw errors.customTokenInvalid("token is not valid yet");
  if (
    config.audience !== undefined &&
    !audienceMatches(payload.aud, config.audience, config.requireAnyAudience === true)
  )
    throw errors.customTokenInvalid("audience does not match");
  if (typeof payload.sub !== "string" || payload.sub === "")
    throw errors.customTokenInvalid("the sub claim is required");
  if (payload.sub.length > maxIdentityIdLength)
    throw errors.customTokenInvalid(`the sub claim is longer than ${maxIdentityIdLength} characters`);
  const data: Record<string, unknown> = {};
  for (const field of config.metadataFields ?? []) {
    const value = claimAt(payload, field.name);
    if (value === undefined) {
      if (field.required) throw errors.customTokenInvalid(`the required metadata field '${field.name}' is missing`);
      continue;
    }
    if (fieldLength(value) > customTokenLimits.metadataFieldLength)
      throw errors.customTokenInvalid(
        `the metadata field '${field.name}' is longer than ${customTokenLimits.metadataFieldLength} characters`,
      );
    data[field.fieldName ?? field.name] = value;
  }
  return { sub: payload.sub, data };
}
