/**
 * The in-memory store: the harness default. One process, nothing on disk (`--data-dir` saves
 * snapshots of it, runtime/persistence.ts), every operation decided synchronously inside the call,
 * so the promises it answers are only the interface's shape.
 */
import { isDeepStrictEqual } from "node:util";
import { type AppLimits, appLimits } from "../../config/app-config.ts";
import { type Document, toEJSON } from "../../data/documents.ts";
import { importedDocument, ownersByPlace, StateImportError, savedSuspensions, stateApps } from "../state-import.ts";
import type {
  AppChange,
  AppRecord,
  AppRecords,
  AppStore,
  EmailJsAccountRecord,
  EmailJsAccountRecords,
  EndedSessions,
  MailMessage,
  RegistrationSession,
  ScheduleClaim,
  State,
  StateReading,
  Store,
  StoredSession,
  StoredState,
  TriggerSuspension,
  UserAndSession,
} from "../store.ts";
import { readingOf } from "../store.ts";
import { MemoryApiKeys } from "./api-keys.ts";
import { MemoryAuthTokens } from "./auth-tokens.ts";
import { type Collection, MemoryDocuments, type OwnerList } from "./documents.ts";
import { MemoryMail } from "./mail.ts";
import { MemorySessions } from "./sessions.ts";
import { MemoryUsers } from "./users.ts";

export class MemoryAppStore implements AppStore {
  /** The app's limits (from its record's config, which an upsert may replace); none until it is added. */
  limits: () => AppLimits | null = () => null;
  readonly users = new MemoryUsers(() => this.limits()?.users ?? Number.POSITIVE_INFINITY);
  readonly sessions = new MemorySessions(() => this.limits()?.sessionsPerUser ?? Number.POSITIVE_INFINITY);
  readonly apiKeys = new MemoryApiKeys(this.sessions, (id) => this.users.getNow(id) !== undefined);
  readonly authTokens = new MemoryAuthTokens(undefined, (token) =>
    this.users.hasAccountNow(token.email, token.accountId),
  );
  readonly data = new MemoryDocuments(() => this.limits());

  async deleteUser(userId: string): Promise<boolean> {
    return this.deleteUserNow(userId);
  }

  private deleteUserNow(userId: string): boolean {
    const user = this.users.removeUser(userId);
    if (!user) return false;
    this.sessions.removeForUserNow(userId);
    this.apiKeys.removeForUserNow(userId);
    return true;
  }

  async removeEndedUsers(now: number): Promise<string[]> {
    const ended = this.users.endedNow(now);
    for (const id of ended) this.deleteUserNow(id);
    return ended;
  }

  async startSession(
    session: StoredSession,
    lastLoginAt: number,
  ): Promise<{ customData?: Document | null } | undefined> {
    const user = this.users.getNow(session.userId);
    if (!user || user.disabled) return undefined;
    if (session.apiKeyId !== undefined) {
      const key = this.apiKeys.getNow(session.apiKeyId);
      if (!key || key.disabled || key.userId !== user.id) return undefined;
    }
    await this.sessions.add(session);
    await this.users.update(session.userId, { lastLoginAt });
    // (The custom data is not read here: the data answers it at once.)
    return {};
  }

  async startRegistrationSession(
    accountId: string,
    passwordHash: string,
    session: StoredSession,
    lastLoginAt: number,
  ): Promise<RegistrationSession | undefined> {
    const found = await this.users.accountAndOwner(accountId);
    if (!found) return undefined;
    const { account, owner } = found;
    if (!account.confirmed || account.passwordHash !== passwordHash || owner?.id !== session.userId || owner.disabled)
      return { started: false, account, owner };
    if (!(await this.startSession(session, lastLoginAt))) return { started: false, account, owner };
    return { started: true, account, owner };
  }

  async userSession(userId: string, sessionId: string): Promise<UserAndSession> {
    return this.userSessionNow(userId, sessionId);
  }

