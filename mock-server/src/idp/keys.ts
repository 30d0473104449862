/**
 * The fake identity provider's signing keys: one RSA key (RS256, what Google and Apple sign ID
 * tokens with) per process run, made when first needed (key generation takes tens of
 * milliseconds, and most emulators never sign in with a provider), and a second one that is never
 * published, to forge tokens with for tests.
 */
import { randomBytes } from "node:crypto";
import {
  type CryptoKey,
  createLocalJWKSet,
  exportJWK,
  generateKeyPair,
  type JSONWebKeySet,
  type JWK,
  type JWTVerifyGetKey,
} from "jose";

export const idTokenAlgorithm = "RS256";

export interface SigningKey {
  privateKey: CryptoKey;
  kid: string;
  publicJwk: JWK;
}

async function newKey(): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(idTokenAlgorithm, { extractable: true });
  const kid = randomBytes(8).toString("hex");
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: idTokenAlgorithm, use: "sig" };
  return { privateKey, kid, publicJwk };
}

export class IdpKeys {
  private provider: Promise<SigningKey> | null = null;
  private stranger: Promise<SigningKey> | null = null;
  private keySet: JWTVerifyGetKey | null = null;

  /** The published key (`provider`) or one that is not in the JWKS (`stranger`). */
  key(which: "provider" | "stranger"): Promise<SigningKey> {
    if (which === "stranger") {
      this.stranger ??= newKey();
      return this.stranger;
    }
    this.provider ??= newKey();
    return this.provider;
  }

  async jwks(): Promise<JSONWebKeySet> {
    return { keys: [(await this.key("provider")).publicJwk] };
  }

  /** The published keys as a key resolver for `jwtVerify` (the built-in provider's, without HTTP). */
  async localKeySet(): Promise<JWTVerifyGetKey> {
    this.keySet ??= createLocalJWKSet(await this.jwks());
    return this.keySet;
  }
}
