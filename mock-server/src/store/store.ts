/**
 * The store: everything that must outlive a request and be shared by every instance — apps and
 * their settings, users, registrations, sessions, API keys, confirmation and reset tokens, the
 * documents of every collection, captured mail and EmailJS accounts. Routes reach it only through
 * these interfaces and never learn which implementation is behind them: memory (the harness
 * default: one process, nothing on disk) or PostgreSQL (`--database`: durable, several instances
 * on one database; see docs/decisions/0008-postgresql-store.md).
 *
 * Rules every implementation keeps:
 * - Races are decided by the store in one step (a unique constraint, a conditional update), never
 *   by a check in the caller followed by a write: `addAccount` answers false when the address is
 *   taken, `consume` uses a token up at most once, `addApiKey` refuses a duplicate name.
 * - A write has happened when its promise resolves (PostgreSQL: committed).
 * - Records handed out are copies or must be treated as read-only: callers change records only
 *   through the store's methods.
 *
 * What stays per instance (in `runtime/`, not here): clocks, faults, request journals, live control
 * events, rate-limit counters, function workers, open change streams.
 */
import type { AppConfig } from "../config/app-config.ts";
import type { ChangeEvent, Document } from "../data/documents.ts";
import type { ControlSchemas } from "../openapi/types.ts";
import type { Quota } from "./quotas.ts";

export type StoredUser = ControlSchemas["StoredUser"];
export type StoredIdentity = ControlSchemas["StoredIdentity"];
export type StoredUserpassAccount = ControlSchemas["StoredUserpassAccount"];
export type StoredSession = ControlSchemas["StoredSession"];
export type StoredApiKey = ControlSchemas["StoredApiKey"];
export type StoredAuthToken = ControlSchemas["StoredAuthToken"];
export type AuthTokenKind = ControlSchemas["AuthTokenKind"];
export type MailMessage = ControlSchemas["MailMessage"];
export type MailSource = ControlSchemas["MailSource"];
export type MailDelivery = NonNullable<MailMessage["delivery"]>;
export type EmailJsAccountState = ControlSchemas["EmailJsAccountState"];
/** An EmailJS account as stored (its clock is per instance). */
export type EmailJsAccountRecord = Omit<EmailJsAccountState, "clockOffsetMs">;
export type State = ControlSchemas["State"];
export type AppState = ControlSchemas["AppState"];

/** The stored part of a state export: clock offsets are added per instance by the runtime. */
export interface StoredState {
  apps: Omit<AppState, "clockOffsetMs">[];
  emailjsAccounts: EmailJsAccountRecord[];
  mail: MailMessage[];
}

/**
 * A state export read as it is written out, so that a database's state never sits in memory whole
 * (PostgreSQL: one read-only snapshot, its documents and mail read through cursors a batch at a
 * time). Read it once, in order, one list at a time: the apps, each app's collections' documents
 * (a collection's `owners` is whole once its documents were read), the EmailJS accounts, the mail;
 * then `end` (also when the reading stopped early: it gives the connection back).
 */
export interface StateReading {
  apps: AsyncIterable<Omit<AppState, "clockOffsetMs" | "collections"> & { collections: CollectionReading[] }>;
  emailjsAccounts(): Promise<EmailJsAccountRecord[]>;
  mail: AsyncIterable<MailMessage>;
  end(): Promise<void>;
}

export interface CollectionReading {
  database: string;
  collection: string;
  /** Each document's canonical Extended JSON text, in natural order. */
  documents: AsyncIterable<string>;
  owners(): NonNullable<AppState["collections"][number]["owners"]>;
}

/** A reading of an export a store made whole (the in-memory store's). */
export function readingOf(state: StoredState): StateReading {
  async function* each<T>(values: T[]): AsyncGenerator<T> {
    yield* values;
  }
  return {
    apps: each(
      state.apps.map(({ collections, ...app }) => ({
        ...app,
        collections: collections.map(({ database, collection, documents, owners }) => ({
          database,
          collection,
          documents: each(documents.map((doc) => JSON.stringify(doc))),
          owners: () => owners ?? [],
        })),
      })),
    ),
    emailjsAccounts: async () => state.emailjsAccounts,
    mail: each(state.mail),
    end: async () => undefined,
  };
}

/** What is kept of an app besides its records: its settings and where its functions come from. */
export interface AppRecord {
  appId: string;
  /** Derived from the app id (tokens name their app by it). */
  domainId: string;
  createdAt: number;
  /** The App Services app folder its functions come from, if any. */
  appDir: string | null;
  config: AppConfig;
}

/**
 * The app was deleted while the request ran (a write named it after its deletion committed): the
 * request answers as one that came a moment later does, its app not found. Nothing was written.
 */
export class AppGoneError extends Error {
  constructor(readonly appId: string) {
    super(`the app '${appId}' was deleted`);
  }
}

/** The store cannot be reached (the database is down or out of connections): requests answer 503. */
export class StoreUnavailableError extends Error {
  constructor(reason: string) {
    super(`the database is unavailable: ${reason}`);
  }
}

/**
 * A statement ran past its time (PostgreSQL's statement timeout, or a read cancelled at its
 * action's deadline): nothing was written. MongoDB actions answer their time-limit error; other
 * requests the outage answer (503, try again).
 */
export class StoreTimeoutError extends Error {
  constructor(reason: string) {
    super(`the database statement ran past its time: ${reason}`);
  }
}

