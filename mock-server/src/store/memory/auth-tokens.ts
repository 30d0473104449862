/**
 * Confirmation and password-reset tokens in memory: `{token, tokenId}` pairs, single-use, valid for
 * 30 minutes of the app's clock. Kept after use (marked used) so tests can inspect them: the
 * newest 50,000 of each app (a long `npm start --data-dir` does not gather them without end; a
 * link whose token was dropped answers as an unknown one, `invalid token data`).
 */
import {
  type AuthTokenFilter,
  type AuthTokenKind,
  type AuthTokenRecords,
  type ConsumeResult,
  normalizeEmail,
  type StoredAuthToken,
} from "../store.ts";

/** Tokens kept per app; past it the oldest goes. */
export const maxKeptTokens = 50_000;

export class MemoryAuthTokens implements AuthTokenRecords {
  /** Oldest first (the order they were added in). */
  private readonly tokens = new Map<string, StoredAuthToken>();

  /** `registered`: whether a token's registration is there (the store wires it). */
  constructor(
    private readonly capacity = maxKeptTokens,
    private readonly registered: (token: StoredAuthToken) => boolean = () => true,
  ) {}

  async add(token: StoredAuthToken): Promise<boolean> {
    if (!this.registered(token)) return false;
    this.keep(token);
    return true;
  }

  /** Keeps a token as it is (a state import's, whose registration may be gone). */
  keep(token: StoredAuthToken): void {
    this.tokens.set(token.tokenId, token);
    if (this.tokens.size > this.capacity) this.tokens.delete(this.tokens.keys().next().value as string);
  }

  async list(filter: AuthTokenFilter = {}): Promise<StoredAuthToken[]> {
    return this.listNow(filter);
  }

  async newest(filter: AuthTokenFilter, limit: number): Promise<{ tokens: StoredAuthToken[]; total: number }> {
    const all = this.listNow(filter);
    return { tokens: all.slice(-limit), total: all.length };
  }

  listNow(filter: AuthTokenFilter): StoredAuthToken[] {
    const email = filter.email === undefined ? undefined : normalizeEmail(filter.email);
    return [...this.tokens.values()].filter(
      (t) =>
        (email === undefined || normalizeEmail(t.email) === email) &&
        (filter.kind === undefined || t.kind === filter.kind),
    );
  }

  private checkNow(kind: AuthTokenKind, token: string, tokenId: string, now: number): ConsumeResult {
    const stored = this.tokens.get(tokenId);
    if (!stored || stored.kind !== kind || stored.token !== token) return { ok: false, reason: "unknown" };
    if (stored.used) return { ok: false, reason: "used" };
    if (now >= stored.expiresAt) return { ok: false, reason: "expired" };
    return { ok: true, token: stored };
  }

  async check(kind: AuthTokenKind, token: string, tokenId: string, now: number): Promise<ConsumeResult> {
    return this.checkNow(kind, token, tokenId, now);
  }

  async consume(kind: AuthTokenKind, token: string, tokenId: string, now: number): Promise<ConsumeResult> {
    const result = this.checkNow(kind, token, tokenId, now);
    if (result.ok) result.token.used = true;
    return result;
  }

  async markUsed(tokenId: string): Promise<void> {
    const stored = this.tokens.get(tokenId);
    if (stored) stored.used = true;
  }

  hasNow(tokenId: string): boolean {
    return this.tokens.has(tokenId);
  }

  clear(): void {
    this.tokens.clear();
  }
}
