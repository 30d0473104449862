/**
 * Refresh-token sessions in memory. A refresh token carries its session id; logging out deletes the
 * session so the token stops working, while access tokens already issued stay valid until they
 * expire (as on the hosted service).
 */
import type { SessionRecords, StoredSession } from "../store.ts";

export class MemorySessions implements SessionRecords {
  private readonly sessions = new Map<string, StoredSession>();
  /** Each user's session ids, oldest first (insertion order). */
  private readonly byUser = new Map<string, Set<string>>();

  /** `maxPerUser`: the app's limit on sessions per user; past it the oldest end. */
  constructor(private readonly maxPerUser: () => number = () => Number.POSITIVE_INFINITY) {}

  get size(): number {
    return this.sessions.size;
  }

  async get(id: string): Promise<StoredSession | undefined> {
    return this.sessions.get(id);
  }

  async add(session: StoredSession): Promise<void> {
    this.addNow(session);
    const ids = this.byUser.get(session.userId)!;
    const excess = ids.size - this.maxPerUser();
    if (excess > 0) for (const id of [...ids].slice(0, excess)) this.removeNow(id);
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
    return this.removeNow(id);
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

  async removeForUser(userId: string): Promise<number> {
    return this.removeForUserNow(userId);
  }

  removeForUserNow(userId: string): number {
    const ids = [...(this.byUser.get(userId) ?? [])];
    for (const id of ids) this.removeNow(id);
    return ids.length;
  }

  /** Ends the sessions an API key opened. */
  removeForApiKey(userId: string, apiKeyId: string): void {
    for (const session of this.forUserNow(userId)) if (session.apiKeyId === apiKeyId) this.removeNow(session.id);
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