/**
 * A write would take the app past one of its limits (config `limits`): nothing was written. Users
 * count user objects and registrations not yet tied to one; documents and their bytes (canonical
 * Extended JSON, UTF-8) are summed over the app's collections. Writes that do not grow a total
 * (deletes, a first login claiming its registration, a shrinking update) are never refused.
 */
export class QuotaExceededError extends Error {
  constructor(
    readonly quota: Quota,
    readonly limit: number,
    /** What the app holds (when known: more than the limit after the limit was lowered). */
    readonly held = limit,
  ) {
    super(`the app's ${quota} limit (${limit}) is reached`);
  }
}

export { type Quota, quotas } from "./quotas.ts";

/**
 * A writer spent its allowance of writes (config `limits.writesPerSecondPerUser`, or the anonymous
 * one): nothing was written.
 */
export class WriteRateExceededError extends Error {
  constructor(readonly limit: number) {
    super(`the writer's limit of ${limit} documents a second is reached`);
  }
}

/**
 * A multi-document transaction's commit met a write it cannot be ordered after (DocumentStore.commit):
 * a document it wrote was changed by another write since the transaction read it, or a document it
 * inserted was inserted meanwhile. Nothing was written.
 */
export class WriteConflictError extends Error {
  constructor() {
    super("a document of the transaction was written by another operation meanwhile");
  }
}

/**
 * Who writes, for the per-user limits: a document counts for the user who last inserted, updated
 * or replaced it; `anonymous` when every identity of that user is anonymous (its documents count
 * toward the anonymous users' share too). Writes without a writer (the control API, functions run
 * as system) count for the app only.
 */
export interface Writer {
  userId: string;
  anonymous: boolean;
}

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

/**
 * A search of users by e-mail (`listUsers`' `email`): the text an e-mail shown for a user contains,
 * the case of letters ignored. The e-mail shown is the user's e-mail/password registration's, else
 * the `email` of its profile data (an identity provider's or a custom token's). A registration's
 * address is compared in the folded form its uniqueness uses (`normalizeEmail`: every letter); a
 * profile's, which no index keeps folded, with A–Z folded only, as PostgreSQL's `lower(… COLLATE
 * "C")` folds it whatever the database's locale, so both stores find the same users.
 */
export interface EmailSearch {
  /** Sought in `normalizeEmail` of a registration's address. */
  folded: string;
  /** Sought in a profile's e-mail with A–Z folded. */
  asciiFolded: string;
}

/** Folds A–Z only. */
export const asciiLowerCase = (text: string) => text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());

export const emailSearch = (text: string): EmailSearch => ({
  folded: normalizeEmail(text),
  asciiFolded: asciiLowerCase(text.trim()),
});

/** Whether a user's shown e-mail matches: its registration's address when it has one, else its profile's. */
export function userEmailMatches(user: StoredUser, registration: string | undefined, search: EmailSearch): boolean {
  if (registration !== undefined) return normalizeEmail(registration).includes(search.folded);
  const email = user.data.email;
  return typeof email === "string" && asciiLowerCase(email).includes(search.asciiFolded);
}

/** Whether `identity` would be a second e-mail/password identity of `user` (one a user at most). */
export const secondUserpass = (user: StoredUser, identity: StoredIdentity) =>
  identity.provider_type === "local-userpass" && user.identities.some((i) => i.provider_type === "local-userpass");

/**
 * A user all of whose identities are anonymous (held to the anonymous users' limits, and to their
 * lifetime): a user who linked another identity is no longer one.
 */
export const isAnonymousUser = (user: StoredUser) =>
  user.identities.length > 0 && user.identities.every((identity) => identity.provider_type === "anon-user");

/**
 * Anonymous users exist until 90 days of the app's clock after their creation, as on the hosted
 * service: from then on they are gone, as if deleted (docs/decisions/0030-retention.md). Their
 * refresh tokens effectively never expire (50 years): they end with their user.
 */
export const anonymousUserLifetimeMs = 90 * 24 * 60 * 60 * 1000;

/** Whether a user is gone by its lifetime at `now` (the app's clock): an anonymous user 90 days old. */
export const userLifetimeEnded = (user: StoredUser, now: number) =>
  now >= user.createdAt + anonymousUserLifetimeMs && isAnonymousUser(user);

/**
 * Whether a user found in the store may act at `now` (the app's clock): not disabled and not past
 * its lifetime. Every request with a token asks; an anonymous user past its lifetime is refused at
 * once, whether or not a sweep has removed it yet.
 */
export const userActive = (user: StoredUser | undefined, now: number): user is StoredUser =>
  user !== undefined && !user.disabled && !userLifetimeEnded(user, now);

/** Confirmation and reset tokens are valid for 30 minutes of the app's clock. */
export const authTokenLifetimeMs = 30 * 60 * 1000;

// ---------------------------------------------------------------------------------------------
// Apps

/**
 * An app created, updated (its settings replaced), reset or deleted; or its database triggers'
 * suspensions changed (`triggers`: a trigger suspended or resumed; the record is as it was).
 */
export type AppChange = "created" | "updated" | "reset" | "deleted" | "triggers";

/**
 * A database trigger suspended: its collection was dropped or renamed over, which ends a change
 * stream on it, and App Services suspends a trigger whose stream ended so (decision 0057).
 */
