/**
 * The fake identity provider's signing keys: one RSA key (RS256, what Google and Apple sign ID
 * tokens with) per process run, made when first needed, and a second one that is never published,
 * to forge tokens with for tests. Per process, not per emulator: a 2048-bit RSA key takes 0.5–2.5 s
 * of CPU to make on a busy two-core machine, and a test process builds many emulators; nothing
 * depends on which key it is, only that the provider's JWKS publishes it.
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

/** The keys of this process run. */
export const processKeys = new IdpKeys();
