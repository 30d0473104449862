/**
 * Trigger events kept in the store (decision 0031): six times a lease (every 10 s by default)
 * this instance renews the leases of the events it holds, then claims a batch of events whose
 * instance stopped renewing theirs (it died) and hands each to its app's triggers here. The first
 * sweep runs at start, so events left by a stopped or crashed instance run as soon as another one
 * (or the same one, restarted) is up and their leases have run out.
 */
import type { FastifyBaseLogger } from "fastify";
import type { TriggerEventStore } from "../store/store.ts";
import type { AppRegistry } from "./apps.ts";

export class TriggerRecovery {
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<void> | null = null;
  private closed = false;
  /** Events claimed from stopped instances so far (metrics). */
  claimed = 0;

  constructor(
    private readonly events: TriggerEventStore,
    private readonly apps: AppRegistry,
    private readonly log: () => FastifyBaseLogger | undefined,
  ) {}

  start(): void {
    this.sweep();
    this.timer = setInterval(() => this.sweep(), Math.max(50, this.events.leaseMs / 6));
    this.timer.unref();
  }

  /** Renews, then claims (one sweep at a time); resolves when it is done. */
  sweep(): Promise<void> {
    this.sweeping ??= this.renewAndClaim().finally(() => {
      this.sweeping = null;
    });
    return this.sweeping;
  }

  private async renewAndClaim(): Promise<void> {
    try {
      await this.events.renew(this.apps.heldTriggerEvents());
      if (this.closed) return;
      const claimed = await this.events.claim();
      this.claimed += claimed.length;
      for (const kept of claimed) {
        if (this.closed) return;
        await this.apps.recoverTriggerEvent(kept);
      }
      if (claimed.length > 0)
        this.log()?.info({ events: claimed.length }, "trigger events of a stopped instance claimed");
    } catch (error) {
      // The database is away: the next sweep tries again (nothing is lost: the events stay kept).
      this.log()?.warn({ reason: (error as Error).message }, "trigger events could not be swept");
    }
  }

  /** Stops sweeping (shutdown); waits for a sweep under way. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sweeping;
  }
}
