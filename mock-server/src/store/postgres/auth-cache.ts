/**
 * The users and sessions of access-token requests, kept on this instance so that a request need
 * not ask the database (docs/decisions/0020-auth-cache.md). Kept true by the notifications every
 * instance sends in the transaction of each change that affects them — an ended session (sessions
 * channel), a changed or deleted user (users channel), an app reset or deleted (apps channel) — and,
 * on this instance, by the store's writes themselves, before their promise resolves.
 *
 * When may another instance still accept what was revoked? Notifications arrive in commit order, so
 * the listener sends itself one (a "sync") every few milliseconds: when it comes back, every change
 * committed before it was sent has been applied here. The cache answers only while the latest sync
 * that came back was sent less than `revocationWindowMs` ago (and the listening connection is up);
 * otherwise requests read the database, as they did before the cache. So a change is seen by every
 * instance for every request that arrives `revocationWindowMs` after the change was answered, and
 * usually within a millisecond (as soon as its notification arrives).
 *
 * Races between a read of the database and a change: a read takes a ticket before it asks; its
 * answer is kept only if nothing it holds was invalidated (or the cache cleared) after the ticket
 * was taken — whether the invalidation came from a notification or a local write, and in whichever
 * order the answer and the notification arrive.
 *
 * What a read found gone — a session ended, a user deleted — is gone for good (their ids are never
 * used again): kept too, and answered so without a statement, so that a client sending a token
 * whose session ended, again and again, asks the database once. Only a state import brings ids
 * back, and it forgets its apps here (as an outage forgets everything).
 */
import type { StoredSession, StoredUser } from "../store.ts";

/** How stale another instance's view of a revocation may be, at most (see above). */
export const revocationWindowMs = 100;

/** Entries kept (each kind); the oldest go first. */
const maxEntries = 100_000;

const sep = "\u0000";
const userKey = (appId: string, userId: string) => `u${sep}${appId}${sep}${userId}`;
const sessionKey = (appId: string, sessionId: string) => `s${sep}${appId}${sep}${sessionId}`;
/** Invalidation marks for every session of a user, of an API key, of an app. */
const userSessionsKey = (appId: string, userId: string) => `U${sep}${appId}${sep}${userId}`;
const apiKeySessionsKey = (appId: string, apiKeyId: string) => `K${sep}${appId}${sep}${apiKeyId}`;
const appKey = (appId: string) => `a${sep}${appId}`;

export interface Freshness {
  /** Whether every change committed more than the window ago has been applied here. */
  fresh(): boolean;
}

export class AuthCache {
  private readonly users = new Map<string, StoredUser>();
  private readonly sessions = new Map<string, { session: StoredSession; user: string }>();
  /** The cached session keys of each user (user key → session keys). */
  private readonly sessionsOfUser = new Map<string, Set<string>>();
  /** The ticket counter: every read takes one, every invalidation one too. */
  private sequence = 0;
  /** When each key was last invalidated (its ticket), while reads older than that may be in flight. */
  private readonly invalidated = new Map<string, number>();
  /** The ticket of the last clear. */
  private clearedAt = 0;
  /** The tickets of reads in flight, oldest first. */
  private readonly reading = new Set<number>();
  /** Users and sessions a read found gone (user and session keys), oldest first. */
  private readonly gone = new Set<string>();

  constructor(private readonly freshness: Freshness) {}

  /** A user and its session, when both are here and the cache may answer now. */
  userSession(appId: string, userId: string, sessionId: string): { user: StoredUser; session: StoredSession } | null {
    if (this.sessions.size === 0 || !this.freshness.fresh()) return null;
    const session = this.sessions.get(sessionKey(appId, sessionId))?.session;
    if (!session || session.userId !== userId) return null;
    const user = this.users.get(userKey(appId, userId));
    return user ? { user, session } : null;
  }

  /**
   * What an access token's request gets when a read found its user or its session gone: no user
   * (the user was deleted), or the user as kept with no session (the session ended); null when
   * that is not known here or the cache may not answer now.
   */
  goneAnswer(
    appId: string,
    userId: string,
    sessionId: string,
  ): { user: StoredUser | undefined; session: undefined } | null {
    if (this.gone.size === 0 || !this.freshness.fresh()) return null;
    if (this.gone.has(userKey(appId, userId))) return { user: undefined, session: undefined };
    if (!this.gone.has(sessionKey(appId, sessionId))) return null;
    const user = this.users.get(userKey(appId, userId));
    return user ? { user, session: undefined } : null;
  }

  /** Whether a read found the session gone (a refresh token's). */
  sessionGone(appId: string, sessionId: string): boolean {
    return this.gone.size > 0 && this.gone.has(sessionKey(appId, sessionId));
  }

  /**
   * Records that a read found no such user or session, unless its app was forgotten or the cache
   * cleared after its ticket was taken (call before giving the ticket back).
   */
  foundGone(ticket: number, appId: string, kind: "user" | "session", id: string): void {
    if (ticket <= this.clearedAt || this.since(appKey(appId)) > ticket) return;
    const key = kind === "user" ? userKey(appId, id) : sessionKey(appId, id);
    this.gone.delete(key);
    this.gone.add(key);
    if (this.gone.size > maxEntries) this.gone.delete(this.gone.values().next().value!);
  }

