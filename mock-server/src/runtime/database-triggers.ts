/**
 * App Services' database triggers (`AppConfig.triggers` of type `DATABASE`, an export's
 * `triggers/*.json`): after a document of the trigger's collection (or, without one, of any
 * collection of its database) is inserted, updated, replaced or deleted, its function runs as
 * system with the change event — MongoDB's, as a change stream gives it, with the trigger's
 * `fullDocument` / `fullDocumentBeforeChange` choices, filtered by its `match` and cut by its
 * `project` — off the path of the write that made it (decision 0031).
 *
 * Each instance runs the triggers of the writes it committed itself (the store's local change
 * subscription): every change runs each trigger once, however many instances share the database.
 * Ordered triggers (the default) run one event after another, in this instance's commit order;
 * unordered ones a few at once. A trigger's events wait in a bounded backlog: writes faster than
 * its function put it behind, and the events until the backlog has drained are not run (the log
 * says when it falls behind and how many it left when it catches up), so that no burst of writes
 * holds memory or function runs without bound.
 *
 * Where the store keeps trigger events with their writes (PostgreSQL: `keepEvents`), an event that
 * arrives with a `durableId` is removed from the store once every trigger that took it has run it
 * (or failed, or left it behind); until then this instance's lease on it is renewed
 * (runtime/trigger-recovery.ts), and an instance that dies leaves it to another.
 *
 * A trigger of one collection is suspended when that collection is dropped or renamed over (the
 * changes that end a change stream on it), as App Services suspends a trigger whose stream ends:
 * it runs for no change until it is resumed (decision 0057). The store keeps the suspension with
 * the write that made it; this instance reads them as it starts and whenever any instance changes
 * them, and marks its own writes' at once.
 */
import type { FastifyBaseLogger } from "fastify";
import { changeDocument, invalidates } from "../data/change-events.ts";
import type { ChangeEvent, Document } from "../data/documents.ts";
import { compileQuery, find, readsTheTime } from "../data/query-engine.ts";
import { queryLimitsOf, withQueryLimits } from "../data/query-limits.ts";
import type { ControlSchemas } from "../openapi/types.ts";
import type { AppStore, TriggerEventStore, TriggerSuspension } from "../store/store.ts";
import type { TriggerApp } from "./auth-triggers.ts";

type Trigger = ControlSchemas["DatabaseTrigger"];

const operationOf = {
  insert: "INSERT",
  update: "UPDATE",
  replace: "REPLACE",
  delete: "DELETE",
  drop: "DROP_COLLECTION",
  rename: "RENAME_COLLECTION",
} as const;

/** How many events a trigger holds (waiting or running), and how many an unordered one runs at once. */
export interface TriggerLimits {
  backlog: number;
  unorderedRuns: number;
}

export const triggerLimits: TriggerLimits = { backlog: 1000, unorderedRuns: 10 };

/** Where a runtime's suspensions are kept: the app's store. */
export type SuspensionStore = Pick<AppStore, "triggerSuspensions" | "resumeTrigger"> & {
  readonly data: Pick<AppStore["data"], "suspendTriggers">;
};

/** Why a change suspends a trigger of `database`.`collection` (it is its drop or a rename from or over it). */
function suspensionReason(change: ChangeEvent, database: string, collection: string): string {
  const name = `${database}.${collection}`;
  if (change.operationType === "drop") return `the collection ${name} was dropped`;
  if (change.database === database && change.collection === collection && change.to)
    return `the collection ${name} was renamed to ${change.to.db}.${change.to.coll}`;
  return `the collection ${name} was replaced by a collection renamed over it (as $out does)`;
}

interface Taken {
  event: Document;
  /** The kept event's id (ChangeEvent.durableId), if the store keeps it. */
  id: string | undefined;
}

interface Running {
  trigger: Trigger;
  matches: ((event: Document) => boolean) | null;
  /** Events taken, not yet run, oldest first. */
  waiting: Taken[];
  /** Runs under way. */
  active: number;
  /** Events not run since the trigger fell behind (0: it keeps up). */
  notRun: number;
}

