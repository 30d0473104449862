/**
 * The custom-token (custom JWT) provider: an HS256 token signed with the app's signing key, with
 * `sub` as the identity id, `exp` checked against the app's clock, `aud` against the configured
 * audience, and metadata claims copied into the profile's data.
 */
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import type { AppRuntime } from "../../runtime/app-runtime.ts";
import { Hs256Key } from "../../state/jwt.ts";

function claimAt(payload: Record<string, unknown>, path: string): unknown {
  let value: unknown = payload;
  for (const part of path.split(".")) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

export function verifyCustomToken(app: AppRuntime, token: string): { sub: string; data: Record<string, unknown> } {
  const config = app.config.providers?.["custom-token"] ?? {};
  if (!config.signingKey) throw errors.providerNotEnabled("custom-token");
  const verdict = new Hs256Key(config.signingKey).verify(token);
  if (!verdict.ok)
    throw errors.customTokenInvalid(verdict.reason === "signature" ? "signature is invalid" : "malformed token");
  const payload = verdict.payload;
  const now = app.clock.now() / 1000;
  if (typeof payload.exp !== "number") throw errors.customTokenInvalid("the exp claim is required");
  if (now >= payload.exp) throw errors.customTokenInvalid("token is expired");
  if (typeof payload.nbf === "number" && now < payload.nbf) throw errors.customTokenInvalid("token is not valid yet");
  if (config.audience) {
    const aud = payload.aud;
    const audiences = Array.isArray(aud) ? aud : [aud];
    if (!audiences.includes(config.audience)) throw errors.customTokenInvalid("audience does not match");
  }
  if (typeof payload.sub !== "string" || payload.sub === "")
    throw errors.customTokenInvalid("the sub claim is required");
  const data: Record<string, unknown> = {};
  for (const field of config.metadataFields ?? []) {
    const value = claimAt(payload, field.name);
    if (value === undefined) {
      if (field.required) throw errors.customTokenInvalid(`the required metadata field '${field.name}' is missing`);
      continue;
    }
    data[field.fieldName ?? field.name] = value;
  }
  return { sub: payload.sub, data };
}
