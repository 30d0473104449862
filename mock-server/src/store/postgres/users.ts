/**
 * Users, identities and e-mail/password registrations in PostgreSQL. Constraints decide the races:
 * the identities table's key (one owner per identity: concurrent first logins on any instances
 * create one user) and the registrations' unique address. Every change to a user is announced on
 * the users channel in its transaction, so each instance forgets what it kept of the user
 * (auth-cache.ts); this one forgets it before the change's promise resolves.
 */
import type pg from "pg";
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
} from "../store.ts";
import type { PgContext } from "./context.ts";
import { type Database, lockApp, type Queryable, rowsOf } from "./database.ts";
import { channels } from "./notifications.ts";
import { rowKey } from "./row-keys.ts";

/** `pg_notify` of a user's change on the users channel (parameters: the channel, the payload). */
const announceUser = "SELECT pg_notify($1, $2)";
export const userPayload = (context: PgContext, appId: string, userId: string) =>
  JSON.stringify({ i: context.instanceId, a: appId, u: userId });

/** After a change to a user is committed: this instance forgets what it kept of the user. */
export function usersChanged(context: PgContext, appId: string, userId: string): void {
  context.auth.forgetUser(appId, userId);
}

/** Other instances' changes to users (this one's are forgotten as they are made). */
export function listenToUsers(context: PgContext): void {
  context.subscribe(channels.users, (payload) => {
    const { i, a, u } = JSON.parse(payload) as { i: string; a: string; u: string };
    if (i !== context.instanceId) context.auth.forgetUser(a, u);
  });
}

type UserDoc = Omit<StoredUser, "id">;

/** Rolls a user's creation back: one of its identities has an owner. */
class IdentityTaken extends Error {}
/** The registration a login claims went, or its password changed, since the password matched it. */
class RegistrationGone extends Error {}

interface AccountRow {
  id: string;
  email: string;
  password_hash: string;
  confirmed: boolean;
  user_id: string | null;
  created_at: number;
}

const accountColumns = "id, email, password_hash, confirmed, user_id, created_at";

const toAccount = (row: AccountRow): StoredUserpassAccount => ({
  id: row.id,
  email: row.email,
  passwordHash: row.password_hash,
  confirmed: row.confirmed,
  userId: row.user_id,
  createdAt: row.created_at,
});

const toUser = (row: { id: string; doc: UserDoc }): StoredUser => ({ id: row.id, ...row.doc });

const docOf = (user: StoredUser): UserDoc => {
  const { id: _id, ...doc } = user;
  return doc;
};

/** The foreign key refusing identities claimed for a user the same statement did not add (createAlone). */
const isClaimOfNoUser = (error: unknown) =>
  (error as { code?: unknown }).code === "23503" &&
  (error as { constraint?: unknown }).constraint === "identities_app_id_user_id_fkey";

export class PgUsers implements UserRecords {
  private readonly db: Database;

  constructor(
    private readonly context: PgContext,
    private readonly appId: string,
  ) {
    this.db = context.db;
  }

  async get(id: string): Promise<StoredUser | undefined> {
    const [row] = await this.db.rows<{ id: string; doc: UserDoc }>(
      "SELECT id, doc FROM users WHERE app_id = $1 AND id = $2",
      [this.appId, id],
    );
    return row ? toUser(row) : undefined;
  }

  async byIdentity(providerType: string, identityId: string): Promise<StoredUser | undefined> {
    return this.ownerOf(this.db, providerType, identityId);
  }

  private async ownerOf(q: Queryable, providerType: string, identityId: string): Promise<StoredUser | undefined> {
    const { rows } = await q.query<{ id: string; doc: UserDoc }>(
      `SELECT u.id, u.doc FROM identities i JOIN users u ON u.app_id = i.app_id AND u.id = i.user_id
        WHERE i.app_id = $1 AND i.provider_type = $2 AND i.identity_id = $3`,
      [this.appId, providerType, rowKey(identityId)],
    );
    return rows[0] ? toUser(rows[0]) : undefined;
  }

