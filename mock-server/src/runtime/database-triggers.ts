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
 */
import type { FastifyBaseLogger } from "fastify";
import { changeDocument } from "../data/change-events.ts";
import type { ChangeEvent, Document } from "../data/documents.ts";
import { compileQuery, find } from "../data/query-engine.ts";
import type { ControlSchemas } from "../openapi/types.ts";
import type { TriggerApp } from "./auth-triggers.ts";

type Trigger = ControlSchemas["DatabaseTrigger"];

const operationOf = { insert: "INSERT", update: "UPDATE", replace: "REPLACE", delete: "DELETE" } as const;

/** How many events a trigger holds (waiting or running), and how many an unordered one runs at once. */
export interface TriggerLimits {
  backlog: number;
  unorderedRuns: number;
}

export const triggerLimits: TriggerLimits = { backlog: 1000, unorderedRuns: 10 };

interface Running {
  trigger: Trigger;
  matches: ((event: Document) => boolean) | null;
  /** Events taken, not yet run, oldest first. */
  waiting: Document[];
  /** Runs under way. */
  active: number;
  /** Events not run since the trigger fell behind (0: it keeps up). */
  notRun: number;
}

export class DatabaseTriggers {
  private readonly running: Running[] = [];
  private increment = 0;

  constructor(
    private readonly app: TriggerApp,
    private readonly log: () => FastifyBaseLogger | undefined,
    private readonly limits: TriggerLimits = triggerLimits,
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

  /** A change this instance committed: the triggers it concerns take its event. */
  handle(change: ChangeEvent): void {
    let event: Document | undefined;
    for (const run of this.running) {
      const { trigger } = run;
      if (trigger.database !== change.database) continue;
      if (trigger.collection !== undefined && trigger.collection !== change.collection) continue;
      if (!trigger.operationTypes.includes(operationOf[change.operationType])) continue;
      event ??= changeDocument(change, Math.floor(this.app.clock.now() / 1000), ++this.increment);
      let given: Document | undefined;
      try {
        given = this.eventFor(run, change, event);
      } catch (error) {
        // (Its match or projection failed on this event: the write that made it is not affected.)
        this.failed(trigger, `its match or projection failed: ${(error as Error).message}`);
        continue;
      }
      if (given) this.take(run, given);
    }
  }

  /** Queues an event, or (the backlog full, or behind) leaves it, then starts what may start. */
  private take(run: Running, event: Document): void {
    const { backlog } = this.limits;
    if (run.notRun > 0 || run.waiting.length + run.active >= backlog) {
      if (run.notRun++ === 0) {
        this.log()?.warn(
          { appId: this.app.appId, trigger: run.trigger.name, backlog },
          "database trigger fell behind: its events are not run until its backlog has drained",
        );
      }
      return;
    }
    run.waiting.push(event);
    this.start(run);
  }

  private start(run: Running): void {
    const { trigger } = run;
    const most = trigger.unordered === true ? this.limits.unorderedRuns : 1;
    while (run.active < most && run.waiting.length > 0) {
      const event = run.waiting.shift()!;
      run.active++;
      void this.app
        .runTriggerFunction(trigger.functionName, [event])
        .then(
          () => undefined,
          (error: unknown) => this.failed(trigger, (error as Error).message),
        )
        .finally(() => {
          run.active--;
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