export interface TriggerSuspension {
  name: string;
  /** When (the app's clock, ms). */
  since: number;
  reason: string;
}

/**
 * Refresh-token sessions that ended (so the change streams opened on them end too): one session
 * (logout, expiry), the sessions an API key opened (the key disabled or deleted), or with neither
 * id every session of the user (sessions revoked, user disabled or deleted, password reset).
 */
export interface EndedSessions {
  userId: string;
  sessionId?: string;
  apiKeyId?: string;
}

export interface AppRecords {
  get(appId: string): Promise<AppRecord | undefined>;
  byDomainId(domainId: string): Promise<AppRecord | undefined>;
  list(): Promise<AppRecord[]>;
  /** Adds an app; false when the id exists. */
  create(record: AppRecord): Promise<boolean>;
  /**
   * Adds the app, or replaces the settings of the app with this id (an app folder loaded again).
   * With `keepCustomTokenKey` (the record's custom-token key was generated, not configured), an
   * existing app keeps the custom-token key it has, so a generated key survives restarts.
   */
  upsert(record: AppRecord, options?: { keepCustomTokenKey?: boolean }): Promise<"created" | "updated">;
  /** Deletes the app with everything it holds (its mail included). */
  delete(appId: string): Promise<boolean>;
  /** Back to the initial state: no users, registrations, sessions, keys, tokens, data or mail. */
  reset(appId: string): Promise<boolean>;
  /** The records of one app (whether or not it exists: callers look the app up first). */
  scope(appId: string): AppStore;
  /** Changes to apps made by any instance (this one included), to drop what an instance caches. */
  onChange(listener: (appId: string, change: AppChange) => void): () => void;
  /**
   * Sessions ended by any instance (this one at once, when the write has happened; the others when
   * it is committed), so each instance ends the change streams open on them.
   */
  onSessionsEnded(listener: (appId: string, ended: EndedSessions) => void): () => void;
}

// ---------------------------------------------------------------------------------------------
// One app's records

/** A user and one of its sessions (undefined when gone, or when the session is another user's). */
export interface UserAndSession {
  user: StoredUser | undefined;
  session: StoredSession | undefined;
}

export interface AppStore {
  readonly users: UserRecords;
  readonly sessions: SessionRecords;
  readonly apiKeys: ApiKeyRecords;
  readonly authTokens: AuthTokenRecords;
  readonly data: DocumentStore;
  /** Deletes a user with its identities, e-mail/password registration, sessions and API keys. */
  deleteUser(userId: string): Promise<boolean>;
  /**
   * Deletes (as deleteUser) the users past their lifetime at `now`, the app's clock
   * (`userLifetimeEnded`): their ids. Called when the app's clock moves (and, in memory, every few
   * minutes); the PostgreSQL store's retention sweeps remove them by real time too
   * (RetentionSweeps.anonymousUsers).
   */
  removeEndedUsers?(now: number): Promise<string[]>;
  /**
   * A login: adds the session (ending the user's oldest past the app's limit, as `sessions.add`)
   * and records the login's time on the user (`lastLoginAt`), in one step. With `customData`, the
   * user's custom data document may come back with it (`null`: none; absent: not read, ask the data).
   * Undefined when the user is gone or disabled, or the session's API key gone or disabled (since
   * the login read them): no session is kept.
   */
  startSession(
    session: StoredSession,
    lastLoginAt: number,
    customData?: CustomDataPlace,
  ): Promise<{ customData?: FoundCustomData } | undefined>;
  /**
   * A first login without a registration to claim (anonymous, OAuth, custom token): the user made
   * as `users.create` makes it and, when it was, its session started as `startSession` starts it,
   * together where the store can (`started`: absent when the session was not started — the user
   * not made, or gone again — and the caller starts it). A store without it has the caller do both.
   */
  createAndStart?(
    user: StoredUser,
    session: StoredSession,
    lastLoginAt: number,
    customData?: CustomDataPlace,
  ): Promise<{ claim: IdentityClaim; started?: { customData?: FoundCustomData } }>;
  /**
   * An e-mail/password login once its password matched `passwordHash`: the registration read again
   * with the user it belongs to (as `users.accountAndOwner`) and, when that user is
   * `session.userId`, the registration is confirmed, its password hash is still `passwordHash` and
   * the user not disabled, the login started (as `startSession`), in one step. With `customData`,
   * the user's custom data document may come back with it (`null`: none; absent: not read, ask the
   * data). Undefined when the registration is gone.
   */
  startRegistrationSession(
    accountId: string,
    passwordHash: string,
    session: StoredSession,
    lastLoginAt: number,
    customData?: CustomDataPlace,
  ): Promise<RegistrationSession | undefined>;
  /**
   * A user and one of its sessions, read together (every access-token request needs both); the
   * session is undefined when it is gone or belongs to another user.
   */
  userSession(userId: string, sessionId: string): Promise<UserAndSession>;
  /**
   * userSession answered at once, when the store holds the answer in this process (the in-memory
   * store always; the PostgreSQL store when it keeps the pair and may answer from it): every
   * authenticated request asks, and a promise's turns cost it more than the lookups do. Undefined:
   * ask `userSession`.
   */
  userSessionNow?(userId: string, sessionId: string): UserAndSession | undefined;
  counts(): Promise<{ users: number; pendingUsers: number }>;
  /**
   * A scheduled trigger's time, claimed for one instance to run (runtime/scheduled-triggers.ts):
   * the trigger's mark moves to `time` when it is earlier (or there is none), or later than
   * `putBackBefore` (a mark the app's clock was put back behind; Infinity: none), in one step, and the caller that
   * moved it is told so, with the mark before (undefined: the trigger's first, or the schedule
   * starting again where the clock was put back to).
   */
  claimScheduledTime(trigger: string, time: number, putBackBefore: number): Promise<ScheduleClaim>;
  /**
   * The app's suspended database triggers (decision 0057). A suspension is kept with the write
   * that made it (DocumentStore.suspendTriggers), and ends when the trigger is resumed, the app's
   * settings are replaced or the app is reset.
   */
  triggerSuspensions(): Promise<TriggerSuspension[]>;
  /** Ends a trigger's suspension; false when it was not suspended. Every instance is told (`triggers`). */
  resumeTrigger(name: string): Promise<boolean>;
}

