/**
 * The PostgreSQL store (`--database URL`): durable, shared by every instance on the database.
 * Opening it checks the database can be reached, brings the schema up to date (migrations.ts) and
 * starts listening for the other instances' notifications; each failure is one line naming the
 * problem. See docs/decisions/0008-postgresql-store.md.
 */
import pg from "pg";
import type { Document } from "../../data/documents.ts";
import { randomHex } from "../../state/ids.ts";
import { importedDocument, ownersByPlace, StateImportError, savedSuspensions, stateApps } from "../state-import.ts";
import type { AppState, MailMessage, State, StateReading, Store, StoredState } from "../store.ts";
import { PgApps, PgEmailJsAccounts } from "./apps.ts";
import { PgContext } from "./context.ts";
import { clientConfig, cursorRows, Database, type DatabaseOptions, describeUrl, reachError } from "./database.ts";
import { ChangeHub, keepSuspensions, storedDocument } from "./documents.ts";
import { PgMail } from "./mail.ts";
import { migrate } from "./migrations.ts";
import { NotificationListener, syncChannel } from "./notifications.ts";
import { PgRateLimits } from "./rate-limits.ts";
import { PgRetention } from "./retention.ts";
import { idRowKey, rowKey } from "./row-keys.ts";
import { PgStreamPlaces } from "./stream-places.ts";
import { PgTriggerEvents } from "./trigger-events.ts";

export class DatabaseStartError extends Error {}

/** How long readiness waits for the database's answer before it says the database cannot be reached. */
const healthPingMs = 1_000;

export class PostgresStore implements Store {
  readonly kind = "postgres" as const;
  readonly apps: PgApps;
  readonly mail: PgMail;
  readonly emailjs: PgEmailJsAccounts;
  readonly rateLimits: PgRateLimits;
  readonly streamPlaces: PgStreamPlaces;
  readonly retention: PgRetention;
  readonly triggerEvents: PgTriggerEvents;
  private readonly changes: ChangeHub;

  private constructor(
    private readonly context: PgContext,
    private readonly listener: NotificationListener,
  ) {
    this.changes = new ChangeHub(context);
    this.apps = new PgApps(context, this.changes);
    this.mail = new PgMail(context);
    this.emailjs = new PgEmailJsAccounts(context);
    this.rateLimits = new PgRateLimits(context);
    this.streamPlaces = new PgStreamPlaces(context.db);
    this.retention = new PgRetention(context, this.apps.ends);
    this.triggerEvents = new PgTriggerEvents(context);
  }

  get database(): Database {
    return this.context.db;
  }

  /** Resolves once every change committed (on any instance) before the call is known here. */
  caughtUp(): Promise<void> {
    return this.listener.caughtUp();
  }

  /** Notifications were lost (the database went away): open change streams must end. */
  onOutage(listener: (reason: string) => void): () => void {
    return this.context.onOutage(listener);
  }

  connections(): { total: number; idle: number; waiting: number; max: number } {
    const { pool, options } = this.context.db;
    return {
      total: pool.totalCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
      max: options.maxConnections ?? 20,
    };
  }

  async health(): Promise<string | null> {
    // Without notifications this instance would miss other instances' changes: not healthy, and
    // asked to reconnect now rather than at its backoff's next step.
    if (!this.context.listener.listening) {
      this.context.listener.wake();
      return "the database cannot be reached (the notifications connection is down; reconnecting)";
    }
    const problem = await this.context.db.ping(healthPingMs);
    return problem === null ? null : `the database cannot be reached: ${problem}`;
  }

  /**
   * Connects, migrates and listens. Throws DatabaseStartError with a one-line reason when the
   * database cannot be reached or its schema is newer than this server's.
   */
  static async open(options: DatabaseOptions): Promise<PostgresStore> {
    const where = describeUrl(options.url);
    const setup = new pg.Client(clientConfig(options));
    setup.on("error", () => undefined);
    try {
      await setup.connect();
    } catch (error) {
      throw new DatabaseStartError(`Cannot reach the database at ${where}: ${reachError(error)}`);
    }
    try {
      await migrate(setup);
    } catch (error) {
      throw new DatabaseStartError(`Cannot prepare the database at ${where}: ${(error as Error).message}`);
    } finally {
      await setup.end().catch(() => undefined);
    }
    const context = new PgContext(new Database(options), randomHex(8));
    const listener = new NotificationListener(
      options,
      {
        notification: (channel, payload) => context.dispatch(channel, payload),
        lost: (reason) => {
          // What this instance keeps may miss the changes it will not hear of: reads go to the database.
          context.auth.clear();
          context.outage(reason);
        },
        restored: () => {
          // Reads that began during the outage must not keep what they found (it may miss changes).
          context.auth.clear();
          context.restored();
        },
      },
      syncChannel(context.instanceId),
    );
    try {
      await listener.start();
    } catch (error) {
      await context.db.close();
      throw new DatabaseStartError(`Cannot listen for changes at ${where}: ${(error as Error).message}`);
    }
    context.listener = listener;
    return new PostgresStore(context, listener);
  }