export class DatabaseTriggers {
  private readonly running: Running[] = [];
  private increment = 0;
  /** Kept events this instance holds: how many of their triggers' runs have not ended yet. */
  private readonly held = new Map<string, number>();
  /** Kept events done with, to remove from the store together, and the removals under way. */
  private done: string[] = [];
  private readonly removing = new Set<Promise<void>>();
  /** The server is stopping: nothing more starts, and what did not run stays kept for another instance. */
  private stopped = false;
  /** The triggers suspended, as this instance knows them (by name). */
  private readonly suspended = new Map<string, TriggerSuspension>();
  /** Changes that came before the suspensions were first read, handled once they are; null after. */
  private early: ChangeEvent[] | null = null;
  /** Bumped by each suspension or resumption this instance makes (a read begun before it reads again). */
  private marks = 0;
  /** The reads of the suspensions, one after another; whether one waits to begin. */
  private reads: Promise<void> = Promise.resolve();
  private readWaiting = false;
  /** The suspensions the store was given for a change (the same ones are marked here when it arrives). */
  private readonly decided = new WeakMap<ChangeEvent, TriggerSuspension[]>();

  constructor(
    private readonly app: TriggerApp,
    private readonly log: () => FastifyBaseLogger | undefined,
    private readonly limits: TriggerLimits = triggerLimits,
    private readonly kept?: TriggerEventStore,
    private readonly suspensions?: SuspensionStore,
    /** Told when the suspended triggers this instance knows change (the inspector's live view). */
    private readonly suspendedChanged: () => void = () => undefined,
  ) {
    for (const trigger of app.config.triggers ?? []) {
      if (trigger.type !== "DATABASE" || trigger.disabled === true) continue;
      let matches: Running["matches"] = null;
      if (trigger.match && Object.keys(trigger.match).length > 0) {
        try {
          const match = trigger.match;
          const query = compileQuery(match);
          // (One that reads the time is compiled again at each change, at the app's time then: eventFor.)
          matches = readsTheTime(match) ? (event) => compileQuery(match).test(event) : (event) => query.test(event);
        } catch (error) {
          this.failed(trigger, `its match cannot be evaluated: ${(error as Error).message}`);
          continue;
        }
      }
      this.running.push({ trigger, matches, waiting: [], active: 0, notRun: 0 });
    }
    if (this.suspensions) {
      const suspendable = this.running.some(({ trigger }) => trigger.collection !== undefined);
      // (Set either way: the store may hold a decision of the app's runtime before this one.)
      this.suspensions.data.suspendTriggers(suspendable ? (change) => this.suspensionsOf(change) : null);
      if (suspendable) {
        this.early = [];
        void this.readSuspensions();
      }
    }
  }

  /** The suspensions a change makes: each enabled trigger of the collection it drops or renames from or over. */
  private suspensionsOf(change: ChangeEvent): TriggerSuspension[] {
    const made: TriggerSuspension[] = [];
    for (const { trigger } of this.running) {
      if (trigger.collection === undefined || !invalidates(change, trigger.database, trigger.collection)) continue;
      const reason = suspensionReason(change, trigger.database, trigger.collection);
      made.push({ name: trigger.name, since: this.app.clock.now(), reason });
    }
    this.decided.set(change, made);
    return made;
  }

  /**
   * Reads the suspensions again (at start, and when any instance suspended or resumed a trigger):
   * after the reads under way, once for however many asked meanwhile.
   */
  readSuspensions(): Promise<void> {
    if (this.readWaiting) return this.reads;
    this.readWaiting = true;
    this.reads = this.reads.then(async () => {
      this.readWaiting = false;
      await this.readOnce();
    });
    return this.reads;
  }

  private async readOnce(): Promise<void> {
    if (!this.suspensions) return;
    for (;;) {
      const marks = this.marks;
      let read: TriggerSuspension[];
      try {
        read = await this.suspensions.triggerSuspensions();
      } catch (error) {
        // (The database is away: what this instance knew stands, read again when it is back.)
        this.log()?.warn(
          { appId: this.app.appId, reason: (error as Error).message },
          "database trigger suspensions could not be read",
        );
        break;
      }
      // A suspension or resumption of this instance's came meanwhile: the read may predate it.
      if (marks !== this.marks) continue;
      const before = this.suspendedKey();
      this.suspended.clear();
      for (const suspension of read) this.suspended.set(suspension.name, suspension);
      if (this.suspendedKey() !== before) this.suspendedChanged();
      break;
    }
    const early = this.early;
    this.early = null;
    for (const change of early ?? []) this.handle(change);
  }

