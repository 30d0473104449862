/**
 * User API keys. The secret is shown once and kept only as a SHA-256 hash (keys are 256-bit random
 * values, so a fast hash is safe and keeps API-key logins O(1) through the hash index).
 */
import type { ControlSchemas } from "../openapi/types.ts";

export type StoredApiKey = ControlSchemas["StoredApiKey"];

export class ApiKeyStore {
  private readonly keys = new Map<string, StoredApiKey>();
  private readonly byUser = new Map<string, string[]>();
  private readonly byHash = new Map<string, string>();

  get size(): number {
    return this.keys.size;
  }

  get(id: string): StoredApiKey | undefined {
    return this.keys.get(id);
  }

  byKeyHash(hash: string): StoredApiKey | undefined {
    const id = this.byHash.get(hash);
    return id === undefined ? undefined : this.keys.get(id);
  }

  add(key: StoredApiKey): void {
    this.keys.set(key.id, key);
    this.byHash.set(key.keyHash, key.id);
    const ids = this.byUser.get(key.userId);
    if (ids) ids.push(key.id);
    else this.byUser.set(key.userId, [key.id]);
  }

  forUser(userId: string): StoredApiKey[] {
    return (this.byUser.get(userId) ?? []).map((id) => this.keys.get(id)).filter((k): k is StoredApiKey => !!k);
  }

  countForUser(userId: string): number {
    return this.byUser.get(userId)?.length ?? 0;
  }

  remove(id: string): boolean {
    const key = this.keys.get(id);
    if (!key) return false;
    this.keys.delete(id);
    this.byHash.delete(key.keyHash);
    const ids = this.byUser.get(key.userId)?.filter((k) => k !== id) ?? [];
    if (ids.length === 0) this.byUser.delete(key.userId);
    else this.byUser.set(key.userId, ids);
    return true;
  }

  removeForUser(userId: string): void {
    for (const key of this.forUser(userId)) this.remove(key.id);
  }

  all(): IterableIterator<StoredApiKey> {
    return this.keys.values();
  }

  clear(): void {
    this.keys.clear();
    this.byUser.clear();
    this.byHash.clear();
  }
}