  /** Everything at one moment, collected from `readState`. */
  async exportState(): Promise<StoredState> {
    const reading = await this.readState();
    try {
      const apps: StoredState["apps"] = [];
      for await (const { collections, ...app } of reading.apps) {
        const read: AppState["collections"] = [];
        for (const c of collections) {
          const documents: Document[] = [];
          for await (const text of c.documents) documents.push(JSON.parse(text) as Document);
          const owners = c.owners();
          read.push({
            database: c.database,
            collection: c.collection,
            documents,
            ...(owners.length > 0 ? { owners } : {}),
          });
        }
        apps.push({ ...app, collections: read });
      }
      const emailjsAccounts = await reading.emailjsAccounts();
      const mail: StoredState["mail"] = [];
      for await (const message of reading.mail) mail.push(message);
      return { apps, emailjsAccounts, mail };
    } finally {
      await reading.end();
    }
  }

  /**
   * Everything at one moment, read as it is written out: every table in one read-only transaction
   * at one snapshot, the documents and mail through cursors (`StateReading`).
   */
  async readState(): Promise<StateReading> {
    const tx = await this.context.db.beginSnapshot();
    const q = tx.client;
    const { apps, emailjs } = this;
    async function* appsRead(): StateReading["apps"] {
      for (const record of await apps.list(q)) {
        const scope = apps.scope(record.appId);
        const collections = (await scope.data.collections(q)).map((c) =>
          scope.data.reading(c.database, c.collection, q),
        );
        yield {
          appId: record.appId,
          domainId: record.domainId,
          createdAt: new Date(record.createdAt).toISOString(),
          appDir: record.appDir,
          config: record.config,
          users: await scope.users.list(q),
          userpassAccounts: await scope.users.accounts(q),
          sessions: await scope.sessions.all(q),
          apiKeys: await scope.apiKeys.all(q),
          authTokens: await scope.authTokens.list({}, q),
          ...savedSuspensions(await scope.triggerSuspensions(q)),
          collections,
        };
      }
    }
    async function* mailRead(): StateReading["mail"] {
      for await (const rows of cursorRows<{ doc: MailMessage }>(q, "SELECT doc FROM mail ORDER BY id", [], 100)) {
        for (const row of rows) yield row.doc;
      }
    }
    return {
      apps: appsRead(),
      emailjsAccounts: () => emailjs.list(q),
      mail: mailRead(),
      end: () => tx.rollback(),
    };
  }