/** A claim of a scheduled trigger's time: whether this caller moved the mark, and the mark before it. */
export interface ScheduleClaim {
  claimed: boolean;
  /** Undefined: the trigger had no mark (its schedule starts here), or another caller claimed. */
  previous?: number;
}

/** Where an app keeps its users' custom data: the document of `collection` whose `userIdField` is the user's id. */
export interface CustomDataPlace {
  database: string;
  collection: string;
  userIdField: string;
}

/**
 * The longest identity id a provider whose ids the client may choose gives (a custom token's `sub`,
 * a custom function's answer): it is written into every refresh token of the identity's sessions
 * (twice) and kept with the user (docs/decisions/0002-unconfirmed-wire-details.md).
 */
export const maxIdentityIdLength = 1024;

/**
 * The most custom user data an access token carries (its `user_data`): bytes of the document's
 * canonical Extended JSON, the 16 KB the service's documentation advises. Larger data is left out
 * of the token (session-tokens.ts; docs/decisions/0002-unconfirmed-wire-details.md).
 */
export const maxTokenUserDataBytes = 16 * 1024;

/** A user's custom data document too large for an access token, unread: its size (`maxTokenUserDataBytes`). */
export class OversizedCustomData {
  constructor(readonly bytes: number) {}
}

/** A user's custom data as a login or refresh found it: its document, null (none), or too large for a token. */
export type FoundCustomData = Document | null | OversizedCustomData;

export type RegistrationSession =
  | { started: true; account: StoredUserpassAccount; owner: StoredUser; customData?: FoundCustomData }
  | { started: false; account: StoredUserpassAccount; owner: StoredUser | undefined };

export type IdentityClaim =
  | { ok: true; user: StoredUser }
  /** The identity belongs to this user already (a concurrent first login won). */
  | { ok: false; owner: StoredUser }
  /**
   * The registration to claim was removed, or its password changed, since the login's password
   * matched it: nothing changed, as if that had come first.
   */
  | { ok: false; registrationGone: true };

/** The e-mail/password registration a login claims for a user, as its password check found it. */
export interface RegistrationClaim {
  accountId: string;
  /** The hash the password matched: claimed only while the registration still has it. */
  passwordHash: string;
}

/** What linking an identity to a user did. */
export type IdentityLink =
  | IdentityClaim
  /** The identity is an e-mail/password one and the user has one already (a user has at most one). */
  | { ok: false; userpassHeld: true };

export interface UserPatch {
  disabled?: boolean;
  /** Merged into the user's profile data (key by key). */
  data?: Record<string, unknown>;
  lastLoginAt?: number;
}

export interface UserRecords {
  get(id: string): Promise<StoredUser | undefined>;
  byIdentity(providerType: string, identityId: string): Promise<StoredUser | undefined>;
  /**
   * Adds a user with its identities (unique per provider) and, when given, marks the e-mail/password
   * registration `registration` as the user's. When an identity is taken the existing owner is
   * answered and nothing changes.
   */
  create(user: StoredUser, registration?: RegistrationClaim): Promise<IdentityClaim>;
  /**
   * Attaches an identity to a user (and merges profile data); the owner when it is taken. A second
   * e-mail/password identity is refused, checked with the user as it is when the identity is added.
   */
  addIdentity(
    userId: string,
    identity: StoredIdentity,
    data: Record<string, unknown>,
    registration?: RegistrationClaim,
  ): Promise<IdentityLink | undefined>;
  /** Changes a user; undefined when there is no such user. */
  update(id: string, patch: UserPatch): Promise<StoredUser | undefined>;
  /** Every user object, oldest first. */
  list(): Promise<StoredUser[]>;
  /**
   * The newest `limit` user objects and, apart, the newest `limit` registrations not tied to a user
   * (each by creation, then id, newest first), and how many there are of both together; with
   * `email`, of those whose shown e-mail matches only (`EmailSearch`).
   */
  newest(
    limit: number,
    email?: EmailSearch,
  ): Promise<{ users: StoredUser[]; registrations: StoredUserpassAccount[]; total: number }>;
  /** These registrations (by id), those that are there. */
  accountsByIds(ids: string[]): Promise<StoredUserpassAccount[]>;
  /** The e-mail of a user's e-mail/password identity, if it has one. */
  emailOf(user: StoredUser): Promise<string | undefined>;

