/**
 * An OpenID Connect ID token checked as OpenID Connect Core §3.1.3.7 asks: its signature by one of
 * the provider's published keys (an algorithm the provider names, never `none` or HMAC), its
 * issuer, its audience (the app's client id), its expiry (on the app's clock) and, in the browser
 * flow, the nonce this server sent. Each failure has its own reason in the reply.
 */
import { type JWTPayload, errors as jose, jwtVerify } from "jose";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { type OidcEndpoints, ProviderUnreachableError } from "./endpoints.ts";

export interface IdTokenExpectations {
  audience: string;
  /** Milliseconds since the epoch. */
  now: number;
  /** The nonce sent with the authorization request (the browser flow only). */
  nonce?: string | undefined;
}

export type IdTokenClaims = JWTPayload & { sub: string };

function reasonOf(error: unknown): string {
  if (error instanceof jose.JWTExpired) return "token is expired";
  if (error instanceof jose.JWTClaimValidationFailed) {
    if (error.claim === "iss") return "issuer does not match";
    if (error.claim === "aud") return "audience does not match";
    if (error.claim === "nbf" || error.claim === "iat") return "token is not valid yet";
    return `the ${error.claim} claim is missing or invalid`;
  }
  if (
    error instanceof jose.JWSSignatureVerificationFailed ||
    error instanceof jose.JWKSNoMatchingKey ||
    error instanceof jose.JWKSMultipleMatchingKeys
  )
    return "signature is invalid";
  if (error instanceof jose.JOSEAlgNotAllowed) return "signature algorithm is not allowed";
  return "malformed token";
}

export async function verifyIdToken(
  token: string,
  endpoints: OidcEndpoints,
  expect: IdTokenExpectations,
): Promise<IdTokenClaims> {
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, endpoints.keys, {
      issuer: endpoints.acceptedIssuers,
      audience: expect.audience,
      algorithms: endpoints.algorithms,
      currentDate: new Date(expect.now),
      requiredClaims: ["sub", "exp", "iat"],
    }));
  } catch (error) {
    // The key set could not be fetched: not the token's fault.
    if (error instanceof jose.JWKSTimeout || error instanceof jose.JWKSInvalid || error instanceof TypeError)
      throw new ProviderUnreachableError(`the provider's key set: ${(error as Error).message}`);
    if (error instanceof ProviderUnreachableError) throw error;
    throw errors.oauth2TokenInvalid(reasonOf(error));
  }
  if (expect.nonce !== undefined && payload.nonce !== expect.nonce)
    throw errors.oauth2TokenInvalid("nonce does not match");
  if (typeof payload.sub !== "string" || payload.sub === "")
    throw errors.oauth2TokenInvalid("the sub claim is required");
  return payload as IdTokenClaims;
}
