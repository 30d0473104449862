/**
 * Refresh-token sessions. A refresh token carries its session id; logging out deletes the session
 * so the token stops working, while access tokens already issued stay valid until they expire
 * (as on the hosted service).
 */
import type { ControlSchemas } from "../openapi/types.ts";

export type StoredSession = ControlSchemas["StoredSession"];

export class SessionStore {
  private readonly sessions = new Map<string, StoredSession>();
  private readonly byUser = new Map<string, Set<string>>();

  get size(): number {
    return this.sessions.size;
  }

  get(id: string): StoredSession | undefined {
    return this.sessions.get(id);
  }

  add(session: StoredSession): void {
    this.sessions.set(session.id, session);
    let ids = this.byUser.get(session.userId);
    if (!ids) {
      ids = new Set();
      this.byUser.set(session.userId, ids);
    }
    ids.add(session.id);
  }

  remove(id: string): boolean {
    const session = this.sessions.get(id);
    if (!session) return false;
    this.sessions.delete(id);
    const ids = this.byUser.get(session.userId);
    ids?.delete(id);
    if (ids?.size === 0) this.byUser.delete(session.userId);
    return true;
  }

  forUser(userId: string): StoredSession[] {
    const ids = this.byUser.get(userId);
    if (!ids) return [];
    return [...ids].map((id) => this.sessions.get(id)).filter((s): s is StoredSession => s !== undefined);
  }

  removeForUser(userId: string): number {
    const ids = [...(this.byUser.get(userId) ?? [])];
    for (const id of ids) this.remove(id);
    return ids.length;
  }

  all(): IterableIterator<StoredSession> {
    return this.sessions.values();
  }

  clear(): void {
    this.sessions.clear();
    this.byUser.clear();
  }
}
