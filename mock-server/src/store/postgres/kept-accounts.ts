/**
 * The e-mail/password registrations of this instance's latest logins, by app and address. A login
 * checks its password against the kept hash and starts its session in one statement that checks
 * the registration is still as kept (`startStatement` in sessions.ts): no read before the password
 * check, one round trip a login. Nothing keeps them true: a registration changed on any instance
 * (its password reset, its user deleted, disabled or another one) fails that check, and the login
 * reads it afresh (app-services/auth/login.ts). See docs/decisions/0025-counted-sessions.md.
 */
import type { StoredUserpassAccount } from "../store.ts";

/** Registrations kept; past it the one whose last login is oldest goes. */
export const maxKeptAccounts = 10_000;

const key = (appId: string, emailKey: string) => `${appId}\u0000${emailKey}`;

export class KeptAccounts {
  private readonly accounts = new Map<string, StoredUserpassAccount>();

  get(appId: string, emailKey: string): StoredUserpassAccount | undefined {
    return this.accounts.get(key(appId, emailKey));
  }

  /** Keeps a registration as the newest. */
  keep(appId: string, emailKey: string, account: StoredUserpassAccount): void {
    const k = key(appId, emailKey);
    this.accounts.delete(k);
    this.accounts.set(k, account);
    if (this.accounts.size > maxKeptAccounts) this.accounts.delete(this.accounts.keys().next().value as string);
  }

  forget(appId: string, emailKey: string): void {
    this.accounts.delete(key(appId, emailKey));
  }

  get size(): number {
    return this.accounts.size;
  }
}
