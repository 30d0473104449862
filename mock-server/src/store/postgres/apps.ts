/**
 * Apps and EmailJS accounts in PostgreSQL. Every change is announced to the other instances (which
 * drop what they cached of the app or account) and to this one at once.
 */
import { appLimits } from "../../config/app-config.ts";
import { defaultSweeps } from "../../config/retention.ts";
import { type Document, fromStoredText } from "../../data/documents.ts";
import type {
  AppChange,
  AppRecord,
  AppRecords,
  AppStore,
  CustomDataPlace,
  EmailJsAccountRecord,
  EmailJsAccountRecords,
  EndedSessions,
  FoundCustomData,
  IdentityClaim,
  RegistrationSession,
  ScheduleClaim,
  StoredSession,
  StoredUser,
  StoredUserpassAccount,
  TriggerSuspension,
  UserAndSession,
} from "../store.ts";
import { anonymousUserLifetimeMs, OversizedCustomData } from "../store.ts";
import { PgApiKeys } from "./api-keys.ts";
import { PgAuthTokens } from "./auth-tokens.ts";
import type { PgContext } from "./context.ts";
import { lockAppStatement, type Queryable, rowsOf } from "./database.ts";
import { type ChangeHub, PgDocuments } from "./documents.ts";
import { IdDirectory } from "./id-directory.ts";
import { channels } from "./notifications.ts";
import { removeAnonymousUsers } from "./retention.ts";
import { PgSessions, SessionEnds, type StartedRow } from "./sessions.ts";
import { jsonFromDatabase } from "./text-encoding.ts";
import { listenToUsers, PgUsers, userPayload, usersChanged } from "./users.ts";

interface AppRow {
  app_id: string;
  domain_id: string;
  created_at: number;
  app_dir: string | null;
  config: AppRecord["config"];
}

/** The first key of the advisory locks upserts of one app take (the second is the hash of its id). */
const appUpsertLock = 0x61707073; // "apps"

const appColumns = "app_id, domain_id, created_at, app_dir, config";

/** The custom data document a login's statement read (null: none; too large for a token: unread). */
const customDataOf = (row: StartedRow): FoundCustomData => {
  if (row.custom != null) return fromStoredText(jsonFromDatabase(row.custom)).value as Document;
  return row.custom_bytes == null ? null : new OversizedCustomData(row.custom_bytes);
};
const toRecord = (row: AppRow): AppRecord => ({
  appId: row.app_id,
  domainId: row.domain_id,
  createdAt: row.created_at,
  appDir: row.app_dir,
  config: row.config,
});

/** JSON with every object's keys sorted (jsonb does not keep their order). */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner !== null && typeof inner === "object" && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)))
      : inner,
  );
}

/** Freezes a record read from the database, to share it among requests (no caller changes records). */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/**
 * The tables that hold an app's records (emptied by a reset, in this order: users before sessions,
 * the order every statement that ends sessions locks them in, sessions.ts).
 */
const appTables = [
  "users",
  "sessions",
  "api_keys",
  "auth_tokens",
  "identities",
  "userpass_accounts",
  "collections",
  "scheduled_triggers",
  "trigger_events",
  "trigger_suspensions",
];

export class PgAppStore implements AppStore {
  readonly users: PgUsers;
  readonly sessions: PgSessions;
  readonly apiKeys: PgApiKeys;
  readonly authTokens: PgAuthTokens;
  readonly data: PgDocuments;

  constructor(
    private readonly context: PgContext,
    private readonly appId: string,
    changes: ChangeHub,
    private readonly ends: SessionEnds,
    /** Tells this instance's listeners of the app's records (PgApps.changed). */
    private readonly tell: (change: AppChange) => void = () => undefined,
  ) {
    this.users = new PgUsers(context, appId);
    this.sessions = new PgSessions(context.db, appId, ends, context.auth);
    this.apiKeys = new PgApiKeys(context.db, appId, ends);
    this.authTokens = new PgAuthTokens(context.db, appId);
    this.data = new PgDocuments(context, appId, changes);
  }