  /** What this instance knows suspended, as one text (to tell a read that changed it). */
  private suspendedKey(): string {
    return JSON.stringify([...this.suspended.values()].sort((a, b) => (a.name < b.name ? -1 : 1)));
  }

  /** The triggers suspended now, as this instance knows them (once it has read them). */
  async suspendedTriggers(): Promise<TriggerSuspension[]> {
    await this.reads;
    return [...this.suspended.values()].sort((a, b) => a.since - b.since || (a.name < b.name ? -1 : 1));
  }

  /** Resumes a trigger (a suspended one runs again from the next change); every instance is told. */
  async resume(name: string): Promise<void> {
    if (!this.suspensions) return;
    await this.suspensions.resumeTrigger(name);
    this.marks++;
    if (this.suspended.delete(name)) {
      this.log()?.info({ appId: this.app.appId, trigger: name }, "database trigger resumed");
      this.suspendedChanged();
    }
  }

  /** A change of this instance's that suspends triggers: marked at once (the store kept it with the write). */
  private suspendBy(change: ChangeEvent): void {
    let marked = false;
    for (const suspension of this.decided.get(change) ?? this.suspensionsOf(change)) {
      if (this.suspended.has(suspension.name)) continue;
      this.suspended.set(suspension.name, suspension);
      this.marks++;
      marked = true;
      this.log()?.warn(
        { appId: this.app.appId, trigger: suspension.name, reason: suspension.reason },
        "database trigger suspended: its change stream was invalidated (resumeTrigger resumes it)",
      );
    }
    if (marked) this.suspendedChanged();
  }

  /** Whether a trigger runs for changes of this kind now (not suspended). */
  private takes(trigger: Trigger, change: ChangeEvent): boolean {
    return !this.suspended.has(trigger.name) && concerns(trigger, change);
  }

  /** Whether the app has a database trigger to run. */
  get size(): number {
    return this.running.length;
  }

  /** Whether some trigger runs for changes of this kind (the events the store keeps). */
  concerns(change: ChangeEvent): boolean {
    return this.running.some(({ trigger }) => this.takes(trigger, change));
  }

  /**
   * A change this instance committed (or a kept event it claimed): the triggers it concerns take
   * its event.
   */
  handle(change: ChangeEvent): void {
    if (this.early !== null) {
      this.early.push(change);
      return;
    }
    if (change.operationType === "drop" || change.operationType === "rename") this.suspendBy(change);
    const id = change.durableId;
    // (A kept event this instance holds already, claimed again after its lease ran out: run once here.)
    if (id !== undefined && this.held.has(id)) return;
    let event: Document | undefined;
    const taken: [Running, Document][] = [];
    for (const run of this.running) {
      const { trigger } = run;
      if (!this.takes(trigger, change)) continue;
      event ??= changeDocument(change, Math.floor(this.app.clock.now() / 1000), ++this.increment);
      let given: Document | undefined;
      try {
        given = this.eventFor(run, change, event);
      } catch (error) {
        // (Its match or projection failed on this event: the write that made it is not affected.)
        this.failed(trigger, `its match or projection failed: ${(error as Error).message}`);
        continue;
      }
      if (given) taken.push([run, given]);
    }
    if (id !== undefined) {
      if (taken.length === 0) this.finish(id);
      else this.held.set(id, taken.length);
    }
    for (const [run, given] of taken) this.take(run, { event: given, id });
  }

  /** The kept events this instance holds (their leases are renewed). */
  heldEvents(): string[] {
    return [...this.held.keys()];
  }

