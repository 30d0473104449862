/**
 * HS256 JSON Web Tokens with node:crypto (HMAC is ~1.5x faster than a general JOSE library on the
 * hot path, and HS256 is the only algorithm the service uses). `verify` accepts only a three-part
 * token whose header says HS256: `alg: none` and every other algorithm are rejected. A key may have
 * fallback secrets (a rotation, docs/decisions/0060-signing-secret-rotation.md): it signs with its
 * own secret and accepts tokens of any of them, saying when a fallback's verified one.
 */
import { createHmac, createSecretKey, type KeyObject, timingSafeEqual } from "node:crypto";

export type JwtPayload = Record<string, unknown>;
export type JwtVerdict =
  | { ok: true; payload: JwtPayload /** Signed with a fallback secret, not the key's own. */; fallback: boolean }
  | { ok: false; reason: "malformed" | "signature" };

const canonicalHeader = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url");

/**
 * Tokens that verified under this key, with their (frozen) payloads: a token is a fixed string and
 * its signature check under one key always gives the same answer, so a client calling with the
 * same token again skips the HMAC and the JSON decoding (together ~4.5 µs of a ~34 µs request).
 * Expiry is not part of the verdict: callers check `exp` against the app's clock on every request.
 * Bounded; the oldest entry goes first.
 */
const verifiedCacheSize = 1024;

export class Hs256Key {
  private readonly key: KeyObject;
  private readonly fallbacks: KeyObject[];
  private verified: Map<string, { token: string; verdict: JwtVerdict }> | null = null;
  constructor(secret: string | Buffer, fallbacks: readonly string[] = []) {
    this.key = secretKey(secret);
    this.fallbacks = fallbacks.map(secretKey);
  }

  sign(payload: JwtPayload): string {
    const body = `${canonicalHeader}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}`;
    return `${body}.${mac(this.key, body).toString("base64url")}`;
  }

  verify(token: string): JwtVerdict {
    // Keyed by the signature's text (43 characters: a header's token is a new string on every
    // request, and hashing all of it was most of the lookup); the whole token must match too.
    const signature = token.slice(token.lastIndexOf(".") + 1);
    const known = this.verified?.get(signature);
    if (known && known.token === token) return known.verdict;
    const verdict = this.check(token);
    if (verdict.ok) {
      Object.freeze(verdict.payload);
      this.verified ??= new Map();
      if (this.verified.size >= verifiedCacheSize) this.verified.delete(this.verified.keys().next().value!);
      this.verified.set(signature, { token, verdict });
    }
    return verdict;
  }

  private check(token: string): JwtVerdict {
    const first = token.indexOf(".");
    const second = first < 0 ? -1 : token.indexOf(".", first + 1);
    if (first <= 0 || second < 0 || token.indexOf(".", second + 1) >= 0) return { ok: false, reason: "malformed" };
    const headerPart = token.slice(0, first);
    if (headerPart !== canonicalHeader) {
      const header = decodeJson(headerPart);
      if (!header) return { ok: false, reason: "malformed" };
      // `alg: none` or any other algorithm: a forged token, refused like a bad signature.
      if (header.alg !== "HS256") return { ok: false, reason: "signature" };
    }
    const payload = decodeJson(token.slice(first + 1, second));
    if (!payload) return { ok: false, reason: "malformed" };
    // Compared as text: base64url decoding skips stray characters and ignores the last character's
    // low bits, so decoded bytes would accept altered spellings of a genuine signature.
    const signature = Buffer.from(token.slice(second + 1));
    const signed = token.slice(0, second);
    if (signatureOf(this.key, signed, signature)) return { ok: true, payload, fallback: false };
    for (const fallback of this.fallbacks)
      if (signatureOf(fallback, signed, signature)) return { ok: true, payload, fallback: true };
    return { ok: false, reason: "signature" };
  }
}

const secretKey = (secret: string | Buffer) =>
  createSecretKey(typeof secret === "string" ? Buffer.from(secret, "utf8") : secret);

const mac = (key: KeyObject, data: string) => createHmac("sha256", key).update(data).digest();

/** Whether `signature` (base64url text) is `key`'s over `data`, compared in constant time. */
function signatureOf(key: KeyObject, data: string, signature: Buffer): boolean {
  const expected = Buffer.from(mac(key, data).toString("base64url"));
  return signature.length === expected.length && timingSafeEqual(signature, expected);
}

/** The payload of a JWT without checking its signature (to route a request to its app before auth). */
export function peekJwtPayload(token: string): JwtPayload | null {
  const parts = token.split(".");
  return parts.length === 3 && parts[1] ? decodeJson(parts[1]) : null;
}

function decodeJson(part: string): JwtPayload | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as JwtPayload) : null;
  } catch {
    return null;
  }
}
