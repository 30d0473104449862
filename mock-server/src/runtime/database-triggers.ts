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
 */
import type { FastifyBaseLogger } from "fastify";
import { changeDocument } from "../data/change-events.ts";
import type { ChangeEvent, Document } from "../data/documents.ts";
import { compileQuery, find } from "../data/query-engine.ts";
import type { ControlSchemas } from "../openapi/types.ts";
import type { TriggerEventStore } from "../store/store.ts";
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

  constructor(
    private readonly app: TriggerApp,
    private readonly log: () => FastifyBaseLogger | undefined,
    private readonly limits: TriggerLimits = triggerLimits,
    private readonly kept?: TriggerEventStore,
  ) {
    for (const trigger of app.config.triggers ?? []) {
      if (trigger.type !== "DATABASE" || trigger.disabled === true) continue;
      let matches: Running["matches"] = null;
      if (trigger.match && Object.keys(trigger.match).length > 0) {
        try {
          const query = compileQuery(trigger.match);
          matches = (event) => query.test(event);
        } catch (error) {
          this.failed(trigger, `its match cannot be evaluated: ${(error as Error).message}`);
          continue;
        }
      }
      this.running.push({ trigger, matches, waiting: [], active: 0, notRun: 0 });
    }
  }

  /** Whether the app has a database trigger to run. */
  get size(): number {
    return this.running.length;
  }

  /** Whether some trigger runs for changes of this kind (the events the store keeps). */
  concerns(change: ChangeEvent): boolean {
    return this.running.some(({ trigger }) => concerns(trigger, change));
  }

  /**
   * A change this instance committed (or a kept event it claimed): the triggers it concerns take
   * its event.
   */
  handle(change: ChangeEvent): void {
    const id = change.durableId;
    // (A kept event this instance holds already, claimed again after its lease ran out: run once here.)
    if (id !== undefined && this.held.has(id)) return;
    let event: Document | undefined;
    const taken: [Running, Document][] = [];
    for (const run of this.running) {
      const { trigger } = run;
      if (!concerns(trigger, change)) continue;
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
    if (matches && !matches(event)) return undefined;
    if (trigger.project && Object.keys(trigger.project).length > 0)
      return find([event], {}, { projection: trigger.project })[0] ?? {};
    return event;
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
