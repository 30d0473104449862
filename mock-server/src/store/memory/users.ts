/**
 * Users, their identities, and e-mail/password registrations ("userpass accounts") in memory, with
 * the indexes every hot path needs (no scans). As on the hosted service, a registration is not a
 * user: the user object is created at the first login with the identity (or by linking it).
 * Every method decides in one synchronous step, so racing requests cannot double a registration
 * or an identity.
 */
import {
  type EmailSearch,
  type IdentityClaim,
  type IdentityLink,
  normalizeEmail,
  QuotaExceededError,
  type RegistrationClaim,
  type StoredIdentity,
  type StoredUser,
  type StoredUserpassAccount,
  secondUserpass,
  type UserPatch,
  type UserRecords,
  userEmailMatches,
  userLifetimeEnded,
} from "../store.ts";

const identityKey = (providerType: string, identityId: string) => `${providerType}\u0000${identityId}`;

export class MemoryUsers implements UserRecords {
  private readonly users = new Map<string, StoredUser>();
  private readonly userByIdentity = new Map<string, string>();
  private readonly accountsById = new Map<string, StoredUserpassAccount>();
  private readonly accountsByEmail = new Map<string, StoredUserpassAccount>();
  /** Registrations not yet tied to a user object (they count as users against the limit). */
  private unclaimed = 0;

  /** `maxUsers`: the app's limit on users (user objects and unclaimed registrations). */
  constructor(private readonly maxUsers: () => number = () => Number.POSITIVE_INFINITY) {}

  /** Refuses one more user when the app holds its limit (checked and added in one synchronous step). */
  private checkRoomForOne(): void {
    const limit = this.maxUsers();
    if (this.users.size + this.unclaimed + 1 > limit) throw new QuotaExceededError("users", limit);
  }

  get userCount(): number {
    return this.users.size;
  }

  get pendingCount(): number {
    let pending = 0;
    for (const account of this.accountsById.values()) if (!account.confirmed) pending++;
    return pending;
  }

  async get(id: string): Promise<StoredUser | undefined> {
    return this.users.get(id);
  }

  /** The synchronous form, for the in-memory hot path. */
  getNow(id: string): StoredUser | undefined {
    return this.users.get(id);
  }

  async accountAndOwner(id: string) {
    const account = this.accountsById.get(id);
    if (!account) return undefined;
    const ownerId = account.userId ?? this.userByIdentity.get(identityKey("local-userpass", id));
    return { account, owner: ownerId === undefined ? undefined : this.users.get(ownerId) };
  }

  async byIdentity(providerType: string, identityId: string): Promise<StoredUser | undefined> {
    const id = this.userByIdentity.get(identityKey(providerType, identityId));
    return id === undefined ? undefined : this.users.get(id);
  }

  private ownerOf(identities: StoredIdentity[]): StoredUser | undefined {
    for (const identity of identities) {
      const id = this.userByIdentity.get(identityKey(identity.provider_type, identity.id));
      const owner = id === undefined ? undefined : this.users.get(id);
      if (owner) return owner;
    }
    return undefined;
  }

  /** The registration a claim names, as the login's password check found it; undefined when it went or changed. */
  private claimable(registration: RegistrationClaim): StoredUserpassAccount | undefined {
    const account = this.accountsById.get(registration.accountId);
    return account?.passwordHash === registration.passwordHash ? account : undefined;
  }

  private claim(account: StoredUserpassAccount | undefined, userId: string): void {
    if (!account) return;
    if (account.userId === null) this.unclaimed--;
    account.userId = userId;
  }

  async create(user: StoredUser, registration?: RegistrationClaim): Promise<IdentityClaim> {
    const owner = this.ownerOf(user.identities);
    if (owner) return { ok: false, owner };
    const claimed = registration && this.claimable(registration);
    if (registration && !claimed) return { ok: false, registrationGone: true };
    // A user that takes the place of its own registration adds no one.
    if (claimed?.userId !== null) this.checkRoomForOne();
    this.restoreUser(user);
    this.claim(claimed, user.id);
    return { ok: true, user };
  }

  /** Adds a user as it was exported (state import). */
  restoreUser(user: StoredUser): void {
    this.users.set(user.id, user);
    for (const identity of user.identities) {
      this.userByIdentity.set(identityKey(identity.provider_type, identity.id), user.id);
    }
  }

  async addIdentity(
    userId: string,
    identity: StoredIdentity,
    data: Record<string, unknown>,
    registration?: RegistrationClaim,
  ): Promise<IdentityLink | undefined> {
    const user = this.users.get(userId);
    if (!user) return undefined;
    const owner = this.ownerOf([identity]);
    if (owner) return { ok: false, owner };
    if (secondUserpass(user, identity)) return { ok: false, userpassHeld: true };
    const claimed = registration && this.claimable(registration);
    if (registration && !claimed) return { ok: false, registrationGone: true };
    // A user's data and identities are replaced, never changed in place: the function runner
    // keeps its text of context.user while they are the same objects (functions/app-functions.ts).
    user.identities = [...user.identities, identity];
    user.data = { ...user.data, ...data };
    this.userByIdentity.set(identityKey(identity.provider_type, identity.id), user.id);
    this.claim(claimed, user.id);
    return { ok: true, user };
  }

