/**
 * How instances on one database hear of each other's writes: PostgreSQL's LISTEN/NOTIFY on one
 * dedicated connection per instance. A notification sent inside a transaction is delivered when
 * (and only if) it commits, to every listener, in commit order — change streams rely on both.
 *
 * When the connection breaks (the database went away) every subscriber is told, so open change
 * streams end instead of silently missing events; the listener reconnects with backoff and says so
 * again when it is back.
 *
 * How current is this instance? Every few milliseconds, while requests ask (`fresh`), the listener
 * sends itself a notification on a channel of its own (a sync): since notifications arrive in commit
 * order, when a sync arrives every change committed before it was sent has arrived too. `fresh()`
 * tells whether the latest sync that came back was sent less than `revocationWindowMs` ago (the
 * users and sessions kept on this instance answer only then: auth-cache.ts).
 */
import pg from "pg";
import { revocationWindowMs } from "./auth-cache.ts";
import { clientConfig, type DatabaseOptions } from "./database.ts";
import { decodeText } from "./text-encoding.ts";

export const channels = {
  /** Document changes: `{a: appId, e: [change events as canonical EJSON]}` or `{a, r: change_log id}`. */
  changes: "harness_changes",
  /** A new message in the outbox: `{id}`. */
  mail: "harness_mail",
  /** An app created, updated, reset or deleted: `{i: instance, a: appId, c: change}`. */
  apps: "harness_apps",
  /** An EmailJS account created (`c: "created"`) or deleted: `{i: instance, k: publicKey, c?}`. */
  emailjs: "harness_emailjs",
  /** Sessions ended: `{i: instance, a: appId, u: userId, s?: sessionId, k?: apiKeyId}` (sessions.ts). */
  sessions: "harness_sessions",
  /** A user changed or deleted: `{i: instance, a: appId, u: userId}` (users.ts). */
  users: "harness_users",
} as const;

export type Channel = (typeof channels)[keyof typeof channels];

/** The least time between two syncs (a sync is one tiny transaction; see above). */
const syncEveryMs = 20;
/** A sync that has not come back in this time is given up. */
const syncGivenUpMs = 1_000;

/** The channel an instance sends its syncs on (it alone listens to it). */
export const syncChannel = (instanceId: string) => `harness_sync_${instanceId}`;

export interface ListenerEvents {
  notification(channel: Channel, payload: string): void;
  /** The connection broke: what was sent meanwhile is lost to this instance. */
  lost(reason: string): void;
  /** Listening again after a break. */
  restored(): void;
}

export class NotificationListener {
  private client: pg.Client | null = null;
  private closed = false;
  private retryMs = 100;
  private timer: NodeJS.Timeout | null = null;
  private connected = false;
  private connecting = false;
  /** When the latest sync that came back was sent (performance.now()). */
  private syncedAt = Number.NEGATIVE_INFINITY;
  /** Syncs on their way, oldest first (number → when sent). */
  private readonly pendingSyncs = new Map<number, number>();
  private lastSentAt = Number.NEGATIVE_INFINITY;
  private syncs = 0;
  /** Who waits for a sync to come back (`caughtUp`), by the sync's number. */
  private readonly waiting = new Map<number, { resolve(): void; reject(error: Error): void }>();

  constructor(
    private readonly options: DatabaseOptions,
    private readonly events: ListenerEvents,
    /** This instance's sync channel (syncChannel). */
    private readonly ownChannel: string,
  ) {}

  /**
   * Whether every change committed more than `revocationWindowMs` ago has arrived. Asks for the
   * next sync when one is due: every `syncEveryMs` while requests ask, without waiting for the
   * ones on their way (so a slow round trip delays what is known by itself, not by two).
   */
  fresh(now = performance.now()): boolean {
    if (!this.connected || this.client === null) return false;
    if (now - this.lastSentAt >= syncEveryMs) this.sync(this.client, now);
    return now - this.syncedAt <= revocationWindowMs;
  }

  /**
   * Resolves once every change committed before the call has arrived here (a sync sent now came
   * back), so that what this instance keeps reflects them; rejects when the listening connection is
   * down or breaks first. (What a test awaits before asking another instance what one changed.)
   */
  caughtUp(): Promise<void> {
    if (!this.connected || this.client === null) return Promise.reject(new Error("not listening"));
    const n = this.sync(this.client, performance.now());
    return new Promise((resolve, reject) => this.waiting.set(n, { resolve, reject }));
  }

  /** The shared sync callers wait for (`caughtUpShared`) before it is sent, if one is. */
  private sharedSync: Promise<void> | null = null;