  /**
   * One statement: the mark moves only forward (or back from where the clock was put back behind),
   * under the row's lock, so of instances claiming one time at once exactly one is told it claimed
   * it (the others then see the mark already there).
   */
  async claimScheduledTime(trigger: string, time: number, putBackBefore: number): Promise<ScheduleClaim> {
    const [row] = await this.context.db.rows<{ previous: string | null }>(
      `INSERT INTO scheduled_triggers AS t (app_id, name, last_at) VALUES ($1, $2, $3)
       ON CONFLICT (app_id, name) DO UPDATE SET last_at = excluded.last_at, previous_at = t.last_at
         WHERE t.last_at < excluded.last_at OR t.last_at > $4
       RETURNING CASE WHEN previous_at <= $4 THEN previous_at END AS previous`,
      [this.appId, trigger, time, Math.min(putBackBefore, Number.MAX_SAFE_INTEGER)],
    );
    if (!row) return { claimed: false };
    return row.previous === null ? { claimed: true } : { claimed: true, previous: Number(row.previous) };
  }

  async triggerSuspensions(q: Queryable = this.context.db): Promise<TriggerSuspension[]> {
    const rows = await rowsOf<{ name: string; since: string; reason: string }>(
      q,
      "SELECT name, since, reason FROM trigger_suspensions WHERE app_id = $1 ORDER BY since, name",
      [this.appId],
    );
    return rows.map((row) => ({ name: row.name, since: Number(row.since), reason: row.reason }));
  }

  /** Removed and announced in one statement: the other instances hear of it when it commits. */
  async resumeTrigger(name: string): Promise<boolean> {
    const [row] = await this.context.db.rows<{ name: string }>(
      `WITH resumed AS (DELETE FROM trigger_suspensions WHERE app_id = $1 AND name = $2 RETURNING name)
       SELECT name, pg_notify($3, $4) FROM resumed`,
      [this.appId, name, channels.apps, JSON.stringify({ i: this.context.instanceId, a: this.appId, c: "triggers" })],
    );
    if (!row) return false;
    this.tell("triggers");
    return true;
  }

  /**
   * The user with its registration, identities (ON DELETE CASCADE), sessions and API keys, and the
   * ends announced: one transaction sent whole (BEGIN to COMMIT) in one round trip. The user goes
   * before its sessions: the order every statement that ends sessions locks them in (sessions.ts).
   * A statement that fails makes the COMMIT a rollback, and is thrown.
   */
  async deleteUser(userId: string): Promise<boolean> {
    const params = [this.appId, userId];
    const deletedAndAnnounced = (table: string, column: string, channel: string, payload: string) =>
      [
        `WITH deleted AS (DELETE FROM ${table} WHERE app_id = $1 AND ${column} = $2 RETURNING 1)
       SELECT count(*)::int AS n, (SELECT pg_notify($3, $4) WHERE EXISTS (SELECT 1 FROM deleted)) FROM deleted`,
        [...params, channel, payload],
      ] as [string, unknown[]];
    const answers = await this.context.db.pipeline([
      ["BEGIN", []],
      // The app's row first (KEY SHARE): the app's deletion, which locks the user's row before
      // its registration's, waits for this one, rather than both waiting for each other.
      [lockAppStatement, [this.appId]],
      [
        `DELETE FROM userpass_accounts WHERE app_id = $1 AND id IN (
           SELECT identity_id FROM identities WHERE app_id = $1 AND user_id = $2 AND provider_type = 'local-userpass')`,
        params,
      ],
      deletedAndAnnounced("users", "id", channels.users, userPayload(this.context, this.appId, userId)),
      deletedAndAnnounced(
        "sessions",
        "user_id",
        channels.sessions,
        JSON.stringify(this.ends.payload(this.appId, { userId })),
      ),
      ["DELETE FROM api_keys WHERE app_id = $1 AND user_id = $2", params],
      ["COMMIT", []],
    ]);
    const failed = answers.find((answer) => answer.error !== undefined);
    if (failed) throw failed.error;
    const count = (answer: (typeof answers)[number] | undefined) => (answer?.result?.rows[0]?.n as number) ?? 0;
    const outcome = { deleted: count(answers[3]) > 0, ended: count(answers[4]) > 0 };
    if (outcome.deleted) usersChanged(this.context, this.appId, userId);
    if (outcome.ended) this.ends.tell(this.appId, { userId });
    return outcome.deleted;
  }

  /**
   * The app's anonymous users past their lifetime at `now`, the app's clock (a moved clock: the
   * retention sweep goes by real time), removed as the sweep removes them: their ids.
   */
  async removeEndedUsers(now: number): Promise<string[]> {
    const removed: string[] = [];
    for (;;) {
      const batch = await removeAnonymousUsers(
        this.context,
        this.ends,
        now - anonymousUserLifetimeMs,
        defaultSweeps.batch,
        this.appId,
      );
      removed.push(...batch);
      if (batch.length < defaultSweeps.batch) return removed;
    }
  }

