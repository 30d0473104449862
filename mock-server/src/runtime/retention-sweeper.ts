/**
 * Applies the retention periods (config/retention.ts) where the store keeps rows without end (the
 * database; the memory store caps its own): every `everyMs`, off the request path, each kind in
 * batches of bounded statements until a batch comes back short. Several instances may sweep at
 * once: each statement skips rows another holds. A failure (the database away) ends the sweep
 * with what it removed so far, every batch being whole; the next sweep goes on from there.
 * See docs/decisions/0030-retention.md.
 */
import { defaultRetention, defaultSweeps, type Retention } from "../config/retention.ts";
import { anonymousUserLifetimeMs, type RetentionSweeps } from "../store/store.ts";

export interface SweepOptions {
  everyMs?: number;
  batch?: number;
  /** The sweeps' clock (real time: the rows' times are the apps' clocks, which only run ahead of it). */
  now?: () => number;
  log?: (line: string, fields: Record<string, unknown>) => void;
}

export class RetentionSweeper {
  /** Rows removed by this instance's sweeps, by kind. */
  readonly removed = { mail: 0, tokens: 0, sessions: 0, anonymous_users: 0 };
  private readonly retention: Retention;
  private readonly everyMs: number;
  private readonly batch: number;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly sweeps: RetentionSweeps,
    retention: Partial<Retention> | undefined,
    private readonly options: SweepOptions = {},
  ) {
    this.retention = { ...defaultRetention, ...retention };
    this.everyMs = options.everyMs ?? defaultSweeps.everyMs;
    this.batch = options.batch ?? defaultSweeps.batch;
    this.now = options.now ?? Date.now;
  }

  /** Sweeps from time to time; the first one at a random point of the first period (instances started together spread). */
  start(): void {
    this.schedule(Math.random() * this.everyMs);
  }

  private schedule(delayMs: number): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.sweep().finally(() => this.schedule(this.everyMs));
    }, delayMs);
    this.timer.unref();
  }

  /** One sweep of every kind (joining the one running, if any); never rejects. */
  sweep(): Promise<void> {
    this.running ??= this.sweepAll().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async sweepAll(): Promise<void> {
    const now = this.now();
    const kinds: [keyof RetentionSweeper["removed"], (batch: number) => Promise<number>][] = [
      ["mail", (batch) => this.sweeps.mail(now - this.retention.mailMs, batch)],
      ["tokens", (batch) => this.sweeps.tokens(now - this.retention.tokensMs, batch)],
      ["sessions", (batch) => this.sweeps.sessions(now, batch)],
      // Refused from the moment their lifetime ends (auth-context.ts): removed by the next sweep.
      ["anonymous_users", (batch) => this.sweeps.anonymousUsers(now - anonymousUserLifetimeMs, batch)],
    ];
    for (const [kind, sweep] of kinds) {
      try {
        let removed: number;
        do {
          if (this.closed) return;
          removed = await sweep(this.batch);
          this.removed[kind] += removed;
        } while (removed >= this.batch);
      } catch (error) {
        this.options.log?.("retention sweep failed; the next one goes on", {
          kind,
          error: (error as Error).message,
        });
      }
    }
  }

  /** Stops sweeping; a sweep under way ends after its current batch. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }
}