  account(id: string): Promise<StoredUserpassAccount | undefined>;
  /**
   * A registration and the user its e-mail/password identity belongs to (the registration's user,
   * else the identity's owner), read together: what a login checks once the password matched.
   */
  accountAndOwner(id: string): Promise<{ account: StoredUserpassAccount; owner: StoredUser | undefined } | undefined>;
  accountByEmail(email: string): Promise<StoredUserpassAccount | undefined>;
  /**
   * The registration of an address as this instance kept it at its last login here, when the store
   * keeps them (PostgreSQL: the login then needs no read before its password check). It may have
   * changed since on any instance: a login through it starts only while it is as kept
   * (`startRegistrationSession` checks it), else reads it afresh.
   */
  keptAccount?(email: string): StoredUserpassAccount | undefined;
  /** Keeps a registration as a login through it found it (`startRegistrationSession`). */
  keepAccount?(account: StoredUserpassAccount): void;
  /** Forgets what `keptAccount` answers for an address. */
  forgetAccount?(email: string): void;
  /** Adds a registration unless the address is taken (case-insensitive): false then. */
  addAccount(account: StoredUserpassAccount): Promise<boolean>;
  /** Changes a registration (confirmed, password); undefined when there is none. */
  updateAccount(
    id: string,
    patch: { confirmed?: boolean; passwordHash?: string },
  ): Promise<StoredUserpassAccount | undefined>;
  /** Confirms a pending registration: false when it is gone or was confirmed already. */
  confirmAccount(id: string): Promise<boolean>;
  /**
   * Removes a registration; with `only`, only while it is still `unclaimed` (no user took it) or
   * `pending` (unclaimed and unconfirmed), in the same step: false when it is gone or no longer so.
   */
  removeAccount(id: string, only?: "unclaimed" | "pending"): Promise<boolean>;
  /** Every registration, oldest first. */
  accounts(): Promise<StoredUserpassAccount[]>;
}

/** Every removal of sessions is announced (AppRecords.onSessionsEnded). */
export interface SessionRecords {
  get(id: string): Promise<StoredSession | undefined>;
  /**
   * Whether the store knows, without asking, that the session is gone (ended sessions never come
   * back): a store that asks a database answers their refresh tokens so without a statement.
   */
  knownGone?(id: string): boolean;
  add(session: StoredSession): Promise<void>;
  remove(id: string): Promise<boolean>;
  forUser(userId: string): Promise<StoredSession[]>;
  /** The sessions of these users, each user's in order. */
  forUsers(userIds: string[]): Promise<StoredSession[]>;
  /** Ends every session of a user (revoked, disabled, password reset). */
  removeForUser(userId: string): Promise<number>;
  all(): Promise<StoredSession[]>;
}

/** `no-user`: the user is gone (deleted since the request was authenticated): no key is kept. */
export type AddApiKeyResult = "ok" | "name-taken" | "limit" | "no-user";

export interface ApiKeyRecords {
  get(id: string): Promise<StoredApiKey | undefined>;
  byHash(keyHash: string): Promise<StoredApiKey | undefined>;
  forUser(userId: string): Promise<StoredApiKey[]>;
  /** The keys of these users, each user's in order. */
  forUsers(userIds: string[]): Promise<StoredApiKey[]>;
  /** Adds a key unless the user is gone or has one of this name or `maxPerUser` keys already. */
  add(key: StoredApiKey, maxPerUser: number): Promise<AddApiKeyResult>;
  /** Disabling also ends the sessions the key opened (enabling does not bring them back). */
  setDisabled(id: string, disabled: boolean): Promise<boolean>;
  /** Deletes a key and ends the sessions it opened. */
  remove(id: string): Promise<boolean>;
  all(): Promise<StoredApiKey[]>;
}

export type ConsumeResult =
  | { ok: true; token: StoredAuthToken }
  | { ok: false; reason: "unknown" | "expired" | "used" };

export interface AuthTokenRecords {
  /**
   * Keeps a token of a registration: false when its address has none (deleted, or the app reset,
   * while the request that issues it ran), and nothing is kept. Throws AppGoneError when the app
   * is gone (PostgreSQL; in memory a deleted app's records are left to go with it).
   */
  add(token: StoredAuthToken): Promise<boolean>;
  /** Checks a pair without using it up. */
  check(kind: AuthTokenKind, token: string, tokenId: string, now: number): Promise<ConsumeResult>;
  /** Checks a pair and uses it up; of racing calls exactly one gets `ok`. */
  consume(kind: AuthTokenKind, token: string, tokenId: string, now: number): Promise<ConsumeResult>;
  markUsed(tokenId: string): Promise<void>;
  /** Oldest first. */
  list(filter?: AuthTokenFilter): Promise<StoredAuthToken[]>;
  /** The newest `limit` matches, oldest first, and how many match. */
  newest(filter: AuthTokenFilter, limit: number): Promise<{ tokens: StoredAuthToken[]; total: number }>;
}

/** Tokens of an address (in any case) and of a kind. */
export interface AuthTokenFilter {
  email?: string;
  kind?: AuthTokenKind;
}

// ---------------------------------------------------------------------------------------------
// Documents

export interface CollectionInfo {
  database: string;
  collection: string;
  count: number;
}

/** A write to apply, in order, inside one atomic write. */
export type DocumentChange =
  | { op: "insert"; doc: Document }
  | { op: "replace"; doc: Document }
  | { op: "delete"; id: unknown };

