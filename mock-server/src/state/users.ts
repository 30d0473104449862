/**
 * Users, their identities, and e-mail/password registrations ("userpass accounts"), with the
 * indexes every hot path needs (no scans). As on the hosted service, a registration is not a
 * user: the user object is created at the first login with the identity (or by linking it).
 */
import type { ControlSchemas } from "../openapi/types.ts";

export type StoredUser = ControlSchemas["StoredUser"];
export type StoredIdentity = ControlSchemas["StoredIdentity"];
export type StoredUserpassAccount = ControlSchemas["StoredUserpassAccount"];

const identityKey = (providerType: string, identityId: string) => `${providerType}\u0000${identityId}`;
export const normalizeEmail = (email: string) => email.trim().toLowerCase();

export class UserStore {
  private readonly users = new Map<string, StoredUser>();
  private readonly userByIdentity = new Map<string, string>();
  private readonly accounts = new Map<string, StoredUserpassAccount>();
  private readonly accountByEmail = new Map<string, StoredUserpassAccount>();

  get userCount(): number {
    return this.users.size;
  }

  get pendingCount(): number {
    let pending = 0;
    for (const account of this.accounts.values()) if (!account.confirmed) pending++;
    return pending;
  }

  user(id: string): StoredUser | undefined {
    return this.users.get(id);
  }

  users_(): IterableIterator<StoredUser> {
    return this.users.values();
  }

  userByIdentityId(providerType: string, identityId: string): StoredUser | undefined {
    const id = this.userByIdentity.get(identityKey(providerType, identityId));
    return id === undefined ? undefined : this.users.get(id);
  }

  addUser(user: StoredUser): StoredUser {
    this.users.set(user.id, user);
    for (const identity of user.identities) {
      this.userByIdentity.set(identityKey(identity.provider_type, identity.id), user.id);
    }
    return user;
  }

  addIdentity(user: StoredUser, identity: StoredIdentity): void {
    user.identities.push(identity);
    this.userByIdentity.set(identityKey(identity.provider_type, identity.id), user.id);
  }

  /** Removes the user, its identity index entries and its e-mail/password registration. */
  removeUser(id: string): StoredUser | undefined {
    const user = this.users.get(id);
    if (!user) return undefined;
    this.users.delete(id);
    for (const identity of user.identities) {
      this.userByIdentity.delete(identityKey(identity.provider_type, identity.id));
      if (identity.provider_type === "local-userpass") this.removeAccount(identity.id);
    }
    return user;
  }

  account(id: string): StoredUserpassAccount | undefined {
    return this.accounts.get(id);
  }

  accountByEmailAddress(email: string): StoredUserpassAccount | undefined {
    return this.accountByEmail.get(normalizeEmail(email));
  }

  accounts_(): IterableIterator<StoredUserpassAccount> {
    return this.accounts.values();
  }

  /** Adds a registration unless the e-mail is taken (case-insensitive); synchronous, so races cannot double it. */
  addAccount(account: StoredUserpassAccount): boolean {
    const key = normalizeEmail(account.email);
    if (this.accountByEmail.has(key)) return false;
    this.accounts.set(account.id, account);
    this.accountByEmail.set(key, account);
    return true;
  }

  removeAccount(id: string): StoredUserpassAccount | undefined {
    const account = this.accounts.get(id);
    if (!account) return undefined;
    this.accounts.delete(id);
    this.accountByEmail.delete(normalizeEmail(account.email));
    return account;
  }

  /** The e-mail of a user's e-mail/password identity, if it has one. */
  emailOf(user: StoredUser): string | undefined {
    for (const identity of user.identities) {
      if (identity.provider_type === "local-userpass") return this.accounts.get(identity.id)?.email;
    }
    return undefined;
  }

  clear(): void {
    this.users.clear();
    this.userByIdentity.clear();
    this.accounts.clear();
    this.accountByEmail.clear();
  }
}