  async startSession(
    session: StoredSession,
    lastLoginAt: number,
    customData?: CustomDataPlace,
  ): Promise<{ customData?: FoundCustomData } | undefined> {
    const row = await this.sessions.start(session, lastLoginAt, customData ? { customData } : {});
    // (No session is added for a user that is not there: the statement adds it from the user's row.)
    if (row.added !== 1) return undefined;
    return customData ? { customData: customDataOf(row) } : {};
  }

  /** The user's statement and the session's in one round trip (`PgSessions.startAfter`). */
  async createAndStart(
    user: StoredUser,
    session: StoredSession,
    lastLoginAt: number,
    customData?: CustomDataPlace,
  ): Promise<{ claim: IdentityClaim; started?: { customData?: FoundCustomData } }> {
    const { before, row, error } = await this.sessions.startAfter(
      this.users.createStatement(user),
      session,
      lastLoginAt,
      customData ? { customData } : {},
    );
    const claim = await this.users.createdBy(user, before!);
    // A user the statement did not make had no session started either; a session that failed (or
    // whose flush did) is the caller's to start again, once the user made is told as created.
    if (!claim.ok || error !== undefined || row?.added !== 1) return { claim };
    return { claim, started: customData ? { customData: customDataOf(row) } : {} };
  }

  async startRegistrationSession(
    accountId: string,
    passwordHash: string,
    session: StoredSession,
    lastLoginAt: number,
    customData?: CustomDataPlace,
  ): Promise<RegistrationSession | undefined> {
    const row = await this.sessions.start(session, lastLoginAt, {
      account: { id: accountId, passwordHash },
      ...(customData ? { customData } : {}),
    });
    if (row.id == null) return undefined;
    const account: StoredUserpassAccount = {
      id: row.id,
      email: row.email!,
      passwordHash: row.password_hash!,
      confirmed: row.confirmed!,
      userId: row.user_id ?? null,
      createdAt: row.created_at!,
    };
    const owner = row.owner_id != null && row.owner_doc != null ? { id: row.owner_id, ...row.owner_doc } : undefined;
    if (row.added !== 1 || !owner) return { started: false, account, owner };
    if (!customData) return { started: true, account, owner };
    return { started: true, account, owner, customData: customDataOf(row) };
  }

  /**
   * Every access-token request asks: answered from what this instance keeps when it may
   * (auth-cache.ts), else by one joined read, whose answer is kept (frozen: handed to every request).
   */
  /** What this instance keeps of the pair, when it may answer from it (no promise: the hot path). */
  userSessionNow(userId: string, sessionId: string): UserAndSession | undefined {
    const auth = this.context.auth;
    return (
      auth.userSession(this.appId, userId, sessionId) ?? auth.goneAnswer(this.appId, userId, sessionId) ?? undefined
    );
  }

  async userSession(userId: string, sessionId: string): Promise<UserAndSession> {
    const auth = this.context.auth;
    const kept = auth.userSession(this.appId, userId, sessionId) ?? auth.goneAnswer(this.appId, userId, sessionId);
    if (kept) return kept;
    const ticket = auth.ticket();
    let row: { doc: Omit<StoredUser, "id">; session: StoredSession | null } | undefined;
    try {
      [row] = await this.context.db.rows<{ doc: Omit<StoredUser, "id">; session: StoredSession | null }>(
        `SELECT u.doc, s.doc AS session FROM users u
           LEFT JOIN sessions s ON s.app_id = u.app_id AND s.id = $3 AND s.user_id = u.id
          WHERE u.app_id = $1 AND u.id = $2`,
        [this.appId, userId, sessionId],
      );
    } catch (error) {
      auth.drop(ticket);
      throw error;
    }
    // What the database says is gone is not answered from here again, even when this instance
    // missed its notification and the window lets it answer from what it keeps.
    if (!row) {
      auth.foundGone(ticket, this.appId, "user", userId);
      auth.drop(ticket);
      auth.forgetSessions(this.appId, userId, sessionId);
      return { user: undefined, session: undefined };
    }
    const user = deepFreeze({ id: userId, ...row.doc } as StoredUser);
    const session = row.session ? deepFreeze(row.session) : undefined;
    if (!session) {
      auth.foundGone(ticket, this.appId, "session", sessionId);
      auth.forgetSessions(this.appId, userId, sessionId);
    }
    auth.keep(ticket, this.appId, user, session);
    return { user, session };
  }