export interface AppliedChanges {
  /** How many changes were applied (all, unless an insert met an existing `_id`). */
  applied: number;
  /** The index of the insert whose `_id` existed: it and every later change were not applied. */
  duplicateAt?: number;
}

export interface WriteView {
  /**
   * The documents that may match `prefilter` (a MongoDB query; every matching document is among
   * them, others may be too), in natural order, held against other writers until the write ends,
   * in batches read as they are asked for (see DocumentStore.scan).
   */
  scan(prefilter: Document, options?: ScanOptions): AsyncIterable<Document[]>;
}

/**
 * How a caller reads (docs/decisions/0018-fair-shares.md): a store reads batches as they are asked
 * for, so a caller that stops early (it has what it needs, or a limit ran out) reads no further.
 */
export interface ScanOptions {
  /**
   * The matching documents the caller needs at most (find's limit, findOne, updateOne): the first
   * batches are about that small, so a query the store evaluates exactly reads just those.
   */
  want?: number;
  /** The caller refuses more than this many documents: the store need not read past one more. */
  max?: number;
  /**
   * When (performance.now()) the caller gives up: a statement still running then is cancelled
   * (StoreTimeoutError), so the database stops working for an answer nobody waits for.
   */
  deadline?: number;
}

/**
 * What `exactTexts` reads: the top-level `fields` a sort needs of each match, and the bounds of
 * ScanOptions. With `want`, the caller takes the first `want` matches in natural order (no sort).
 */
export interface ExactTextsOptions extends ScanOptions {
  fields: readonly string[];
}

/** The matches of an exact query as a `find` answers them without reading the documents whole. */
export interface ExactTexts {
  /** Each match's canonical Extended JSON text, natural order: the text a reply holds for it. */
  texts: string[];
  /**
   * For each match, an object holding its values of the requested fields (those it has), which
   * sort as the document would: the document itself, or an object of just those fields.
   */
  keys: Document[];
  /** For each match, its BSON size or more (the reply's cap is checked against their sum). */
  sizes: number[];
  /** The documents examined (counted against the action's `queryDocsExaminedLimit`). */
  examined: number;
}

export interface WritePlan<T> {
  changes: DocumentChange[];
  /** Change events to publish once the changes are stored (only those of applied changes go out). */
  events: (applied: AppliedChanges) => ChangeEvent[];
  result: (applied: AppliedChanges) => T;
}

/** One collection's part of a commit (DocumentStore.commit). */
export interface CommitPart {
  database: string;
  collection: string;
  plan: (view: WriteView) => Promise<WritePlan<void>>;
}

export interface DocumentStore {
  /**
   * The documents that may match `prefilter` (see WriteView.scan), natural order, all at once.
   * Callers must not change them.
   */
  read(database: string, collection: string, prefilter: Document): Promise<Document[]>;
  /**
   * The documents that may match `prefilter` (see WriteView.scan), natural order, in batches the
   * store reads as they are asked for (PostgreSQL: a statement a batch, each bounded, so the
   * caller can check its deadline between them and stop when it has enough). Callers must not
   * change them.
   */
  scan(database: string, collection: string, prefilter: Document, options?: ScanOptions): AsyncIterable<Document[]>;
  /**
   * How many documents match `query`, when the store evaluates it exactly without reading them
   * (store/exact-query.ts: equality of top-level fields); undefined otherwise. At most `limit`;
   * cancelled at `deadline` as a scan is.
   */
  countExact(
    database: string,
    collection: string,
    query: Document,
    options?: Pick<ScanOptions, "deadline"> & { limit?: number },
  ): Promise<number | undefined>;
  /**
   * The matches of an exact query (store/exact-query.ts) as their stored texts, for a `find`
   * without a projection answered from them as they are (mongo-actions.ts `exactFind`): no
   * document is parsed whole, matched again or written again. Undefined when the store cannot
   * answer this one so (the caller then scans). At most `max` + 1 examined; cancelled at
   * `deadline` as a scan is.
   */
  exactTexts?(
    database: string,
    collection: string,
    query: Document,
    options: ExactTextsOptions,
  ): Promise<ExactTexts | undefined>;
  /** The first document whose top-level `field` equals a string (custom user data). */
  findByField(database: string, collection: string, field: string, value: string): Promise<Document | undefined>;
  /**
   * findByField answered at once, by a store that holds the documents in this process (the
   * in-memory store): every function call reads the caller's custom data, and a promise's turns
   * cost that call more than the lookup does. Stores that must ask elsewhere leave it out.
   */
  findByFieldNow?(database: string, collection: string, field: string, value: string): Document | undefined;
  /**
   * findByField for an access token's custom data, by a store that would otherwise read a document
   * of any size whole (PostgreSQL): OversizedCustomData, unread, when its canonical Extended JSON
   * is longer than `maxBytes`.
   */
  findByFieldWithin?(
    database: string,
    collection: string,
    field: string,
    value: string,
    maxBytes: number,
  ): Promise<Document | OversizedCustomData | undefined>;
  /** A page of a collection, natural order, and its size. */
  page(
    database: string,
    collection: string,
    skip: number,
    limit: number,
  ): Promise<{ total: number; documents: Document[] }>;
  /**
   * Reads, decides and writes as one step: `plan` sees the documents it reads and answers the
   * changes; they are stored (in order, up to a duplicate `_id`) before any other write to the
   * collection, and the events go to subscribers of every instance.
   */
  write<T>(
    database: string,
    collection: string,
    plan: (view: WriteView) => Promise<WritePlan<T>>,
    writer?: Writer,
  ): Promise<T>;
  /**
   * Several collections' writes as one (a multi-document transaction's commit): each part's plan
   * reads (its documents held, as `write`'s) and decides; then every part's changes are stored, or
   * none (a limit refused, a plan threw, or an insert met an existing `_id`: WriteConflictError),
   * and the events go out after them, part by part. Parts name distinct collections.
   */
  commit(parts: CommitPart[], writer?: Writer): Promise<void>;
  collections(): Promise<CollectionInfo[]>;
  drop(database: string, collection: string): Promise<boolean>;
  /**
   * Change events of this app's collections, from every instance, in commit order, from the moment
   * the promise resolves. Rejects with StoreUnavailableError when changes cannot be delivered now
   * (the database connection is down). With `local`, only the changes made through this instance
   * (what the inspector's live view needs; cheaper: no other instance has to announce its writes).
   */
  subscribe(listener: (event: ChangeEvent) => void, options?: { local?: boolean }): Promise<() => void>;
  /** Subscribers on this instance now (a leak check for tests and the soak). */
  readonly listenerCount: number;
  /**
   * From now on, the events `wanted` takes are kept in the store with their writes until
   * `Store.triggerEvents.done` (the app's database triggers: decision 0031); the local event of
   * each carries its `durableId`. Null: none. Stores whose instances share nothing leave it out.
   */
  keepEvents?(wanted: ((event: ChangeEvent) => boolean) | null): void;
  /**
   * Which database triggers a change suspends (a drop or rename of their collection: decision
   * 0057): the store keeps each suspension with the write that made it (on PostgreSQL in its
   * transaction, and tells the other instances, `AppChange` `triggers`). Null: none.
   */
  suspendTriggers(decide: ((event: ChangeEvent) => TriggerSuspension[]) | null): void;
}

