import { createHash, randomBytes } from "node:crypto";
import { ObjectId } from "bson";

/** A new 24-hex ObjectId string, as the service uses for user, device, key and token ids. */
export function newObjectIdHex(): string {
  return new ObjectId().toHexString();
}

/** A stable 24-hex id derived from a name (provider ids, domain ids), so resets and exports agree. */
export function stableObjectIdHex(...parts: string[]): string {
  return createHash("sha256").update(parts.join("\u0000")).digest("hex").slice(0, 24);
}

export function randomHex(bytes: number): string {
  return randomBytes(bytes).toString("hex");
}

const lowercase = "abcdefghijklmnopqrstuvwxyz";
/** Random lowercase letters, as in anonymous identity ids (`<hex>-<24 letters>`). */
export function randomLetters(length: number): string {
  const bytes = randomBytes(length);
  let out = "";
  for (const byte of bytes) out += lowercase[byte % 26];
  return out;
}

export function sha256Hex(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}