  async counts() {
    const [row] = await this.context.db.rows<{ users: number; pending: number }>(
      `SELECT (SELECT count(*)::int FROM users WHERE app_id = $1) AS users,
              (SELECT count(*)::int FROM userpass_accounts WHERE app_id = $1 AND NOT confirmed) AS pending`,
      [this.appId],
    );
    return { users: row?.users ?? 0, pendingUsers: row?.pending ?? 0 };
  }
}

export class PgApps implements AppRecords {
  private readonly listeners = new Set<(appId: string, change: AppChange) => void>();
  /** Ended sessions, announced to every instance (the retention sweeps end sessions too). */
  readonly ends: SessionEnds;

  constructor(
    private readonly context: PgContext,
    private readonly changes: ChangeHub,
  ) {
    this.ends = new SessionEnds(context);
    this.directory = new IdDirectory(context, async (limit) =>
      (await context.db.rows<{ app_id: string }>("SELECT app_id FROM apps LIMIT $1", [limit])).map((r) => r.app_id),
    );
    listenToUsers(context);
    context.onRestored(() => {
      this.revalidate().catch(() => undefined);
    });
    context.subscribe(channels.apps, (payload) => {
      const { i, a, c } = JSON.parse(payload) as { i: string; a: string; c: AppChange };
      if (i !== context.instanceId) this.changed(a, c);
    });
  }

  async get(appId: string): Promise<AppRecord | undefined> {
    if (await this.directory.absent(appId)) return undefined;
    const [row] = await this.context.db.rows<AppRow>(`SELECT ${appColumns} FROM apps WHERE app_id = $1`, [appId]);
    return row ? this.known(toRecord(row)) : undefined;
  }

  /** The ids of every app: a request naming one that does not exist asks the database nothing. */
  readonly directory: IdDirectory;

  async byDomainId(domainId: string): Promise<AppRecord | undefined> {
    const [row] = await this.context.db.rows<AppRow>(`SELECT ${appColumns} FROM apps WHERE domain_id = $1`, [domainId]);
    return row ? this.known(toRecord(row)) : undefined;
  }

  async list(q: Queryable = this.context.db): Promise<AppRecord[]> {
    return (await rowsOf<AppRow>(q, `SELECT ${appColumns} FROM apps ORDER BY seq`)).map((row) =>
      this.known(toRecord(row)),
    );
  }

  /**
   * The records this instance has handed out (what its app registry may hold), as canonical JSON:
   * after an outage of the notifications, each is read again and a change made meanwhile is told
   * as one (`revalidate`).
   */
  private readonly handedOut = new Map<string, string>();

  private known(record: AppRecord): AppRecord {
    this.handedOut.set(record.appId, canonicalJson(record));
    return record;
  }

  /** After notifications were lost: tells this instance of the apps changed or deleted meanwhile. */
  private async revalidate(): Promise<void> {
    for (const [appId, before] of [...this.handedOut]) {
      const [row] = await this.context.db.rows<AppRow>(`SELECT ${appColumns} FROM apps WHERE app_id = $1`, [appId]);
      if (this.handedOut.get(appId) !== before) continue; // changed meanwhile, and told
      if (!row) this.changed(appId, "deleted");
      else if (canonicalJson(toRecord(row)) !== before) {
        this.known(toRecord(row));
        this.changed(appId, "updated");
      } else this.changed(appId, "triggers"); // (a trigger may have been suspended or resumed meanwhile)
    }
  }

  /** Stores an app's record (also for state imports). */
  static async insert(q: Queryable, record: AppRecord, onConflict = ""): Promise<number> {
    const { rowCount } = await q.query(
      `INSERT INTO apps (app_id, domain_id, created_at, app_dir, config) VALUES ($1, $2, $3, $4, $5) ${onConflict}`,
      [record.appId, record.domainId, record.createdAt, record.appDir, record.config],
    );
    if (rowCount === 1) await PgApps.writeLimits(q, record);
    return rowCount ?? 0;
  }