  async update(id: string, patch: UserPatch): Promise<StoredUser | undefined> {
    const user = this.users.get(id);
    if (!user) return undefined;
    if (patch.disabled !== undefined) user.disabled = patch.disabled;
    if (patch.data !== undefined) user.data = { ...user.data, ...patch.data };
    if (patch.lastLoginAt !== undefined) user.lastLoginAt = patch.lastLoginAt;
    return user;
  }

  async list(): Promise<StoredUser[]> {
    return this.listNow();
  }

  listNow(): StoredUser[] {
    return [...this.users.values()];
  }

  async newest(limit: number, email?: EmailSearch) {
    const newestFirst = <T extends { id: string; createdAt: number }>(records: Iterable<T>) =>
      [...records]
        .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
        .slice(0, limit);
    const unclaimed = [...this.accountsById.values()].filter(
      (account) => account.userId === null && (!email || normalizeEmail(account.email).includes(email.folded)),
    );
    const users = email
      ? [...this.users.values()].filter((user) => userEmailMatches(user, this.emailOfNow(user), email))
      : [...this.users.values()];
    return { users: newestFirst(users), registrations: newestFirst(unclaimed), total: users.length + unclaimed.length };
  }

  async accountsByIds(ids: string[]): Promise<StoredUserpassAccount[]> {
    return ids.map((id) => this.accountsById.get(id)).filter((a): a is StoredUserpassAccount => a !== undefined);
  }

  async emailOf(user: StoredUser): Promise<string | undefined> {
    return this.emailOfNow(user);
  }

  private emailOfNow(user: StoredUser): string | undefined {
    for (const identity of user.identities) {
      if (identity.provider_type === "local-userpass") return this.accountsById.get(identity.id)?.email;
    }
    return undefined;
  }

  /** The users past their lifetime at `now` (a scan of them all: the sweep's, every few minutes). */
  endedNow(now: number): string[] {
    const ended: string[] = [];
    for (const user of this.users.values()) if (userLifetimeEnded(user, now)) ended.push(user.id);
    return ended;
  }

  /** Removes the user, its identity index entries and its e-mail/password registration. */
  removeUser(id: string): StoredUser | undefined {
    const user = this.users.get(id);
    if (!user) return undefined;
    this.users.delete(id);
    for (const identity of user.identities) {
      this.userByIdentity.delete(identityKey(identity.provider_type, identity.id));
      if (identity.provider_type === "local-userpass") this.removeAccountNow(identity.id);
    }
    return user;
  }

  async account(id: string): Promise<StoredUserpassAccount | undefined> {
    return this.accountsById.get(id);
  }

  /** Whether the address has a registration (`id`'s, when given). */
  hasAccountNow(email: string, id?: string): boolean {
    const account = this.accountsByEmail.get(normalizeEmail(email));
    return account !== undefined && (id === undefined || account.id === id);
  }

  async accountByEmail(email: string): Promise<StoredUserpassAccount | undefined> {
    return this.accountsByEmail.get(normalizeEmail(email));
  }

  async accounts(): Promise<StoredUserpassAccount[]> {
    return this.accountsNow();
  }

  accountsNow(): StoredUserpassAccount[] {
    return [...this.accountsById.values()];
  }

  async addAccount(account: StoredUserpassAccount): Promise<boolean> {
    if (this.accountsByEmail.has(normalizeEmail(account.email))) return false;
    if (account.userId === null) this.checkRoomForOne();
    return this.addAccountNow(account);
  }

  /** Adds a registration without the limit (state import). */
  addAccountNow(account: StoredUserpassAccount): boolean {
    const key = normalizeEmail(account.email);
    if (this.accountsByEmail.has(key)) return false;
    this.accountsById.set(account.id, account);
    this.accountsByEmail.set(key, account);
    if (account.userId === null) this.unclaimed++;
    return true;
  }

  async updateAccount(
    id: string,
    patch: { confirmed?: boolean; passwordHash?: string },
  ): Promise<StoredUserpassAccount | undefined> {
    const account = this.accountsById.get(id);
    if (!account) return undefined;
    if (patch.confirmed !== undefined) account.confirmed = patch.confirmed;
    if (patch.passwordHash !== undefined) account.passwordHash = patch.passwordHash;
    return account;
  }

  async confirmAccount(id: string): Promise<boolean> {
    const account = this.accountsById.get(id);
    if (!account || account.confirmed) return false;
    account.confirmed = true;
    return true;
  }

  async removeAccount(id: string, only?: "unclaimed" | "pending"): Promise<boolean> {
    const account = this.accountsById.get(id);
    if (!account || (only && account.userId !== null) || (only === "pending" && account.confirmed)) return false;
    return this.removeAccountNow(id) !== undefined;
  }

  private removeAccountNow(id: string): StoredUserpassAccount | undefined {
    const account = this.accountsById.get(id);
    if (!account) return undefined;
    this.accountsById.delete(id);
    this.accountsByEmail.delete(normalizeEmail(account.email));
    if (account.userId === null) this.unclaimed--;
    return account;
  }

  clear(): void {
    this.users.clear();
    this.userByIdentity.clear();
    this.accountsById.clear();
    this.accountsByEmail.clear();
    this.unclaimed = 0;
  }
}
