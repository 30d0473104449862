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
 * Ordered triggers (the default) run one event after another, in this instance's commit order.
 */
import type { FastifyBaseLogger } from "fastify";
import { changeDocument } from "../data/change-events.ts";
import type { ChangeEvent, Document } from "../data/documents.ts";
import { compileQuery, find } from "../data/query-engine.ts";
import type { ControlSchemas } from "../openapi/types.ts";
import type { TriggerApp } from "./auth-triggers.ts";

type Trigger = ControlSchemas["DatabaseTrigger"];

const operationOf = { insert: "INSERT", update: "UPDATE", replace: "REPLACE", delete: "DELETE" } as const;

interface Running {
  trigger: Trigger;
  matches: ((event: Document) => boolean) | null;
  /** The last event's run, for ordered triggers to wait on. */
  last: Promise<void>;
}

export class DatabaseTriggers {
  private readonly running: Running[] = [];
  private increment = 0;

  constructor(
    private readonly app: TriggerApp,
    private readonly log: () => FastifyBaseLogger | undefined,
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
      this.running.push({ trigger, matches, last: Promise.resolve() });
    }
  }

  /** Whether the app has a database trigger to run. */
  get size(): number {
    return this.running.length;
  }

  /** A change this instance committed: the triggers it concerns run (ordered ones after the last). */
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
      if (!given) continue;
      const start = () =>
        this.app.runTriggerFunction(trigger.functionName, [given]).then(
          () => undefined,
          (error: unknown) => this.failed(trigger, (error as Error).message),
        );
      if (trigger.unordered === true) void start();
      else run.last = run.last.then(start);
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
