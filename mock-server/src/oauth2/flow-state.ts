/**
 * The state of a browser sign-in between its start (`GET …/login`) and the provider's callback:
 * which app and provider, where it ends (`redirect`, the caller's `state`), the nonce and PKCE
 * verifier sent, the device, and the user being linked. It travels as the `state` parameter the
 * provider hands back, encrypted and authenticated (JWE, `dir` + A256GCM, with a key derived from
 * the signing secret), so nothing is stored: any instance with the same secret finishes a flow
 * another one started, the provider learns nothing from it, and no one can forge one.
 */
import { hkdfSync } from "node:crypto";
import { CompactEncrypt, compactDecrypt } from "jose";
import type { OAuth2ProviderName } from "../config/app-config.ts";
import { appServicesErrors as errors } from "../errors/catalogue.ts";

/** How long a browser sign-in may take, on the app's clock. */
export const flowLifetimeMs = 10 * 60 * 1000;

export interface FlowState {
  appId: string;
  provider: OAuth2ProviderName;
  /** Where the flow ends (one of the provider's redirect_uris). */
  redirect: string;
  /** The caller's state, given back as `_baas_state`. */
  state: string;
  /** This server's callback URL, the `redirect_uri` the code is bound to. */
  callback: string;
  /** The origin the flow started at (where the built-in provider's pages are). */
  origin: string;
  nonce: string;
  codeVerifier?: string;
  deviceId: string;
  /** The user (and session) an identity is being linked to. */
  link?: { userId: string; sessionId: string };
  /** On the app's clock. */
  expiresAt: number;
}

const keys = new Map<string, Uint8Array>();

function keyOf(secret: string): Uint8Array {
  let key = keys.get(secret);
  if (!key) {
    key = new Uint8Array(hkdfSync("sha256", secret, "", "app-services oauth2 flow state", 32));
    if (keys.size > 8) keys.clear();
    keys.set(secret, key);
  }
  return key;
}

export function sealFlow(secret: string, flow: FlowState): Promise<string> {
  return new CompactEncrypt(new TextEncoder().encode(JSON.stringify(flow)))
    .setProtectedHeader({ alg: "dir", enc: "A256GCM" })
    .encrypt(keyOf(secret));
}

/**
 * The flow of a callback's state, sealed with one of `secrets` (the signing secret, then its
 * fallbacks: a flow begun before a rotation ends after it), or the 400 the callback answers (its
 * expiry is checked by the caller).
 */
export async function openFlow(secrets: readonly string[], sealed: string | undefined): Promise<FlowState> {
  if (!sealed) throw errors.oauth2StateInvalid("the state parameter is missing");
  for (const secret of secrets) {
    try {
      const { plaintext } = await compactDecrypt(sealed, keyOf(secret), { keyManagementAlgorithms: ["dir"] });
      return JSON.parse(new TextDecoder().decode(plaintext)) as FlowState;
    } catch {
      // (Not this secret's: the next one's, or no one's.)
    }
  }
  throw errors.oauth2StateInvalid("it was not made by this service");
}
