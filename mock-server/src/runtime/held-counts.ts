/**
 * What each user and each client address holds at once on this instance — open change streams,
 * function calls running — for the caps that keep one user or address from taking what all share
 * (docs/decisions/0018-fair-shares.md).
 */
export class HeldCounts {
  private readonly byUser = new Map<string, number>();
  private readonly byAddress = new Map<string, number>();
  private total = 0;

  /** How many are held in all. */
  get size(): number {
    return this.total;
  }

  ofUser(userId: string): number {
    return this.byUser.get(userId) ?? 0;
  }

  ofAddress(address: string): number {
    return this.byAddress.get(address) ?? 0;
  }

  take(userId: string, address: string): void {
    this.byUser.set(userId, this.ofUser(userId) + 1);
    this.byAddress.set(address, this.ofAddress(address) + 1);
    this.total++;
  }

  /** Gives back one that `take` counted (once for each take). */
  give(userId: string, address: string): void {
    lessOne(this.byUser, userId);
    lessOne(this.byAddress, address);
    this.total--;
  }
}

function lessOne(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}