  /**
   * As `caughtUp`, but one sync serves every caller within `syncEveryMs` (a caller joins the next
   * one to be sent, sent at once when none was for that long), so that however many ask, the
   * database gets a sync at most that often; rejects when the sync has not come back within
   * `syncGivenUpMs` (the database or the listening connection is away, or very slow).
   */
  caughtUpShared(): Promise<void> {
    if (!this.connected || this.client === null) return Promise.reject(new Error("not listening"));
    if (this.sharedSync) return this.sharedSync;
    const waitMs = Math.max(0, this.lastSentAt + syncEveryMs - performance.now());
    const shared = new Promise<void>((resolve, reject) => {
      const send = setTimeout(() => {
        this.sharedSync = null;
        if (!this.connected || this.client === null) return reject(new Error("not listening"));
        const n = this.sync(this.client, performance.now());
        const late = setTimeout(() => {
          this.waiting.delete(n);
          reject(new Error("the sync did not come back in time"));
        }, syncGivenUpMs);
        late.unref();
        this.waiting.set(n, {
          resolve: () => {
            clearTimeout(late);
            resolve();
          },
          reject: (error) => {
            clearTimeout(late);
            reject(error);
          },
        });
      }, waitMs);
      send.unref();
    });
    this.sharedSync = shared;
    return shared;
  }

  private sync(client: pg.Client, now: number): number {
    const n = ++this.syncs;
    this.lastSentAt = now;
    this.pendingSyncs.set(n, now);
    // Syncs the database never answered (it went away: the connection's own handler runs) are given up.
    for (const [old, sentAt] of this.pendingSyncs) {
      if (now - sentAt < syncGivenUpMs) break;
      this.pendingSyncs.delete(old);
      this.settleWaiting(old, new Error("the sync was not answered"));
    }
    client.query("SELECT pg_notify($1, $2)", [this.ownChannel, String(n)]).catch((error: Error) => {
      this.pendingSyncs.delete(n);
      this.settleWaiting(n, error);
    });
    return n;
  }

  private synced(payload: string): void {
    const n = Number(payload);
    const sentAt = this.pendingSyncs.get(n);
    if (sentAt === undefined) return;
    this.syncedAt = Math.max(this.syncedAt, sentAt);
    // (One connection sends them in order, so they commit and come back in order: the older are done.)
    for (const old of this.pendingSyncs.keys()) {
      if (old > n) break;
      this.pendingSyncs.delete(old);
    }
    for (const old of this.waiting.keys()) if (old <= n) this.settleWaiting(old);
  }

  /** Answers who waits for sync `n`: caught up, or (with an error) not. */
  private settleWaiting(n: number, error?: Error): void {
    const waiter = this.waiting.get(n);
    if (!waiter) return;
    this.waiting.delete(n);
    if (error) waiter.reject(error);
    else waiter.resolve();
  }

  get listening(): boolean {
    return this.connected;
  }

  /** Connects and listens (throws when the database cannot be reached: the caller decides). */
  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    // Pipelined: a sync is written at once, even while the one before it is on its way.
    const client = new pg.Client({ ...clientConfig(this.options), pipeline: true });
    client.on("notification", (message) => {
      if (message.payload === undefined) return;
      if (message.channel === this.ownChannel) this.synced(message.payload);
      else this.events.notification(message.channel as Channel, decodeText(message.payload));
    });
    const broken = (reason: string) => {
      if (this.client !== client) return;
      this.client = null;
      const was = this.connected;
      this.connected = false;
      this.forgetSyncs();
      client.removeAllListeners("notification");
      void client.end().catch(() => undefined);
      if (was) this.events.lost(reason);
      this.scheduleReconnect();
    };
    client.on("error", (error) => broken(error.message));
    client.on("end", () => broken("the connection ended"));
    try {
      await client.connect();
      // A sync is a transaction of its own: it need not wait for its commit to reach the disk.
      await client.query("SET synchronous_commit = off");
      for (const channel of [...Object.values(channels), this.ownChannel]) await client.query(`LISTEN ${channel}`);
    } catch (error) {
      client.removeAllListeners();
      client.on("error", () => undefined);
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.connected = true;
    this.retryMs = 100;
  }

  /** Tries to connect again now (the database answers again, so why wait for the backoff). */
  wake(): void {
    if (this.closed || this.connected || this.connecting) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.retryMs = 100;
    this.scheduleReconnect(0);
  }

  private scheduleReconnect(delayMs = this.retryMs): void {
    if (this.closed || this.timer) return;
    this.timer = setTimeout(async () => {
      this.timer = null;
      this.connecting = true;
      try {
        await this.connect();
        if (this.connected) this.events.restored();
      } catch {
        this.retryMs = Math.min(this.retryMs * 2, 5_000);
        this.scheduleReconnect();
      } finally {
        this.connecting = false;
      }
    }, delayMs);
    this.timer.unref();
  }

  private forgetSyncs(): void {
    this.syncedAt = Number.NEGATIVE_INFINITY;
    this.pendingSyncs.clear();
    for (const n of [...this.waiting.keys()]) this.settleWaiting(n, new Error("the listening connection broke"));
    this.lastSentAt = Number.NEGATIVE_INFINITY;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.forgetSyncs();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const client = this.client;
    this.client = null;
    this.connected = false;
    if (client) {
      client.removeAllListeners("notification");
      await client.end().catch(() => undefined);
    }
  }
}