/**
 * How long an instance holds a kept trigger event without renewing it (`--trigger-lease`); each
 * instance renews its own and claims those whose lease ran out six times a lease.
 */
export const defaultTriggerLeaseMs = 60_000;

/**
 * A trigger event kept in the store, for the app named: a database trigger's change (its
 * `durableId` set), or one authentication trigger's event (`{operationType, providers, user, time}`).
 */
export type KeptEvent =
  | { appId: string; change: ChangeEvent }
  | { appId: string; id: string; auth: { trigger: string; event: Document } };

/**
 * Trigger events kept in the store, leased to instances (decision 0031): database triggers'
 * with their writes (DocumentStore.keepEvents), authentication triggers' as they fire (`keep`).
 */
export interface TriggerEventStore {
  /** How long an event stays this instance's without being renewed. */
  readonly leaseMs: number;
  /** Keeps an authentication trigger's event, leased to this instance: its id. */
  keepAuth(appId: string, trigger: string, event: Document): Promise<string>;
  /** The events have been run by every trigger (or could not be): removed. */
  done(ids: string[]): Promise<void>;
  /** This instance still holds these events (waiting or running): their leases go on. */
  renew(ids: string[]): Promise<void>;
  /** Events whose instance stopped renewing their leases: now this instance's, oldest first. */
  claim(): Promise<KeptEvent[]>;
}

// ---------------------------------------------------------------------------------------------
// Mail

export interface MailFilter {
  to?: string | undefined;
  appId?: string | undefined;
  account?: string | undefined;
  source?: MailSource | undefined;
  kind?: string | undefined;
  /** An ISO time or a message id: only later messages match. */
  since?: string | undefined;
  /** Text in the subject, the recipients or the text body (case-insensitive). */
  search?: string | undefined;
}

export type NewMail = Omit<MailMessage, "id" | "links" | "createdAt" | "token" | "tokenId" | "attachments"> & {
  createdAtMs: number;
  attachments?: MailMessage["attachments"];
  /**
   * The id of the confirmation or reset token the message carries: it is kept only while that
   * token is (an app reset clears both; a message kept after it would be of a reset app).
   */
  forToken?: string;
};

export interface MailStore {
  /**
   * Keeps a message (queued for SMTP delivery when `deliver` is set). Undefined when its app, its
   * EmailJS account or its token is gone (deleted, or the app reset, while the request that sends
   * it ran): nothing is kept, so no message outlives the deletion or reset that clears its mail.
   */
  add(mail: NewMail, deliver: boolean): Promise<MailMessage | undefined>;
  get(id: string): Promise<MailMessage | undefined>;
  /** The matching messages, oldest first; with `limit`, the newest `limit` of them. */
  list(filter?: MailFilter, limit?: number): Promise<MailMessage[]>;
  count(filter: MailFilter): Promise<number>;
  /** The matching messages now, or else the first to arrive (from any instance) within `ms`. */
  wait(filter: MailFilter, ms: number, signal?: AbortSignal): Promise<MailMessage[]>;
  /** Answers every held wait now (on shutdown). */
  releaseWaits(): void;
  readonly pendingWaits: number;
  clear(filter?: Pick<MailFilter, "appId" | "account">): Promise<void>;
  /**
   * Messages waiting for SMTP delivery whose next attempt is due, oldest first, claimed for
   * `leaseMs`: no other instance gets them in that time (their next attempt moves to its end).
   */
  dueForDelivery(now: number, limit: number, leaseMs: number): Promise<MailMessage[]>;
  /** How many messages wait for SMTP delivery (the outbox's depth). */
  queuedCount(): Promise<number>;
  /** The earliest next attempt of a queued message (ms), or null when none waits. */
  nextDeliveryAt(): Promise<number | null>;
  setDelivery(id: string, delivery: MailDelivery): Promise<void>;
  /** New messages from any instance (this one included). */
  onAdd(listener: (message: MailMessage) => void): () => void;
  /** Deletes one message (and its pending delivery); false when there is none with this id. */
  remove(id: string): Promise<boolean>;
}