  /** Takes a ticket before reading the database (give it back with `keep` or `drop`). */
  ticket(): number {
    const ticket = ++this.sequence;
    this.reading.add(ticket);
    return ticket;
  }

  /** Keeps what a read found, unless anything of it was invalidated after its ticket was taken. */
  keep(ticket: number, appId: string, user: StoredUser, session: StoredSession | undefined): void {
    this.reading.delete(ticket);
    if (ticket <= this.clearedAt || this.since(appKey(appId)) > ticket) return;
    const uKey = userKey(appId, user.id);
    if (this.since(uKey) < ticket) this.put(this.users, uKey, user);
    if (!session) return;
    const sKey = sessionKey(appId, session.id);
    if (
      this.since(sKey) > ticket ||
      this.since(userSessionsKey(appId, session.userId)) > ticket ||
      (session.apiKeyId !== undefined && this.since(apiKeySessionsKey(appId, session.apiKeyId)) > ticket)
    )
      return;
    this.put(this.sessions, sKey, { session, user: uKey });
    let keys = this.sessionsOfUser.get(uKey);
    if (!keys) {
      keys = new Set();
      this.sessionsOfUser.set(uKey, keys);
    }
    keys.add(sKey);
  }

  /** The read failed or found nothing to keep. */
  drop(ticket: number): void {
    this.reading.delete(ticket);
  }

  /** A user changed or was deleted. */
  forgetUser(appId: string, userId: string): void {
    const key = userKey(appId, userId);
    this.mark(key);
    this.users.delete(key);
  }

  /** Sessions ended: one, those of an API key, or (neither given) every session of the user. */
  forgetSessions(appId: string, userId: string, sessionId?: string, apiKeyId?: string): void {
    const keys = this.sessionsOfUser.get(userKey(appId, userId));
    if (sessionId !== undefined) {
      const key = sessionKey(appId, sessionId);
      this.mark(key);
      this.removeSession(key);
      return;
    }
    if (apiKeyId !== undefined) {
      this.mark(apiKeySessionsKey(appId, apiKeyId));
      for (const key of [...(keys ?? [])])
        if (this.sessions.get(key)?.session.apiKeyId === apiKeyId) this.removeSession(key);
      return;
    }
    this.mark(userSessionsKey(appId, userId));
    for (const key of [...(keys ?? [])]) this.removeSession(key);
  }

  /** An app was reset, deleted or replaced: nothing of it stays. */
  forgetApp(appId: string): void {
    this.mark(appKey(appId));
    const prefix = `${sep}${appId}${sep}`;
    for (const map of [this.users, this.sessions, this.sessionsOfUser] as Map<string, unknown>[])
      for (const key of map.keys()) if (key.startsWith(prefix, 1)) map.delete(key);
    for (const key of this.gone) if (key.startsWith(prefix, 1)) this.gone.delete(key);
  }

  /** Changes may have been missed (the listening connection broke, or came back): nothing stays. */
  clear(): void {
    this.clearedAt = ++this.sequence;
    this.users.clear();
    this.sessions.clear();
    this.sessionsOfUser.clear();
    this.invalidated.clear();
    this.gone.clear();
  }

  /** How many users and sessions are kept, and known gone (tests). */
  get size(): { users: number; sessions: number; gone: number } {
    return { users: this.users.size, sessions: this.sessions.size, gone: this.gone.size };
  }

  private since(key: string): number {
    return this.invalidated.get(key) ?? 0;
  }

  private mark(key: string): void {
    // Only reads in flight can be older than this mark; with none, no mark is needed at all.
    if (this.reading.size === 0) {
      this.invalidated.clear();
      return;
    }
    this.invalidated.delete(key);
    this.invalidated.set(key, ++this.sequence);
    if (this.invalidated.size > 1024) {
      // Marks older than the oldest read in flight hold nothing back: the oldest go first.
      const oldest = this.reading.values().next().value as number;
      for (const [k, at] of this.invalidated) {
        if (at >= oldest) break;
        this.invalidated.delete(k);
      }
    }
  }

  private removeSession(key: string): void {
    const entry = this.sessions.get(key);
    if (!entry) return;
    this.sessions.delete(key);
    const keys = this.sessionsOfUser.get(entry.user);
    keys?.delete(key);
    if (keys?.size === 0) this.sessionsOfUser.delete(entry.user);
  }

  /** Keeps an entry as the newest; past the limit the oldest goes. */
  private put<T>(map: Map<string, T>, key: string, value: T): void {
    if (map === (this.sessions as Map<string, unknown>)) this.removeSession(key);
    else map.delete(key);
    map.set(key, value);
    if (map.size <= maxEntries) return;
    const oldest = map.keys().next().value as string;
    if (map === (this.sessions as Map<string, unknown>)) this.removeSession(oldest);
    else map.delete(oldest);
  }
}