  /** Queues an event, or (the backlog full, or behind) leaves it, then starts what may start. */
  private take(run: Running, taken: Taken): void {
    const { backlog } = this.limits;
    if (run.notRun > 0 || run.waiting.length + run.active >= backlog) {
      if (run.notRun++ === 0) {
        this.log()?.warn(
          { appId: this.app.appId, trigger: run.trigger.name, backlog },
          "database trigger fell behind: its events are not run until its backlog has drained",
        );
      }
      this.release(taken.id);
      return;
    }
    run.waiting.push(taken);
    this.start(run);
  }

  /** One of a kept event's runs has ended (or will not happen). */
  private release(id: string | undefined): void {
    if (id === undefined) return;
    const left = (this.held.get(id) ?? 1) - 1;
    if (left > 0) {
      this.held.set(id, left);
      return;
    }
    this.held.delete(id);
    this.finish(id);
  }

  /** Removes kept events from the store, those done in the same turn together. */
  private finish(id: string): void {
    if (!this.kept || this.stopped) return;
    this.done.push(id);
    if (this.done.length > 1) return;
    const removal: Promise<void> = new Promise((resolve) => setImmediate(resolve))
      .then(() => this.remove())
      .finally(() => this.removing.delete(removal));
    this.removing.add(removal);
  }

  private async remove(): Promise<void> {
    const ids = this.done;
    this.done = [];
    try {
      await this.kept?.done(ids);
    } catch (error) {
      // (Left kept — the database is away — they run again elsewhere once their leases run out.)
      this.log()?.warn(
        { appId: this.app.appId, events: ids.length, reason: (error as Error).message },
        "database trigger events could not be marked run: they may run again",
      );
    }
  }

  /**
   * The server stops (after its drain): nothing more starts, and a kept event not run to its end
   * (waiting, or cut by the stop) stays in the store for another instance; those run are removed.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const run of this.running) run.waiting.length = 0;
    await Promise.all(this.removing);
  }

  private start(run: Running): void {
    if (this.stopped) return;
    const { trigger } = run;
    const most = trigger.unordered === true ? this.limits.unorderedRuns : 1;
    while (run.active < most && run.waiting.length > 0) {
      const { event, id } = run.waiting.shift()!;
      run.active++;
      void this.app
        .runTriggerFunction(trigger.functionName, [event])
        .then(
          () => undefined,
          (error: unknown) => this.failed(trigger, (error as Error).message),
        )
        .finally(() => {
          run.active--;
          this.release(id);
          if (run.notRun > 0 && run.active === 0 && run.waiting.length === 0) {
            this.log()?.warn(
              { appId: this.app.appId, trigger: trigger.name, notRun: run.notRun },
              "database trigger caught up",
            );
            run.notRun = 0;
          }
          this.start(run);
        });
    }
  }

  /** The event as the trigger's function gets it, or undefined when its match does not take it. */
  private eventFor({ trigger, matches }: Running, change: ChangeEvent, base: Document): Document | undefined {
    const event: Document = { ...base };
    // Inserts and replacements always carry the document; updates when the trigger asks.
    if (change.operationType === "update" && trigger.fullDocument !== true) delete event.fullDocument;
    if (trigger.fullDocumentBeforeChange === true && change.operationType !== "insert" && change.before)
      event.fullDocumentBeforeChange = change.before;
    // The match and the projection under the app's query limits, at the app's time of the change:
    // one `$$NOW` for both (docs/decisions/0063).
    const decide = () => {
      if (matches && !matches(event)) return undefined;
      if (trigger.project && Object.keys(trigger.project).length > 0)
        return find([event], {}, { projection: trigger.project })[0] ?? {};
      return event;
    };
    return withQueryLimits(queryLimitsOf(this.app.config), decide, { now: this.app.clock.now() });
  }

  private failed(trigger: Trigger, reason: string): void {
    this.log()?.warn({ appId: this.app.appId, trigger: trigger.name, reason }, "database trigger failed");
  }
}

/** Whether a change is of the trigger's namespace and operation types. */
function concerns(trigger: Trigger, change: ChangeEvent): boolean {
  return (
    trigger.database === change.database &&
    (trigger.collection === undefined || trigger.collection === change.collection) &&
    trigger.operationTypes.includes(operationOf[change.operationType])
  );
}
