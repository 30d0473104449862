/**
 * Refresh-token sessions in memory. Both tokens carry their session's id; ending a session (logout,
 * revocation) deletes it, so its refresh token and its access tokens stop working, and announces
 * it, so the change streams open on it end (docs/decisions/0011-revocation.md).
 */
import type { EndedSessions, SessionRecords, StoredSession } from "../store.ts";

export class MemorySessions implements SessionRecords {
  private readonly sessions = new Map<string, StoredSession>();
  /** Each user's session ids, oldest first (insertion order). */
  private readonly byUser = new Map<string, Set<string>>();
  /** Told of every removal (the app registry wires it to the store's onSessionsEnded). */
  announce: (ended: EndedSessions) => void = () => undefined;

  /** `maxPerUser`: the app's limit on sessions per user; past it the oldest end. */
  constructor(private readonly maxPerUser: () => number = () => Number.POSITIVE_INFINITY) {}

  get size(): number {
    return this.sessions.size;
  }

  async get(id: string): Promise<StoredSession | undefined> {
    return this.sessions.get(id);
  }

  /** The synchronous form, for the in-memory hot path. */
  getNow(id: string): StoredSession | undefined {
    return this.sessions.get(id);
  }

  async add(session: StoredSession): Promise<void> {
    this.addNow(session);
    const ids = this.byUser.get(session.userId)!;
    const excess = ids.size - this.maxPerUser();
    // Ended like any other session: its tokens and its change streams stop working.
    if (excess > 0)
      for (const id of [...ids].slice(0, excess))
        if (this.removeNow(id)) this.announce({ userId: session.userId, sessionId: id });
  }

  addNow(session: StoredSession): void {
    this.sessions.set(session.id, session);
    let ids = this.byUser.get(session.userId);
    if (!ids) {
      ids = new Set();
      this.byUser.set(session.userId, ids);
    }
    ids.add(session.id);
  }

  async remove(id: string): Promise<boolean> {
    const session = this.sessions.get(id);
    if (!session || !this.removeNow(id)) return false;
    this.announce({ userId: session.userId, sessionId: id });
    return true;
  }

  private removeNow(id: string): boolean {
    const session = this.sessions.get(id);
    if (!session) return false;
    this.sessions.delete(id);
    const ids = this.byUser.get(session.userId);
    ids?.delete(id);
    if (ids?.size === 0) this.byUser.delete(session.userId);
    return true;
  }

  forUserNow(userId: string): StoredSession[] {
    const ids = this.byUser.get(userId);
    if (!ids) return [];
    return [...ids].map((id) => this.sessions.get(id)).filter((s): s is StoredSession => s !== undefined);
  }

  async forUser(userId: string): Promise<StoredSession[]> {
    return this.forUserNow(userId);
  }

  async forUsers(userIds: string[]): Promise<StoredSession[]> {
    return userIds.flatMap((id) => this.forUserNow(id));
  }

  async removeForUser(userId: string): Promise<number> {
    return this.removeForUserNow(userId);
  }

  removeForUserNow(userId: string): number {
    const ids = [...(this.byUser.get(userId) ?? [])];
    for (const id of ids) this.removeNow(id);
    if (ids.length > 0) this.announce({ userId });
    return ids.length;
  }

  /** Ends the sessions an API key opened. */
  removeForApiKey(userId: string, apiKeyId: string): void {
    let removed = 0;
    for (const session of this.forUserNow(userId))
      if (session.apiKeyId === apiKeyId && this.removeNow(session.id)) removed++;
    if (removed > 0) this.announce({ userId, apiKeyId });
  }

  async all(): Promise<StoredSession[]> {
    return this.allNow();
  }

  allNow(): StoredSession[] {
    return [...this.sessions.values()];
  }

  clear(): void {
    this.sessions.clear();
    this.byUser.clear();
  }
}