  userSessionNow(userId: string, sessionId: string): UserAndSession {
    const user = this.users.getNow(userId);
    const session = user ? this.sessions.getNow(sessionId) : undefined;
    return { user, session: session?.userId === userId ? session : undefined };
  }

  async counts() {
    return { users: this.users.userCount, pendingUsers: this.users.pendingCount };
  }

  clear(): void {
    this.data.clear();
    this.users.clear();
    this.sessions.clear();
    this.apiKeys.clear();
    this.authTokens.clear();
    this.scheduled.clear();
  }

  /** Tells every listener of the app's records that its triggers' suspensions changed (set by MemoryApps). */
  triggersChanged: () => void = () => undefined;

  async triggerSuspensions(): Promise<TriggerSuspension[]> {
    return [...this.data.suspensions.values()];
  }

  async resumeTrigger(name: string): Promise<boolean> {
    if (!this.data.suspensions.delete(name)) return false;
    this.triggersChanged();
    return true;
  }

  /** Each scheduled trigger's last claimed time (one process: no one to race). */
  private readonly scheduled = new Map<string, number>();

  async claimScheduledTime(trigger: string, time: number, putBackBefore: number): Promise<ScheduleClaim> {
    const previous = this.scheduled.get(trigger);
    if (previous !== undefined && previous >= time && previous <= putBackBefore) return { claimed: false, previous };
    this.scheduled.set(trigger, time);
    // (A mark the clock was put back behind: the schedule starts again here.)
    return previous === undefined || previous > putBackBefore ? { claimed: true } : { claimed: true, previous };
  }
}

/** Whether an upsert gives an app the settings it has (compared as JSON, as a database keeps them). */
const asJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value));
const sameSettings = (stored: AppRecord, given: AppRecord) =>
  stored.appDir === given.appDir && isDeepStrictEqual(asJson(stored.config), asJson(given.config));

export interface MemorySnapshot {
  apps: {
    saved: Omit<StoredState["apps"][number], "collections">;
    /** `source` and `version` name the collection's content (the same pair: the same documents). */
    collections: {
      database: string;
      collection: string;
      source: Collection;
      version: number;
      documents: Document[];
      /** Whom the documents count for (docs/decisions/0018-fair-shares.md). */
      owners: OwnerList;
    }[];
  }[];
  emailjsAccounts: EmailJsAccountRecord[];
  mail: MailMessage[];
}

interface MemoryApp {
  record: AppRecord;
  store: MemoryAppStore;
}

class MemoryApps implements AppRecords {
  readonly byId = new Map<string, MemoryApp>();
  private readonly byDomain = new Map<string, MemoryApp>();
  private readonly listeners = new Set<(appId: string, change: AppChange) => void>();
  private readonly sessionListeners = new Set<(appId: string, ended: EndedSessions) => void>();

  constructor(private readonly mail: MemoryMail) {}

  async get(appId: string) {
    return this.byId.get(appId)?.record;
  }

  async byDomainId(domainId: string) {
    return this.byDomain.get(domainId)?.record;
  }

  async list() {
    return [...this.byId.values()].map((a) => a.record);
  }

  add(record: AppRecord, store = new MemoryAppStore()): MemoryApp {
    const app = { record, store };
    store.sessions.announce = (ended) => {
      for (const listener of this.sessionListeners) listener(record.appId, ended);
    };
    store.limits = () => appLimits(app.record.config);
    store.triggersChanged = () => this.changed(record.appId, "triggers");
    this.byId.set(record.appId, app);
    this.byDomain.set(record.domainId, app);
    return app;
  }

  async create(record: AppRecord) {
    if (this.byId.has(record.appId)) return false;
    this.add(record);
    this.changed(record.appId, "created");
    return true;
  }