  /** The app's limits, where the usage triggers and the session trim read them (migrations 3 and 6). */
  static async writeLimits(q: Queryable, record: AppRecord): Promise<void> {
    const limits = appLimits(record.config);
    const values = [
      limits.users,
      limits.sessionsPerUser,
      limits.documents,
      limits.documentBytes,
      limits.anonymousDocuments,
      limits.anonymousDocumentBytes,
      limits.documentsPerUser,
      limits.documentBytesPerUser,
      limits.writesPerSecondPerUser,
      limits.documentsPerAnonymousUser,
      limits.documentBytesPerAnonymousUser,
      limits.writesPerSecondPerAnonymousUser,
      limits.collections,
    ];
    const columns = [
      "max_users",
      "max_sessions_per_user",
      "max_documents",
      "max_document_bytes",
      "max_anonymous_documents",
      "max_anonymous_document_bytes",
      "max_user_documents",
      "max_user_document_bytes",
      "max_user_writes_per_second",
      "max_anonymous_user_documents",
      "max_anonymous_user_document_bytes",
      "max_anonymous_user_writes_per_second",
      "max_collections",
    ];
    await q.query(
      `INSERT INTO app_usage (app_id, ${columns.join(", ")}) VALUES ($1, ${columns.map((_, i) => `$${i + 2}`).join(", ")})
       ON CONFLICT (app_id) DO UPDATE SET ${columns.map((c) => `${c} = excluded.${c}`).join(", ")}`,
      [record.appId, ...values],
    );
  }

  async create(record: AppRecord): Promise<boolean> {
    const created = await this.context.db.transaction(async (client) => {
      const n = await PgApps.insert(client, record, "ON CONFLICT DO NOTHING");
      if (n === 1) await this.announce(client, record.appId, "created");
      return n === 1;
    });
    if (created) {
      this.changed(record.appId, "created");
      this.known(record);
    }
    return created;
  }

