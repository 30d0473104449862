/**
 * What every part of the PostgreSQL store shares: the pool, this instance's id (its own
 * notifications are told apart), and the subscribers of each notification channel.
 */
import { AuthCache } from "./auth-cache.ts";
import type { Database } from "./database.ts";
import { KeptAccounts } from "./kept-accounts.ts";
import type { Channel } from "./notifications.ts";

type Subscriber = (payload: string) => void;

export class PgContext {
  private readonly subscribers = new Map<Channel, Set<Subscriber>>();
  private readonly outageListeners = new Set<(reason: string) => void>();

  /**
   * Whether notifications arrive now, whether every change committed more than the revocation
   * window ago has arrived, when every change committed before now has (notifications.ts), and how
   * to ask for the connection again at once.
   */
  listener: {
    readonly listening: boolean;
    fresh(): boolean;
    caughtUpShared(): Promise<void>;
    wake(): void;
  } = {
    listening: true,
    fresh: () => false,
    caughtUpShared: () => Promise.reject(new Error("not listening")),
    wake: () => undefined,
  };

  /** The users and sessions of access-token requests, kept true by notifications (auth-cache.ts). */
  readonly auth = new AuthCache({ fresh: () => this.listener.fresh() });

  /** The registrations of this instance's latest e-mail/password logins (kept-accounts.ts). */
  readonly keptAccounts = new KeptAccounts();

  constructor(
    readonly db: Database,
    /** Tells this instance's notifications from the others'. */
    readonly instanceId: string,
  ) {}

  subscribe(channel: Channel, subscriber: Subscriber): () => void {
    let set = this.subscribers.get(channel);
    if (!set) {
      set = new Set();
      this.subscribers.set(channel, set);
    }
    set.add(subscriber);
    return () => set.delete(subscriber);
  }

  dispatch(channel: Channel, payload: string): void {
    for (const subscriber of this.subscribers.get(channel) ?? []) subscriber(payload);
  }

  private insertedSinceAnalyze = 0;
  private analyzing = false;
  private lastAnalyzeAt = 0;

  /**
   * Counts inserted documents; after a burst (a bulk insert, an import) the planner's statistics are
   * refreshed at once instead of at autovacuum's next round, so the filtered reads keep using the
   * GIN index (stale statistics make an ordered walk of the whole collection look cheaper).
   */
  noteInserted(count: number): void {
    this.insertedSinceAnalyze += count;
    if (this.insertedSinceAnalyze < 5_000 || this.analyzing || Date.now() - this.lastAnalyzeAt < 10_000) return;
    this.analyzing = true;
    this.insertedSinceAnalyze = 0;
    this.db
      .query("ANALYZE documents")
      .catch(() => undefined)
      .finally(() => {
        this.analyzing = false;
        this.lastAnalyzeAt = Date.now();
      });
  }

  /** Runs when notifications were lost (the listening connection broke). */
  onOutage(listener: (reason: string) => void): () => void {
    this.outageListeners.add(listener);
    return () => this.outageListeners.delete(listener);
  }

  outage(reason: string): void {
    for (const listener of [...this.outageListeners]) listener(reason);
  }

  private readonly restoredListeners = new Set<() => void>();

  /** Runs when notifications arrive again after an outage (what changed meanwhile was not heard). */
  onRestored(listener: () => void): () => void {
    this.restoredListeners.add(listener);
    return () => this.restoredListeners.delete(listener);
  }

  restored(): void {
    for (const listener of [...this.restoredListeners]) listener();
  }
}