  async upsert(record: AppRecord, options: { keepCustomTokenKey?: boolean } = {}) {
    const existing = this.byId.get(record.appId);
    if (!existing) {
      this.add(record);
      this.changed(record.appId, "created");
      return "created" as const;
    }
    const kept = existing.record.config.providers?.["custom-token"]?.signingKey;
    const customToken = record.config.providers?.["custom-token"];
    if (options.keepCustomTokenKey && kept && customToken) customToken.signingKey = kept;
    // New settings resume the app's suspended triggers (as a new deployment did on App Services);
    // the same ones again (a start given them) are no new deployment.
    if (!sameSettings(existing.record, record)) existing.store.data.suspensions.clear();
    existing.record = { ...record, createdAt: existing.record.createdAt };
    this.changed(record.appId, "updated");
    return "updated" as const;
  }

  async delete(appId: string) {
    const app = this.byId.get(appId);
    if (!app) return false;
    this.byId.delete(appId);
    this.byDomain.delete(app.record.domainId);
    this.mail.clearNow({ appId });
    this.changed(appId, "deleted");
    return true;
  }

  async reset(appId: string) {
    const app = this.byId.get(appId);
    if (!app) return false;
    app.store.clear();
    this.mail.clearNow({ appId });
    this.changed(appId, "reset");
    return true;
  }

  scope(appId: string): AppStore {
    const app = this.byId.get(appId);
    if (!app) throw new Error(`no app with id '${appId}'`);
    return app.store;
  }

  onChange(listener: (appId: string, change: AppChange) => void) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  changed(appId: string, change: AppChange): void {
    for (const listener of this.listeners) listener(appId, change);
  }

  onSessionsEnded(listener: (appId: string, ended: EndedSessions) => void) {
    this.sessionListeners.add(listener);
    return () => this.sessionListeners.delete(listener);
  }

  clear(): void {
    this.byId.clear();
    this.byDomain.clear();
  }
}

class MemoryEmailJsAccounts implements EmailJsAccountRecords {
  readonly accounts = new Map<string, EmailJsAccountRecord>();
  private readonly listeners = new Set<(publicKey: string) => void>();

  async get(publicKey: string) {
    return this.accounts.get(publicKey);
  }

  async list() {
    return [...this.accounts.values()];
  }

  async create(record: EmailJsAccountRecord) {
    if (this.accounts.has(record.publicKey)) return false;
    this.accounts.set(record.publicKey, record);
    this.changed(record.publicKey);
    return true;
  }

  async delete(publicKey: string) {
    const deleted = this.accounts.delete(publicKey);
    if (deleted) this.changed(publicKey);
    return deleted;
  }

  onChange(listener: (publicKey: string) => void) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  changed(publicKey: string): void {
    for (const listener of this.listeners) listener(publicKey);
  }
}

export class MemoryStore implements Store {
  readonly kind = "memory" as const;
  readonly mail = new MemoryMail();
  readonly apps = new MemoryApps(this.mail);
  readonly emailjs = new MemoryEmailJsAccounts();

  constructor() {
    this.mail.owned = (mail) => {
      const app = mail.appId === undefined ? undefined : this.apps.byId.get(mail.appId);
      return (
        (mail.appId === undefined || app !== undefined) &&
        (mail.forToken === undefined || app?.store.authTokens.hasNow(mail.forToken) === true) &&
        (mail.account === undefined || this.emailjs.accounts.has(mail.account))
      );
    };
  }