  /** Claims identities for a user inside a transaction; the first taken one's owner, if any. */
  private async claimIdentities(
    q: Queryable,
    userId: string,
    identities: StoredIdentity[],
  ): Promise<StoredIdentity | undefined> {
    for (const identity of identities) {
      const { rowCount } = await q.query(
        `INSERT INTO identities (app_id, provider_type, identity_id, user_id) VALUES ($1, $2, $3, $4)
         ON CONFLICT DO NOTHING`,
        [this.appId, identity.provider_type, rowKey(identity.id), userId],
      );
      if (rowCount === 0) return identity;
    }
    return undefined;
  }

  /**
   * Marks a registration as the user's, when it is still there with the hash the login's password
   * matched; else throws RegistrationGone (the caller's transaction rolls back).
   */
  private async claimAccount(q: Queryable, registration: RegistrationClaim | undefined, userId: string) {
    if (registration === undefined) return;
    const { rowCount } = await q.query(
      "UPDATE userpass_accounts SET user_id = $3 WHERE app_id = $1 AND id = $2 AND password_hash = $4",
      [this.appId, registration.accountId, userId, registration.passwordHash],
    );
    if (rowCount === 0) throw new RegistrationGone();
  }

  async create(user: StoredUser, registration?: RegistrationClaim): Promise<IdentityClaim> {
    if (registration === undefined) return this.createAlone(user);
    let taken: StoredIdentity | undefined;
    try {
      await this.db.transaction(async (client) => {
        await lockApp(client, this.appId);
        // The registration first: a user that takes its place adds no one to the app's users.
        await this.claimAccount(client, registration, user.id);
        // Refused here (QuotaExceededError) when the app holds its limit of users.
        await client.query("INSERT INTO users (app_id, id, doc) VALUES ($1, $2, $3)", [
          this.appId,
          user.id,
          docOf(user),
        ]);
        taken = await this.claimIdentities(client, user.id, user.identities);
        // Another login owns it: nothing of this user is kept.
        if (taken) throw new IdentityTaken();
      });
    } catch (error) {
      if (error instanceof QuotaExceededError) {
        // At the limit, a concurrent first login of the same identity may have created its user.
        const owner = await this.ownerOfAny(user.identities);
        if (owner) return { ok: false, owner };
      }
      if (error instanceof RegistrationGone) return { ok: false, registrationGone: true };
      if (!(error instanceof IdentityTaken)) throw error;
    }
    if (!taken) return { ok: true, user };
    const owner = await this.ownerOf(this.db, taken.provider_type, taken.id);
    // The owner may be gone again already; then this login simply tries once more.
    return owner ? { ok: false, owner } : this.create(user, registration);
  }

