/**
 * The subject (`sub`, Facebook's user id) of a fake account at each provider, derived from its
 * e-mail address: the same address is the same identity in every run and on every instance, so a
 * returning account signs in as the same user after a restart. Shaped like the real ones (Google:
 * 21 digits, Apple: `000123.<32 hex>.0456`, Facebook: 16 digits), so code that looks at them sees
 * what it would see in production.
 */
import { createHash } from "node:crypto";
import type { OAuth2ProviderName } from "../config/app-config.ts";

export const normalizeAccountEmail = (email: string) => email.trim().toLowerCase();

function digest(provider: string, email: string): Buffer {
  return createHash("sha256")
    .update(`${provider}\0${normalizeAccountEmail(email)}`)
    .digest();
}

function digits(bytes: Buffer, count: number): string {
  const n = BigInt(`0x${bytes.toString("hex")}`) % 10n ** BigInt(count - 1);
  return `1${n.toString().padStart(count - 1, "0")}`;
}

export function subjectOf(provider: OAuth2ProviderName, email: string): string {
  const bytes = digest(provider, email);
  switch (provider) {
    case "oauth2-google":
      return digits(bytes, 21);
    case "oauth2-facebook":
      return digits(bytes, 16);
    case "oauth2-apple": {
      const team = bytes.readUInt16BE(0) % 1000;
      const tail = bytes.readUInt16BE(2) % 10000;
      return `000${String(team).padStart(3, "0")}.${bytes.subarray(4, 20).toString("hex")}.${String(tail).padStart(4, "0")}`;
    }
  }
}

export function subjectsOf(email: string): Record<OAuth2ProviderName, string> {
  return {
    "oauth2-google": subjectOf("oauth2-google", email),
    "oauth2-apple": subjectOf("oauth2-apple", email),
    "oauth2-facebook": subjectOf("oauth2-facebook", email),
  };
}
