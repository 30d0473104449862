/**
 * App Services' scheduled triggers (`AppConfig.triggers` of type `SCHEDULED`): at the times of a
 * five-field CRON schedule (UTC) on the app's clock, the function runs as system, with no
 * argument (decision 0031).
 *
 * Every instance serving the app watches the schedule; for each time, the instance that moves the
 * trigger's mark in the store to it (`AppStore.claimScheduledTime`) runs it: once, however many
 * instances. The first mark of a trigger is where its schedule starts (no run for times before it).
 * Times passed while no instance watched, or jumped over by moving the app's clock, run once, for
 * the latest of them, unless the trigger skips catch-up events. A clock put back behind the mark
 * (on this instance) starts the schedule again where it is, as a first mark does.
 */
import { Cron } from "croner";
import type { FastifyBaseLogger } from "fastify";
import type { ControlSchemas } from "../openapi/types.ts";
import type { ScheduleClaim } from "../store/store.ts";
import type { TriggerApp } from "./auth-triggers.ts";

type Trigger = ControlSchemas["ScheduledTrigger"];

/** What a scheduled trigger needs of its app: the functions, the clock, and the store's marks. */
export interface ScheduledTriggerApp extends TriggerApp {
  claimScheduledTime(trigger: string, time: number, putBackBefore: number): Promise<ScheduleClaim>;
}

/** How long the watch sleeps at most before looking at the clock again (a moved clock is heard at once). */
const longestSleepMs = 60_000;

/** The windows the latest due time is looked for in, smallest first (a yearly schedule still has one). */
const windowsMs = [60_000, 3_600_000, 86_400_000, 31 * 86_400_000, 366 * 86_400_000, 5 * 366 * 86_400_000];

/** A schedule of five fields (minute hour day-of-month month day-of-week), in UTC; throws when it is not one. */
export function parseSchedule(schedule: string): Cron {
  const fields = schedule.trim().split(/\s+/);
  if (fields.length !== 5) throw new Error(`'${schedule}' is not a schedule of five fields`);
  return new Cron(fields.join(" "), { paused: true, timezone: "Etc/UTC" });
}

/** The latest time of the schedule at or before `now`, or undefined when none is near enough. */
export function latestTime(cron: Cron, now: number): number | undefined {
  for (const windowMs of windowsMs) {
    let found = cron.nextRun(new Date(now - windowMs));
    if (!found || found.getTime() > now) continue;
    for (let steps = 0; steps < 10_000; steps++) {
      const next = cron.nextRun(found);
      if (!next || next.getTime() > now) return found.getTime();
      found = next;
    }
    return found.getTime();
  }
  return undefined;
}

interface Watched {
  trigger: Trigger;
  cron: Cron;
  /** The latest time this instance has handled (claimed, or found claimed). */
  handled: number | undefined;
}

export class ScheduledTriggers {
  private readonly watched: Watched[] = [];
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** The check running now, so that checks never overlap (a moved clock asks for one at once). */
  private checking: Promise<void> | null = null;
  private again = false;
  /** Times the clock was put back, and of those the ones a check took the marks over for. */
  private putBacks = 0;
  private takenOver = 0;
  /** Runs started and not ended yet. */
  private readonly runs = new Set<Promise<void>>();

  constructor(
    private readonly app: ScheduledTriggerApp,
    private readonly log: () => FastifyBaseLogger | undefined,
  ) {
    for (const trigger of app.config.triggers ?? []) {
      if (trigger.type !== "SCHEDULED" || trigger.disabled === true) continue;
      try {
        this.watched.push({ trigger, cron: parseSchedule(trigger.schedule), handled: undefined });
      } catch (error) {
        this.failed(trigger, `its schedule cannot be read: ${(error as Error).message}`);
      }
    }
    if (this.watched.length > 0) this.check();
  }

  get size(): number {
    return this.watched.length;
  }

  /**
   * The app's clock moved: what fell due runs now, and the next sleep is measured again. Put back
   * (`back`): the schedule starts again where the clock now is.
   */
  clockChanged(back = false): void {
    if (back) this.putBacks++;
    if (this.watched.length > 0) this.check();
  }

  /** Resolves once no check is running and every run started has ended (tests wait on it). */
  async settled(): Promise<void> {
    while (this.checking || this.runs.size > 0) {
      await this.checking;
      await Promise.all([...this.runs]);
    }
  }

  /** Stops watching (the runtime is dropped); runs already started finish. */
  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** A check of every trigger, after the one running (if any); then the next sleep. */
  private check(): void {
    if (this.closed) return;
    if (this.checking) {
      this.again = true;
      return;
    }
    this.checking = this.checkAll()
      .catch((error: unknown) =>
        this.log()?.warn({ appId: this.app.appId, reason: String(error) }, "scheduled triggers"),
      )
      .finally(() => {
        this.checking = null;
        if (this.again) {
          this.again = false;
          this.check();
        } else this.sleep();
      });
  }

  private async checkAll(): Promise<void> {
    const now = this.app.clock.now();
    // Put back: a mark (and what this instance handled) ahead of the clock is left from before,
    // until a check has taken every trigger's over (one that failed leaves it to the next).
    const putBacks = this.putBacks;
    const takeOverAfter = putBacks > this.takenOver ? now : Number.POSITIVE_INFINITY;
    for (const watched of this.watched) {
      if (watched.handled !== undefined && watched.handled > takeOverAfter) watched.handled = undefined;
      const due = latestTime(watched.cron, now);
      if (due === undefined || (watched.handled !== undefined && due <= watched.handled)) continue;
      const { claimed, previous } = await this.app.claimScheduledTime(watched.trigger.name, due, takeOverAfter);
      watched.handled = due;
      // Claimed with no mark before: the trigger's schedule starts here. Claimed by another: theirs.
      if (!claimed || previous === undefined) continue;
      const first = watched.cron.nextRun(new Date(previous));
      const missed = first !== null && first.getTime() < due;
      if (missed && watched.trigger.skipCatchupEvents === true) continue;
      const run = this.app.runTriggerFunction(watched.trigger.functionName, []).then(
        () => undefined,
        (error: unknown) => this.failed(watched.trigger, (error as Error).message),
      );
      this.runs.add(run);
      void run.finally(() => this.runs.delete(run));
    }
    this.takenOver = putBacks;
  }

  /** Sleeps until the next time of any schedule (at most a minute: the check then looks again). */
  private sleep(): void {
    if (this.closed) return;
    const now = this.app.clock.now();
    let next = now + longestSleepMs;
    for (const { cron } of this.watched) {
      const time = cron.nextRun(new Date(now))?.getTime();
      if (time !== undefined && time < next) next = time;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.check(), Math.max(0, next - now) + 5);
    this.timer.unref();
  }

  private failed(trigger: Trigger, reason: string): void {
    this.log()?.warn({ appId: this.app.appId, trigger: trigger.name, reason }, "scheduled trigger failed");
  }
}
