/**
 * Confirmation and password-reset tokens: `{token, tokenId}` pairs, single-use, valid for 30
 * minutes of the app's clock. Kept after use (marked used) so tests can inspect them.
 */
import type { ControlSchemas } from "../openapi/types.ts";

export type StoredAuthToken = ControlSchemas["StoredAuthToken"];
export type AuthTokenKind = ControlSchemas["AuthTokenKind"];

export const authTokenLifetimeMs = 30 * 60 * 1000;

export type ConsumeResult =
  | { ok: true; token: StoredAuthToken }
  | { ok: false; reason: "unknown" | "expired" | "used" };

export class AuthTokenStore {
  private readonly tokens = new Map<string, StoredAuthToken>();

  add(token: StoredAuthToken): void {
    this.tokens.set(token.tokenId, token);
  }

  all(): IterableIterator<StoredAuthToken> {
    return this.tokens.values();
  }

  /** Checks a pair without using it up. */
  check(kind: AuthTokenKind, token: string, tokenId: string, now: number): ConsumeResult {
    const stored = this.tokens.get(tokenId);
    if (!stored || stored.kind !== kind || stored.token !== token) return { ok: false, reason: "unknown" };
    if (stored.used) return { ok: false, reason: "used" };
    if (now >= stored.expiresAt) return { ok: false, reason: "expired" };
    return { ok: true, token: stored };
  }

  /** Checks and uses up a pair (synchronously: two racing requests cannot both use it). */
  consume(kind: AuthTokenKind, token: string, tokenId: string, now: number): ConsumeResult {
    const result = this.check(kind, token, tokenId, now);
    if (result.ok) result.token.used = true;
    return result;
  }

  removeForEmail(email: string): void {
    for (const [id, token] of this.tokens) if (token.email === email) this.tokens.delete(id);
  }

  clear(): void {
    this.tokens.clear();
  }
}