  async importState(state: State): Promise<void> {
    const built = stateApps(state);
    // Decoded before the transaction opens: a bad document refuses the import with nothing changed.
    const documents = built.map(({ saved }) =>
      saved.collections.map(({ database, collection, documents: docs, owners }) => {
        const seen = new Set<string>();
        const ownerAt = ownersByPlace(owners, docs.length, `${database}.${collection}`);
        return {
          database,
          collection,
          rows: docs.map((doc, place) => {
            const decoded = importedDocument(doc, `${database}.${collection}`);
            const key = idRowKey(decoded._id);
            if (seen.has(key)) throw new StateImportError(`duplicate _id in ${database}.${collection}`);
            seen.add(key);
            return { key, text: storedDocument(decoded), owner: ownerAt[place] };
          }),
        };
      }),
    );
    const previous = await this.context.db
      .transaction(async (client) => {
        const apps = (await client.query<{ app_id: string }>("SELECT app_id FROM apps")).rows.map((r) => r.app_id);
        const accounts = (
          await client.query<{ public_key: string }>("SELECT public_key FROM emailjs_accounts")
        ).rows.map((r) => r.public_key);
        // An import restores what was exported, whatever the apps' limits (counted all the same).
        await client.query("SELECT set_config('emulator.limits', 'off', true)");
        await client.query("DELETE FROM apps");
        await client.query("DELETE FROM mail");
        await client.query("DELETE FROM emailjs_accounts");
        for (const [i, { saved, record, suspensions }] of built.entries()) {
          await PgApps.insert(client, record);
          const scope = [record.appId];
          await keepSuspensions(client, record.appId, suspensions);
          const sessionCounts = new Map<string, number>();
          for (const s of saved.sessions) sessionCounts.set(s.userId, (sessionCounts.get(s.userId) ?? 0) + 1);
          for (const user of saved.users) {
            const { id, ...doc } = user;
            await client.query("INSERT INTO users (app_id, id, doc, session_count) VALUES ($1, $2, $3, $4)", [
              ...scope,
              id,
              doc,
              sessionCounts.get(id) ?? 0,
            ]);
            for (const identity of user.identities) {
              await client.query(
                "INSERT INTO identities (app_id, provider_type, identity_id, user_id) VALUES ($1, $2, $3, $4)",
                [...scope, identity.provider_type, rowKey(identity.id), id],
              );
            }
          }
          for (const a of saved.userpassAccounts) {
            await client.query(
              `INSERT INTO userpass_accounts (app_id, id, email, email_key, password_hash, confirmed, user_id, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
              [
                ...scope,
                a.id,
                a.email,
                a.email.trim().toLowerCase(),
                a.passwordHash,
                a.confirmed,
                a.userId,
                a.createdAt,
              ],
            );
          }
          for (const s of saved.sessions) {
            await client.query(
              "INSERT INTO sessions (app_id, id, user_id, api_key_id, doc) VALUES ($1, $2, $3, $4, $5)",
              [...scope, s.id, s.userId, s.apiKeyId ?? null, s],
            );
          }
          for (const k of saved.apiKeys) {
            await client.query(
              `INSERT INTO api_keys (app_id, id, user_id, name, key_hash, disabled, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)`,
              [...scope, k.id, k.userId, k.name, k.keyHash, k.disabled, k.createdAt],
            );
          }
          for (const t of saved.authTokens) {
            await client.query(
              `INSERT INTO auth_tokens (app_id, token_id, email_key, kind, used, expires_at, doc)
             VALUES ($1, $2, $3, $4, $5, $6, $7)`,
              [...scope, t.tokenId, t.email.trim().toLowerCase(), t.kind, t.used, t.expiresAt, t],
            );
          }
          for (const c of documents[i]!) {
            await client.query("INSERT INTO collections (app_id, db, coll) VALUES ($1, $2, $3)", [
              ...scope,
              c.database,
              c.collection,
            ]);
            if (c.rows.length === 0) continue;
            await client.query(
              `INSERT INTO documents (app_id, db, coll, id_key, doc, ejson, owner, owner_anonymous)
             SELECT $1, $2, $3, v.k, v.t::jsonb, v.t, v.o, coalesce(v.a, false)
               FROM unnest($4::text[], $5::text[], $6::text[], $7::boolean[]) WITH ORDINALITY AS v(k, t, o, a, n)
              ORDER BY v.n`,
              [
                ...scope,
                c.database,
                c.collection,
                c.rows.map((r) => r.key),
                c.rows.map((r) => r.text),
                c.rows.map((r) => r.owner?.userId ?? null),
                c.rows.map((r) => r.owner?.anonymous ?? false),
              ],
            );
          }
        }
        for (const account of state.emailjsAccounts) {
          const { clockOffsetMs: _clock, ...record } = account;
          await client.query("INSERT INTO emailjs_accounts (public_key, doc) VALUES ($1, $2)", [
            record.publicKey,
            record,
          ]);
        }
        for (const message of state.mail) {
          const id = Number(message.id.replace(/^m-/, ""));
          if (!Number.isSafeInteger(id) || id <= 0) throw new StateImportError(`'${message.id}' is not a message id`);
          await this.mail.insert(client, id, message);
        }
        await client.query("SELECT setval('mail_id_seq', greatest((SELECT max(id) FROM mail), 1))");
        for (const appId of new Set([...apps, ...built.map((b) => b.record.appId)]))
          await this.apps.announce(client, appId, "deleted");
        for (const key of new Set([...accounts, ...state.emailjsAccounts.map((a) => a.publicKey)]))
          await this.emailjs.announce(client, key);
        return { apps, accounts };
      })
      .catch((error: unknown) => {
        if ((error as { code?: unknown }).code === "23505")
          throw new StateImportError(`the state holds the same record twice: ${(error as Error).message}`);
        throw error;
      });
    await this.context.db.query("ANALYZE documents");
    // Every instance drops what it cached of the apps and accounts (this one at once, the others by
    // their notifications) and reads them again on next use.
    for (const appId of new Set([...previous.apps, ...built.map((b) => b.record.appId)]))
      this.apps.changed(appId, "deleted");
    for (const key of new Set([...previous.accounts, ...state.emailjsAccounts.map((a) => a.publicKey)]))
      this.emailjs.changed(key);
  }

  async close(): Promise<void> {
    await this.changes.close();
    this.streamPlaces.stop();
    await this.listener.close();
    await this.context.db.close();
  }
}