  async upsert(record: AppRecord, options: { keepCustomTokenKey?: boolean } = {}): Promise<"created" | "updated"> {
    const outcome = await this.context.db.transaction(async (client) => {
      // Instances starting together upsert the same app. ON CONFLICT (app_id) covers only its own index:
      // two inserts passing its check at once would fail on domain_id's. Upserts of one app take turns.
      await client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [appUpsertLock, record.appId]);
      // A generated custom-token key is kept (every instance generates its own at start; the first stays).
      // (`before` reads the row as it was before the statement: whether the settings changed.)
      const { rows } = await client.query<{ inserted: boolean; changed: boolean }>(
        `WITH before AS (SELECT app_dir, config FROM apps WHERE app_id = $1),
         upserted AS (
           INSERT INTO apps (app_id, domain_id, created_at, app_dir, config) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (app_id) DO UPDATE SET app_dir = excluded.app_dir,
             config = CASE WHEN $6::boolean AND apps.config #> '{providers,custom-token,signingKey}' IS NOT NULL
                            AND excluded.config #> '{providers,custom-token}' IS NOT NULL
                       THEN jsonb_set(excluded.config, '{providers,custom-token,signingKey}',
                                      apps.config #> '{providers,custom-token,signingKey}')
                       ELSE excluded.config END
           RETURNING (xmax = 0) AS inserted, app_dir, config)
         SELECT u.inserted, (b.app_dir IS DISTINCT FROM u.app_dir OR b.config IS DISTINCT FROM u.config) AS changed
           FROM upserted u LEFT JOIN before b ON true`,
        [
          record.appId,
          record.domainId,
          record.createdAt,
          record.appDir,
          record.config,
          options.keepCustomTokenKey ?? false,
        ],
      );
      const change = rows[0]?.inserted ? ("created" as const) : ("updated" as const);
      // New settings resume the app's suspended triggers (as a new deployment did on App Services);
      // the same ones again (every instance's start gives them) are no new deployment.
      if (change === "updated" && rows[0]?.changed)
        await client.query("DELETE FROM trigger_suspensions WHERE app_id = $1", [record.appId]);
      await PgApps.writeLimits(client, record);
      await this.announce(client, record.appId, change);
      return change;
    });
    this.changed(record.appId, outcome);
    return outcome;
  }

  async delete(appId: string): Promise<boolean> {
    const deleted = await this.context.db.transaction(async (client) => {
      // Its records go with it (ON DELETE CASCADE); its documents with its collections.
      const { rowCount } = await client.query("DELETE FROM apps WHERE app_id = $1", [appId]);
      await client.query("DELETE FROM mail WHERE app_id = $1", [appId]);
      if (rowCount === 1) await this.announce(client, appId, "deleted");
      return rowCount === 1;
    });
    if (deleted) this.changed(appId, "deleted");
    return deleted;
  }

  async reset(appId: string): Promise<boolean> {
    const reset = await this.context.db.transaction(async (client) => {
      const { rowCount } = await client.query("SELECT 1 FROM apps WHERE app_id = $1 FOR UPDATE", [appId]);
      if (rowCount !== 1) return false;
      for (const table of appTables) await client.query(`DELETE FROM ${table} WHERE app_id = $1`, [appId]);
      await client.query("DELETE FROM mail WHERE app_id = $1", [appId]);
      await this.announce(client, appId, "reset");
      return true;
    });
    if (reset) this.changed(appId, "reset");
    return reset;
  }

  scope(appId: string): PgAppStore {
    return new PgAppStore(this.context, appId, this.changes, this.ends, (change) => this.changed(appId, change));
  }

  onChange(listener: (appId: string, change: AppChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onSessionsEnded(listener: (appId: string, ended: EndedSessions) => void): () => void {
    return this.ends.on(listener);
  }

  /** Tells the other instances, with the transaction. */
  async announce(q: Queryable, appId: string, change: AppChange): Promise<void> {
    await q.query("SELECT pg_notify($1, $2)", [
      channels.apps,
      JSON.stringify({ i: this.context.instanceId, a: appId, c: change }),
    ]);
  }

  /** Tells this instance (what it kept of the app's users and sessions goes first). */
  changed(appId: string, change: AppChange): void {
    // (A state import announces its apps as deleted: the ids are read again.)
    if (change === "created" || change === "updated") this.directory.added(appId);
    else if (change === "deleted") this.directory.drop();
    if (change === "reset" || change === "deleted") this.context.auth.forgetApp(appId);
    if (change === "created" || change === "updated" || change === "deleted") this.handedOut.delete(appId);
    for (const listener of this.listeners) listener(appId, change);
  }
}

export class PgEmailJsAccounts implements EmailJsAccountRecords {
  private readonly listeners = new Set<(publicKey: string) => void>();
  /** The public keys of every account: a request naming one that does not exist asks the database nothing. */
  readonly directory: IdDirectory;

  constructor(private readonly context: PgContext) {
    this.directory = new IdDirectory(context, async (limit) =>
      (await context.db.rows<{ public_key: string }>("SELECT public_key FROM emailjs_accounts LIMIT $1", [limit])).map(
        (r) => r.public_key,
      ),
    );
    context.subscribe(channels.emailjs, (payload) => {
      const { i, k, c } = JSON.parse(payload) as { i: string; k: string; c?: "created" };
      if (i !== context.instanceId) this.changed(k, c);
    });
  }

  async get(publicKey: string): Promise<EmailJsAccountRecord | undefined> {
    if (await this.directory.absent(publicKey)) return undefined;
    const [row] = await this.context.db.rows<{ doc: EmailJsAccountRecord }>(
      "SELECT doc FROM emailjs_accounts WHERE public_key = $1",
      [publicKey],
    );
    return row?.doc;
  }

  async list(q: Queryable = this.context.db): Promise<EmailJsAccountRecord[]> {
    return (await rowsOf<{ doc: EmailJsAccountRecord }>(q, "SELECT doc FROM emailjs_accounts ORDER BY seq")).map(
      (r) => r.doc,
    );
  }

  async create(record: EmailJsAccountRecord): Promise<boolean> {
    const created = await this.context.db.transaction(async (client) => {
      const { rowCount } = await client.query(
        "INSERT INTO emailjs_accounts (public_key, doc) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        [record.publicKey, record],
      );
      if (rowCount === 1) await this.announce(client, record.publicKey, "created");
      return rowCount === 1;
    });
    if (created) this.changed(record.publicKey, "created");
    return created;
  }

  async delete(publicKey: string): Promise<boolean> {
    const deleted = await this.context.db.transaction(async (client) => {
      const { rowCount } = await client.query("DELETE FROM emailjs_accounts WHERE public_key = $1", [publicKey]);
      if (rowCount === 1) await this.announce(client, publicKey);
      return rowCount === 1;
    });
    if (deleted) this.changed(publicKey);
    return deleted;
  }

  onChange(listener: (publicKey: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tells the other instances, with the transaction: an account created, or else changed or gone. */
  async announce(q: Queryable, publicKey: string, change?: "created"): Promise<void> {
    await q.query("SELECT pg_notify($1, $2)", [
      channels.emailjs,
      JSON.stringify({ i: this.context.instanceId, k: publicKey, ...(change ? { c: change } : {}) }),
    ]);
  }

  changed(publicKey: string, change?: "created"): void {
    // (A deletion, or a state import's accounts: the keys are read again.)
    if (change === "created") this.directory.added(publicKey);
    else this.directory.drop();
    for (const listener of this.listeners) listener(publicKey);
  }
}
