/**
 * User API keys in memory. The secret is shown once and kept only as a SHA-256 hash (keys are
 * 256-bit random values, so a fast hash is safe and keeps API-key logins O(1) through the hash
 * index).
 */
import type { AddApiKeyResult, ApiKeyRecords, StoredApiKey } from "../store.ts";
import type { MemorySessions } from "./sessions.ts";

export class MemoryApiKeys implements ApiKeyRecords {
  private readonly keys = new Map<string, StoredApiKey>();
  private readonly byUser = new Map<string, string[]>();
  private readonly byKeyHash = new Map<string, string>();

  constructor(
    private readonly sessions: MemorySessions,
    private readonly userExists: (id: string) => boolean,
  ) {}

  get size(): number {
    return this.keys.size;
  }

  async get(id: string): Promise<StoredApiKey | undefined> {
    return this.keys.get(id);
  }

  getNow(id: string): StoredApiKey | undefined {
    return this.keys.get(id);
  }

  async byHash(hash: string): Promise<StoredApiKey | undefined> {
    const id = this.byKeyHash.get(hash);
    return id === undefined ? undefined : this.keys.get(id);
  }

  async add(key: StoredApiKey, maxPerUser: number): Promise<AddApiKeyResult> {
    if (!this.userExists(key.userId)) return "no-user";
    const existing = this.forUserNow(key.userId);
    if (existing.length >= maxPerUser) return "limit";
    if (existing.some((k) => k.name === key.name)) return "name-taken";
    this.restore(key);
    return "ok";
  }

  /** Adds a key as it was exported (state import). */
  restore(key: StoredApiKey): void {
    this.keys.set(key.id, key);
    this.byKeyHash.set(key.keyHash, key.id);
    const ids = this.byUser.get(key.userId);
    if (ids) ids.push(key.id);
    else this.byUser.set(key.userId, [key.id]);
  }

  forUserNow(userId: string): StoredApiKey[] {
    return (this.byUser.get(userId) ?? []).map((id) => this.keys.get(id)).filter((k): k is StoredApiKey => !!k);
  }

  async forUser(userId: string): Promise<StoredApiKey[]> {
    return this.forUserNow(userId);
  }

  async forUsers(userIds: string[]): Promise<StoredApiKey[]> {
    return userIds.flatMap((id) => this.forUserNow(id));
  }

  async setDisabled(id: string, disabled: boolean): Promise<boolean> {
    const key = this.keys.get(id);
    if (!key) return false;
    key.disabled = disabled;
    if (disabled) this.sessions.removeForApiKey(key.userId, key.id);
    return true;
  }

  async remove(id: string): Promise<boolean> {
    const key = this.keys.get(id);
    if (!key) return false;
    this.removeNow(key);
    this.sessions.removeForApiKey(key.userId, key.id);
    return true;
  }

  private removeNow(key: StoredApiKey): void {
    this.keys.delete(key.id);
    this.byKeyHash.delete(key.keyHash);
    const ids = this.byUser.get(key.userId)?.filter((k) => k !== key.id) ?? [];
    if (ids.length === 0) this.byUser.delete(key.userId);
    else this.byUser.set(key.userId, ids);
  }

  removeForUserNow(userId: string): void {
    for (const key of this.forUserNow(userId)) this.removeNow(key);
  }

  async all(): Promise<StoredApiKey[]> {
    return this.allNow();
  }

  allNow(): StoredApiKey[] {
    return [...this.keys.values()];
  }

  clear(): void {
    this.keys.clear();
    this.byUser.clear();
    this.byKeyHash.clear();
  }
}