  /**
   * Everything at one moment, taken synchronously: records are copied; documents are shared, not
   * copied (a stored document is never changed in place: every write stores a new copy), so the
   * snapshot stays as it was while the store goes on changing. `--data-dir` saves serialize it in
   * slices (runtime/persistence.ts).
   */
  snapshot(): MemorySnapshot {
    return {
      apps: [...this.apps.byId.values()].map(({ record, store }) => ({
        saved: {
          appId: record.appId,
          domainId: record.domainId,
          createdAt: new Date(record.createdAt).toISOString(),
          appDir: record.appDir,
          config: structuredClone(record.config),
          users: store.users.listNow().map((u) => structuredClone(u)),
          userpassAccounts: store.users.accountsNow().map((a) => structuredClone(a)),
          sessions: store.sessions.allNow().map((s) => structuredClone(s)),
          apiKeys: store.apiKeys.allNow().map((k) => structuredClone(k)),
          authTokens: store.authTokens.listNow({}).map((t) => structuredClone(t)),
          ...savedSuspensions([...store.data.suspensions.values()]),
        },
        collections: store.data.list().map((c) => ({
          database: c.database,
          collection: c.name,
          source: c,
          version: c.version,
          documents: c.values(),
          owners: c.ownerList(),
        })),
      })),
      emailjsAccounts: [...this.emailjs.accounts.values()].map((a) => structuredClone(a)),
      mail: this.mail.exportMessages(),
    };
  }

  /** A snapshot once no large write is half applied (taken at once when none is). */
  async wholeSnapshot(): Promise<MemorySnapshot> {
    for (;;) {
      const pending = [...this.apps.byId.values()].flatMap(({ store }) => store.data.unsettled ?? []);
      if (pending.length === 0) return this.snapshot();
      await Promise.all(pending);
    }
  }

  async exportState(): Promise<StoredState> {
    const snapshot = await this.wholeSnapshot();
    return {
      apps: snapshot.apps.map(({ saved, collections }) => ({
        ...saved,
        collections: collections.map((c) => ({
          database: c.database,
          collection: c.collection,
          documents: c.documents.map((d) => toEJSON(d) as Document),
          ...(c.owners.length > 0 ? { owners: structuredClone(c.owners) } : {}),
        })),
      })),
      emailjsAccounts: snapshot.emailjsAccounts,
      mail: snapshot.mail,
    };
  }

  /** The export, whole (`readingOf`): the saves and the export route render the snapshot instead. */
  async readState(): Promise<StateReading> {
    return readingOf(await this.exportState());
  }

  async importState(state: State): Promise<void> {
    // Everything is built aside and checked first; only then swapped in, so a bad import changes nothing.
    const built = stateApps(state).map(({ saved, record, suspensions }) => {
      const store = new MemoryAppStore();
      for (const suspension of suspensions) store.data.suspensions.set(suspension.name, suspension);
      for (const user of saved.users) store.users.restoreUser(structuredClone(user));
      for (const account of saved.userpassAccounts) store.users.addAccountNow(structuredClone(account));
      for (const session of saved.sessions) store.sessions.addNow(structuredClone(session));
      for (const key of saved.apiKeys) store.apiKeys.restore(structuredClone(key));
      for (const token of saved.authTokens) store.authTokens.keep(structuredClone(token));
      for (const { database, collection, documents, owners } of saved.collections) {
        const target = store.data.collection(database, collection);
        const ownerAt = ownersByPlace(owners, documents.length, `${database}.${collection}`);
        for (const [place, doc] of documents.entries()) {
          const decoded = importedDocument(doc, `${database}.${collection}`);
          if (!target.insert(decoded, undefined, ownerAt[place]))
            throw new StateImportError(`duplicate _id in ${database}.${collection}`);
        }
      }
      return { record, store };
    });
    const previous = [...this.apps.byId.keys()];
    this.apps.clear();
    for (const { record, store } of built) this.apps.add(record, store);
    for (const appId of previous) this.apps.changed(appId, "deleted");
    for (const { record } of built) this.apps.changed(record.appId, "created");
    const accounts = [...this.emailjs.accounts.keys()];
    this.emailjs.accounts.clear();
    for (const account of state.emailjsAccounts) {
      const { clockOffsetMs: _clock, ...record } = structuredClone(account);
      this.emailjs.accounts.set(record.publicKey, record);
    }
    for (const key of new Set([...accounts, ...this.emailjs.accounts.keys()])) this.emailjs.changed(key);
    this.mail.importMessages(state.mail);
  }

  async close(): Promise<void> {}
}