// ---------------------------------------------------------------------------------------------
// EmailJS accounts

export interface EmailJsAccountRecords {
  get(publicKey: string): Promise<EmailJsAccountRecord | undefined>;
  list(): Promise<EmailJsAccountRecord[]>;
  /** False when the public key exists. */
  create(record: EmailJsAccountRecord): Promise<boolean>;
  delete(publicKey: string): Promise<boolean>;
  onChange(listener: (publicKey: string) => void): () => void;
}

// ---------------------------------------------------------------------------------------------

/** Counters of the abuse limits shared by every instance of a store (fixed windows per key). */
export interface RateLimitCounters {
  /**
   * Counts one hit of `key`: the hits in its current window so far, and the window's time left.
   * `now` (ms) is the caller's clock where windows go by the emulator's clock (the harness's, which
   * tests move); without it, the counters' own (the database's). A window the clock has been put
   * back more than its length behind is over too. `max`, the key's limit, lets a store answer a key
   * past it without counting (its window ends no sooner for more hits).
   */
  hit(key: string, windowMs: number, now?: number, max?: number): Promise<{ hits: number; ttlMs: number }>;
  /**
   * The time left (ms) of the key's window when it is known past `max` without asking (no
   * statement), else undefined: counted elsewhere, it may be past it all the same.
   */
  refused?(key: string, max: number, now?: number): number | undefined;
  /**
   * Forgets the windows of a scope's keys (`<kind>|<scope>|…`: an app's id, an EmailJS account's
   * public key): the app was reset or deleted, the account deleted.
   */
  forgetScope(scope: string): Promise<void>;
}

/**
 * Places of open change streams shared by every instance of a store, so that the per-user and
 * per-app caps hold for the service rather than for each instance.
 */
export interface StreamPlaces {
  /**
   * Takes a place for one more stream of the user, from a client address, if every cap allows it,
   * counting every instance's open streams: its id, or the cap it would pass.
   */
  take(
    appId: string,
    userId: string,
    address: string,
    caps: { perUser: number; perApp: number; perAddress: number },
  ): Promise<{ id: string } | { cap: "user" | "app" | "address" }>;
  /** Gives a place back (its stream ended). */
  give(id: string): void;
}

/**
 * Removal of what only grows, in batches: each call one statement that removes at most `batch`
 * rows and answers how many it removed (fewer than `batch`: none are left). Rows another
 * instance's sweep holds are skipped, for its sweep or the next one.
 */
export interface RetentionSweeps {
  /** Messages whose delivery ended (or that were only captured) before `before`; never a queued one. */
  mail(before: number, batch: number): Promise<number>;
  /** Confirmation and reset tokens that expired before `before`. */
  tokens(before: number, batch: number): Promise<number>;
  /** Sessions past their lifetime at `now`, each user's count of sessions kept. */
  sessions(now: number, batch: number): Promise<number>;
  /**
   * Anonymous users created before `createdBefore` (their lifetime ended), each removed as a
   * deletion removes a user: its identities, sessions and API keys, its sessions' ends announced.
   */
  anonymousUsers(createdBefore: number, batch: number): Promise<number>;
}

export interface Store {
  readonly kind: "memory" | "postgres";
  readonly apps: AppRecords;
  readonly mail: MailStore;
  readonly emailjs: EmailJsAccountRecords;
  /** The abuse limits' counters where instances share the store; absent, each process counts its own. */
  readonly rateLimits?: RateLimitCounters;
  /** Database trigger events kept with their writes, where instances share the store. */
  readonly triggerEvents?: TriggerEventStore;
  /** Open change streams counted where instances share the store; absent, each process counts its own. */
  readonly streamPlaces?: StreamPlaces;
  /** The sweeps of ended mail, expired tokens and sessions, where the store keeps them without end. */
  readonly retention?: RetentionSweeps;
  /** Everything, for the control API's export. */
  exportState(): Promise<StoredState>;
  /** Everything, read as it is written out (`StateReading`). */
  readState(): Promise<StateReading>;
  /** Replaces everything in one step (checked by the caller first). */
  importState(state: State): Promise<void>;
  /**
   * Runs when other instances' changes may have been missed (the database connection was lost);
   * stores that have no other instances never call it.
   */
  onOutage?(listener: (reason: string) => void): () => void;
  /**
   * Why the store cannot serve now (its database cannot be reached), or null; stores that cannot
   * fail have none. Asking may start reconnecting at once.
   */
  health?(): Promise<string | null>;
  /** The connection pool's use, where the store has one. */
  connections?(): { total: number; idle: number; waiting: number; max: number };
  close(): Promise<void>;
}