  /**
   * A user without a registration to claim (an anonymous, OAuth or custom-token first login) in
   * one statement (`createStatement`): its identities claimed, and the user added only when every
   * one of them was. One that another user owns leaves the user out; those claimed then name a
   * user that is not there, which the foreign key refuses at the statement's end, so nothing of it
   * is kept either way.
   */
  private async createAlone(user: StoredUser): Promise<IdentityClaim> {
    const [text, values] = this.createStatement(user);
    const answer = await this.db.query(text, values).then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    );
    return this.createdBy(user, answer);
  }

  /** The statement of `createAlone` (sent in a pipeline by a first login: `PgAppStore.createAndStart`). */
  createStatement(user: StoredUser): [text: string, values: unknown[]] {
    return [
      `WITH claimed AS (
         INSERT INTO identities (app_id, provider_type, identity_id, user_id)
         SELECT $1, v.p, v.k, $2 FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS v(p, k, n) ORDER BY v.n
         ON CONFLICT DO NOTHING RETURNING 1),
       added AS (
         INSERT INTO users (app_id, id, doc) SELECT $1, $2, $3 WHERE (SELECT count(*) FROM claimed) = $6 RETURNING 1)
       SELECT (SELECT count(*)::int FROM claimed) AS claimed`,
      [
        this.appId,
        user.id,
        docOf(user),
        user.identities.map((identity) => identity.provider_type),
        user.identities.map((identity) => rowKey(identity.id)),
        user.identities.length,
      ],
    ];
  }

  /** What `createStatement` answered (its result or its error) made of the claim. */
  async createdBy(user: StoredUser, answer: { result?: pg.QueryResult; error?: unknown }): Promise<IdentityClaim> {
    const { error } = answer;
    if (error !== undefined) {
      // Refused (QuotaExceededError) when the app holds its limit of users: a concurrent first
      // login of the same identity may have created its user.
      if (error instanceof QuotaExceededError) {
        const owner = await this.ownerOfAny(user.identities);
        if (owner) return { ok: false, owner };
      }
      if (!isClaimOfNoUser(error)) throw error;
    } else if ((answer.result?.rows[0] as { claimed: number } | undefined)?.claimed === user.identities.length)
      return { ok: true, user };
    // Another login owns one: nothing of this user was kept. The owner may be gone again already;
    // then this login simply tries once more.
    const owner = await this.ownerOfAny(user.identities);
    return owner ? { ok: false, owner } : this.createAlone(user);
  }

  private async ownerOfAny(identities: StoredIdentity[]): Promise<StoredUser | undefined> {
    for (const identity of identities) {
      const owner = await this.ownerOf(this.db, identity.provider_type, identity.id);
      if (owner) return owner;
    }
    return undefined;
  }

  async addIdentity(
    userId: string,
    identity: StoredIdentity,
    data: Record<string, unknown>,
    registration?: RegistrationClaim,
  ): Promise<IdentityLink | undefined> {
    const outcome = await this.linked(async (client) => {
      const { rows } = await client.query<{ id: string; doc: UserDoc }>(
        "SELECT id, doc FROM users WHERE app_id = $1 AND id = $2 FOR UPDATE",
        [this.appId, userId],
      );
      if (!rows[0]) return { kind: "gone" as const };
      const user = toUser(rows[0]);
      if (secondUserpass(user, identity)) return { kind: "held" as const };
      if (await this.claimIdentities(client, userId, [identity])) return { kind: "taken" as const };
      user.identities.push(identity);
      Object.assign(user.data, data);
      await client.query("UPDATE users SET doc = $3 WHERE app_id = $1 AND id = $2", [this.appId, userId, docOf(user)]);
      await client.query(announceUser, [channels.users, userPayload(this.context, this.appId, userId)]);
      await this.claimAccount(client, registration, userId);
      return { kind: "ok" as const, user };
    });
    if (outcome.kind === "ok") usersChanged(this.context, this.appId, userId);
    if (outcome.kind === "gone") return undefined;
    if (outcome.kind === "registrationGone") return { ok: false, registrationGone: true };
    if (outcome.kind === "ok") return { ok: true, user: outcome.user };
    // An identity with an owner is "taken" before it is a second e-mail/password identity (as in memory).
    const owner = await this.ownerOf(this.db, identity.provider_type, identity.id);
    if (owner) return { ok: false, owner };
    if (outcome.kind === "held") return { ok: false, userpassHeld: true };
    // Its owner went meanwhile: try again.
    return this.addIdentity(userId, identity, data, registration);
  }

  /** A link's transaction; rolled back as `registrationGone` when the registration it claims went. */
  private async linked<T>(work: (client: Queryable) => Promise<T>): Promise<T | { kind: "registrationGone" }> {
    try {
      return await this.db.transaction(work);
    } catch (error) {
      if (error instanceof RegistrationGone) return { kind: "registrationGone" };
      throw error;
    }
  }

  async update(id: string, patch: UserPatch): Promise<StoredUser | undefined> {
    // One statement: concurrent updates of different fields of one user both land; announced with it.
    const [row] = await this.db.rows<{ id: string; doc: UserDoc }>(
      `WITH updated AS (
         UPDATE users SET doc = doc
           || CASE WHEN $3::boolean IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('disabled', $3::boolean) END
           || CASE WHEN $4::bigint IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('lastLoginAt', $4::bigint) END
           || CASE WHEN $5::jsonb IS NULL THEN '{}'::jsonb
                   ELSE jsonb_build_object('data', coalesce(doc->'data', '{}'::jsonb) || $5::jsonb) END
         WHERE app_id = $1 AND id = $2 RETURNING id, doc)
       SELECT id, doc, pg_notify($6, $7) FROM updated`,
      [
        this.appId,
        id,
        patch.disabled ?? null,
        patch.lastLoginAt ?? null,
        patch.data ?? null,
        channels.users,
        userPayload(this.context, this.appId, id),
      ],
    );
    if (row) usersChanged(this.context, this.appId, id);
    return row ? toUser(row) : undefined;
  }

  async list(q: Queryable = this.db): Promise<StoredUser[]> {
    const rows = await rowsOf<{ id: string; doc: UserDoc }>(
      q,
      "SELECT id, doc FROM users WHERE app_id = $1 ORDER BY seq",
      [this.appId],
    );
    return rows.map(toUser);
  }

  async newest(limit: number, email?: EmailSearch) {
    if (email) return this.newestMatching(limit, email);
    const [users, registrations, [count]] = await Promise.all([
      this.db.rows<{ id: string; doc: UserDoc }>(
        "SELECT id, doc FROM users WHERE app_id = $1 ORDER BY (doc ->> 'createdAt')::float8 DESC, id DESC LIMIT $2",
        [this.appId, limit],
      ),
      this.db.rows<AccountRow>(
        `SELECT ${accountColumns} FROM userpass_accounts WHERE app_id = $1 AND user_id IS NULL
          ORDER BY created_at DESC, id DESC LIMIT $2`,
        [this.appId, limit],
      ),
      this.db.rows<{ n: number }>(
        `SELECT (SELECT count(*) FROM users WHERE app_id = $1)
              + (SELECT count(*) FROM userpass_accounts WHERE app_id = $1 AND user_id IS NULL) AS n`,
        [this.appId],
      ),
    ]);
    return { users: users.map(toUser), registrations: registrations.map(toAccount), total: Number(count?.n ?? 0) };
  }

  /**
   * `newest` of the users and registrations whose shown e-mail matches (`EmailSearch`; a scan of the
   * app's users: a search someone asked for), each statement counting its matches as it pages them.
   */
  private async newestMatching(limit: number, email: EmailSearch) {
    const [users, registrations] = await Promise.all([
      this.db.rows<{ id: string; doc: UserDoc; n: string }>(
        `SELECT u.id, u.doc, count(*) OVER () AS n FROM users u
           LEFT JOIN userpass_accounts a ON a.app_id = u.app_id AND a.user_id = u.id
          WHERE u.app_id = $1 AND CASE
            WHEN a.id IS NOT NULL THEN strpos(a.email_key, $3) > 0
            ELSE jsonb_typeof(u.doc #> '{data,email}') = 'string'
              AND strpos(lower(u.doc #>> '{data,email}' COLLATE "C"), $4) > 0 END
          ORDER BY (u.doc ->> 'createdAt')::float8 DESC, u.id DESC LIMIT $2`,
        [this.appId, limit, email.folded, email.asciiFolded],
      ),
      this.db.rows<AccountRow & { n: string }>(
        `SELECT ${accountColumns}, count(*) OVER () AS n FROM userpass_accounts
          WHERE app_id = $1 AND user_id IS NULL AND strpos(email_key, $3) > 0
          ORDER BY created_at DESC, id DESC LIMIT $2`,
        [this.appId, limit, email.folded],
      ),
    ]);
    const matches = (rows: { n: string }[]) => Number(rows[0]?.n ?? 0);
    return {
      users: users.map(toUser),
      registrations: registrations.map(toAccount),
      total: matches(users) + matches(registrations),
    };
  }

  async accountsByIds(ids: string[]): Promise<StoredUserpassAccount[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.rows<AccountRow>(
      `SELECT ${accountColumns} FROM userpass_accounts WHERE app_id = $1 AND id = ANY($2::text[])`,
      [this.appId, ids],
    );
    return rows.map(toAccount);
  }

  async emailOf(user: StoredUser): Promise<string | undefined> {
    const identity = user.identities.find((i) => i.provider_type === "local-userpass");
    if (!identity) return undefined;
    return (await this.account(identity.id))?.email;
  }

  async account(id: string): Promise<StoredUserpassAccount | undefined> {
    const [row] = await this.db.rows<AccountRow>(
      `SELECT ${accountColumns} FROM userpass_accounts WHERE app_id = $1 AND id = $2`,
      [this.appId, id],
    );
    return row ? toAccount(row) : undefined;
  }

  async accountAndOwner(id: string) {
    const [row] = await this.db.rows<AccountRow & { owner_id: string | null; owner_doc: UserDoc | null }>(
      `SELECT a.id, a.email, a.password_hash, a.confirmed, a.user_id, a.created_at, u.id AS owner_id, u.doc AS owner_doc
         FROM userpass_accounts a
         LEFT JOIN users u ON u.app_id = a.app_id AND u.id = coalesce(a.user_id,
           (SELECT i.user_id FROM identities i
             WHERE i.app_id = a.app_id AND i.provider_type = 'local-userpass' AND i.identity_id = $3))
        WHERE a.app_id = $1 AND a.id = $2`,
      [this.appId, id, rowKey(id)],
    );
    if (!row) return undefined;
    const owner =
      row.owner_id !== null && row.owner_doc !== null ? toUser({ id: row.owner_id, doc: row.owner_doc }) : undefined;
    return { account: toAccount(row), owner };
  }

  async accountByEmail(email: string): Promise<StoredUserpassAccount | undefined> {
    const [row] = await this.db.rows<AccountRow>(
      `SELECT ${accountColumns} FROM userpass_accounts WHERE app_id = $1 AND email_key = $2`,
      [this.appId, normalizeEmail(email)],
    );
    return row ? toAccount(row) : undefined;
  }

  keptAccount(email: string): StoredUserpassAccount | undefined {
    return this.context.keptAccounts.get(this.appId, normalizeEmail(email));
  }

  keepAccount(account: StoredUserpassAccount): void {
    this.context.keptAccounts.keep(this.appId, normalizeEmail(account.email), account);
  }

  forgetAccount(email: string): void {
    this.context.keptAccounts.forget(this.appId, normalizeEmail(email));
  }

  async addAccount(account: StoredUserpassAccount): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `INSERT INTO userpass_accounts (app_id, id, email, email_key, password_hash, confirmed, user_id, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
      [
        this.appId,
        account.id,
        account.email,
        normalizeEmail(account.email),
        account.passwordHash,
        account.confirmed,
        account.userId,
        account.createdAt,
      ],
    );
    return rowCount === 1;
  }

  async updateAccount(
    id: string,
    patch: { confirmed?: boolean; passwordHash?: string },
  ): Promise<StoredUserpassAccount | undefined> {
    const [row] = await this.db.rows<AccountRow>(
      `UPDATE userpass_accounts SET confirmed = coalesce($3, confirmed), password_hash = coalesce($4, password_hash)
       WHERE app_id = $1 AND id = $2 RETURNING ${accountColumns}`,
      [this.appId, id, patch.confirmed ?? null, patch.passwordHash ?? null],
    );
    return row ? toAccount(row) : undefined;
  }

  async confirmAccount(id: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      "UPDATE userpass_accounts SET confirmed = true WHERE app_id = $1 AND id = $2 AND NOT confirmed",
      [this.appId, id],
    );
    return rowCount === 1;
  }

  async removeAccount(id: string, only?: "unclaimed" | "pending"): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `DELETE FROM userpass_accounts WHERE app_id = $1 AND id = $2
          AND ($3::text IS NULL OR (user_id IS NULL AND ($3 = 'unclaimed' OR NOT confirmed)))`,
      [this.appId, id, only ?? null],
    );
    return rowCount === 1;
  }

  async accounts(q: Queryable = this.db): Promise<StoredUserpassAccount[]> {
    const rows = await rowsOf<AccountRow>(
      q,
      `SELECT ${accountColumns} FROM userpass_accounts WHERE app_id = $1 ORDER BY seq`,
      [this.appId],
    );
    return rows.map(toAccount);
  }
}
