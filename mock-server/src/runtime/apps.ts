/**
 * The apps this instance serves, by app id and by domain id (tokens name their app's domain): the
 * store's app records, each with its per-instance runtime, built on first use and dropped when any
 * instance deletes, resets or reconfigures the app (the store reports every change).
 */
import type { FastifyBaseLogger } from "fastify";
import { type AppConfig, deepMerge } from "../config/app-config.ts";
import type { FunctionProcessCounts } from "../functions/app-functions.ts";
import type { FunctionFolders } from "../functions/function-folder.ts";
import type { FunctionInspector } from "../functions/function-inspector.ts";
import type { OutboundHttp } from "../functions/outbound-http.ts";
import type { EventBus } from "../state/events.ts";
import { randomHex } from "../state/ids.ts";
import type {
  AppChange,
  AppRecord,
  AppRecords,
  KeptEvent,
  TriggerEventStore,
  TriggerSuspension,
} from "../store/store.ts";
import { AppRuntime, type AppTemplate, domainIdOf } from "./app-runtime.ts";
import { KeptAuthEvents, runAuthTrigger } from "./auth-triggers.ts";
import { DatabaseTriggers } from "./database-triggers.ts";

export class AppExistsError extends Error {}

const hasSchedules = (config: AppConfig) =>
  (config.triggers ?? []).some((trigger) => trigger.type === "SCHEDULED" && trigger.disabled !== true);

export class AppRegistry {
  private readonly runtimes = new Map<string, AppRuntime>();
  private readonly byDomain = new Map<string, AppRuntime>();
  /** Ends each runtime's subscription to its app's data changes (when the runtime is dropped). */
  private readonly unsubscribers = new Map<AppRuntime, () => void>();
  /** Each runtime's database triggers; and those of dropped runtimes still running kept events. */
  private readonly triggers = new Map<AppRuntime, DatabaseTriggers>();
  private readonly droppedTriggers = new Set<DatabaseTriggers>();
  /** Authentication trigger events kept while they run, every app's (where the store keeps them). */
  private readonly keptAuth: KeptAuthEvents | null;
  /** Clock offsets to give runtimes when they are next built (a state import). */
  private readonly clockOffsets = new Map<string, number>();
  /** Where the runtimes' background work (database triggers) logs its failures (the server's log). */
  log: FastifyBaseLogger | undefined;
  /** Function processes seen busy and run out of memory, every app's (metrics). */
  readonly functionCounts: FunctionProcessCounts = { busy: 0, outOfMemory: 0 };

  constructor(
    private readonly records: AppRecords,
    private readonly events: EventBus,
    private readonly folders: FunctionFolders,
    /** The template new apps are made from (the default app folder). */
    readonly defaultTemplate: AppTemplate,
    /** Where the apps' functions' `context.http` requests go out. */
    private readonly outboundHttp: OutboundHttp,
    /** With `--inspect-functions`: where the apps' function processes wait for a debugger. */
    private readonly functionInspector: FunctionInspector | null = null,
    /** Where the store keeps database trigger events with their writes (decision 0031). */
    private readonly keptEvents: TriggerEventStore | null = null,
  ) {
    this.keptAuth = keptEvents ? new KeptAuthEvents(keptEvents) : null;
    records.onChange((appId, change) => this.changed(appId, change));
    // Sessions ended on any instance: the change streams this one has open on them end.
    records.onSessionsEnded((appId, ended) => this.runtimes.get(appId)?.streams.sessionsEnded(ended));
  }

  /** The runtime of a record: the cached one, or a new one. */
  private runtimeOf(record: AppRecord): AppRuntime {
    const cached = this.runtimes.get(record.appId);
    if (cached) return cached;
    const app = new AppRuntime(
      record,
      this.records.scope(record.appId),
      this.folders,
      this.events,
      this.outboundHttp,
      this.functionInspector,
      this.clockOffsets.get(record.appId) ?? 0,
    );
    this.clockOffsets.delete(record.appId);
    this.runtimes.set(record.appId, app);
    this.byDomain.set(app.domainId, app);
    // The inspector's live view, and the app's database triggers: this instance's own writes (control
    // events are per instance; each write runs the triggers on the instance that made it).
    app.keptAuthEvents = this.keptAuth;
    // (A trigger suspended or resumed, as this instance learns it: the inspector's app page shows it.)
    const triggers = new DatabaseTriggers(
      app,
      () => this.log,
      undefined,
      this.keptEvents ?? undefined,
      app.store,
      () => this.events.emit({ type: "app", appId: app.appId, action: "triggers" }),
    );
    this.triggers.set(app, triggers);
    // Where the store can keep them, the events the triggers run are written with their changes.
    if (this.keptEvents && triggers.size > 0) app.data.keepEvents?.((change) => triggers.concerns(change));
    const subscribed = app.data.subscribe(
      (change) => {
        this.events.emit({
          type: "data",
          appId: app.appId,
          action: change.operationType,
          detail: { database: change.database, collection: change.collection },
        });
        if (triggers.size > 0) triggers.handle(change);
      },
      { local: true },
    );
    this.unsubscribers.set(app, () => void subscribed.then((unsubscribe) => unsubscribe()).catch(() => undefined));
    app.watchSchedules(() => this.log);
    app.functions.logger = () => this.log;
    app.functions.counts = this.functionCounts;
    return app;
  }

  /**
   * Builds the runtime of every app with a scheduled trigger, so that this instance watches their
   * schedules whether or not a request comes for them (a start; and `changed` keeps it so).
   */
  async watchSchedules(): Promise<void> {
    for (const record of await this.records.list()) if (hasSchedules(record.config)) this.runtimeOf(record);
  }

  /** The app's runtime, if the app exists. */
  async get(appId: string): Promise<AppRuntime | undefined> {
    const cached = this.runtimes.get(appId);
    if (cached) return cached;
    const record = await this.records.get(appId);
    return record ? this.runtimeOf(record) : undefined;
  }

  async byDomainId(domainId: string): Promise<AppRuntime | undefined> {
    const cached = this.byDomain.get(domainId);
    if (cached) return cached;
    const record = await this.records.byDomainId(domainId);
    return record ? this.runtimeOf(record) : undefined;
  }

  /** The cached runtime of a domain, without asking the store (CORS and journal routing before auth). */
  cachedByDomainId(domainId: string): AppRuntime | undefined {
    return this.byDomain.get(domainId);
  }

  cached(appId: string): AppRuntime | undefined {
    return this.runtimes.get(appId);
  }

  /** Every app, oldest first. */
  async list(): Promise<AppRuntime[]> {
    return (await this.records.list()).map((record) => this.runtimeOf(record));
  }

  /** The runtimes this instance has built (shutdown ends their streams). */
  loaded(): AppRuntime[] {
    return [...this.runtimes.values()];
  }

  /** A new app from a template (the default one unless given), with config overrides deep-merged. */
  async create(
    options: { appId?: string | undefined; overrides?: AppConfig; template?: AppTemplate; createdAt?: number } = {},
  ): Promise<AppRuntime> {
    const { record } = this.recordOf(options);
    if (!(await this.records.create(record))) throw new AppExistsError(`an app with id '${record.appId}' exists`);
    return this.runtimeOf(record);
  }

  /**
   * Adds the app, or updates the settings of the app with this id (an app folder loaded at every
   * start). A custom-token key generated for the app when it was added is kept (the folder has none).
   */
  async upsert(options: { appId: string; template?: AppTemplate; overrides?: AppConfig }): Promise<AppRuntime> {
    const { record, keyGenerated } = this.recordOf(options);
    await this.records.upsert(record, { keepCustomTokenKey: keyGenerated });
    return (await this.get(record.appId))!;
  }

  private recordOf(options: {
    appId?: string | undefined;
    overrides?: AppConfig;
    template?: AppTemplate;
    createdAt?: number;
  }): { record: AppRecord; keyGenerated: boolean } {
    const appId = options.appId ?? `app-${randomHex(6)}`;
    const base = options.template ?? this.defaultTemplate;
    const config = options.overrides
      ? deepMerge(structuredClone(base.config), options.overrides)
      : structuredClone(base.config);
    // A custom-token provider without a key gets the app's own random one: a key shared by every
    // app made from one template would let anyone who read it mint a login for any user of any app.
    const customToken = config.providers?.["custom-token"];
    const keyGenerated = customToken !== undefined && !customToken.signingKey;
    if (customToken && keyGenerated) customToken.signingKey = randomHex(32);
    return {
      record: {
        appId,
        domainId: domainIdOf(appId),
        createdAt: options.createdAt ?? Date.now(),
        appDir: base.appDir,
        config,
      },
      keyGenerated,
    };
  }

  async delete(appId: string): Promise<boolean> {
    return this.records.delete(appId);
  }

  async reset(appId: string): Promise<boolean> {
    return this.records.reset(appId);
  }

  /** Gives the next runtime of each app this clock offset (after a state import). */
  setClockOffsets(offsets: Map<string, number>): void {
    for (const [appId, offset] of offsets) {
      const cached = this.runtimes.get(appId);
      if (cached) cached.clock.set(offset);
      else this.clockOffsets.set(appId, offset);
    }
  }

  /** The clock offset of an app on this instance (its runtime's, or the one it will start with). */
  clockOffsetOf(appId: string): number {
    return this.runtimes.get(appId)?.clock.offsetMs ?? this.clockOffsets.get(appId) ?? 0;
  }

  /** The app's database triggers suspended now, as this instance knows them (decision 0057). */
  async suspendedTriggers(app: AppRuntime): Promise<TriggerSuspension[]> {
    return (await this.triggers.get(app)?.suspendedTriggers()) ?? [];
  }

  /** Resumes one of the app's database triggers, on every instance. */
  async resumeTrigger(app: AppRuntime, name: string): Promise<void> {
    await this.triggers.get(app)?.resume(name);
  }

  /** Any instance changed an app: drop or reset what this one holds of it (and watch its schedules again). */
  private changed(appId: string, change: AppChange): void {
    if (change === "triggers") {
      // A trigger suspended or resumed: the runtime stays, its triggers read their suspensions again.
      const app = this.runtimes.get(appId);
      if (app) void this.triggers.get(app)?.readSuspensions();
      return;
    }
    if (change === "created" || change === "updated") void this.rebuildForSchedules(appId);
    const app = this.runtimes.get(appId);
    if (change === "reset") {
      app?.resetLocal();
      // (A reset ends the app's trigger suspensions with the rest of its records.)
      if (app) void this.triggers.get(app)?.readSuspensions();
    } else if (app && change !== "created") {
      this.runtimes.delete(appId);
      this.byDomain.delete(app.domainId);
      this.unsubscribers.get(app)?.();
      this.unsubscribers.delete(app);
      const triggers = this.triggers.get(app);
      this.triggers.delete(app);
      if (triggers && triggers.heldEvents().length > 0) this.droppedTriggers.add(triggers);
      app.close(change === "deleted" ? "the app was deleted" : "the app was reconfigured");
    }
    this.events.emit({ type: "app", appId, action: change });
  }

  private async rebuildForSchedules(appId: string): Promise<void> {
    const record = await this.records.get(appId).catch(() => undefined);
    if (record && hasSchedules(record.config)) this.runtimeOf(record);
  }

  /**
   * Waits for the trigger runs under way on this instance (and those they lead to) to end, at most
   * `ms`: how many were still running then (a shutdown cuts them).
   */
  async settleTriggers(ms: number): Promise<number> {
    const running = () => [...this.runtimes.values()].reduce((sum, app) => sum + app.triggersRunning, 0);
    if (running() === 0) return 0;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([...this.runtimes.values()].map((app) => app.triggersSettled())),
      new Promise((resolve) => (timer = setTimeout(resolve, ms))),
    ]);
    clearTimeout(timer);
    return running();
  }

  /** The kept trigger events this instance holds now (their leases are renewed). */
  heldTriggerEvents(): string[] {
    for (const triggers of this.droppedTriggers)
      if (triggers.heldEvents().length === 0) this.droppedTriggers.delete(triggers);
    return [
      ...[...this.triggers.values(), ...this.droppedTriggers].flatMap((triggers) => triggers.heldEvents()),
      ...(this.keptAuth?.held ?? []),
    ];
  }

  /**
   * A kept trigger event claimed from an instance that stopped renewing it: run by this one's
   * runtime of its app (an app or trigger that is no more lets it go). An authentication
   * trigger's run is not waited for.
   */
  async recoverTriggerEvent(kept: KeptEvent): Promise<void> {
    const record = await this.records.get(kept.appId);
    const runtime = record ? this.runtimeOf(record) : undefined;
    if ("auth" in kept) {
      const trigger = runtime?.config.triggers?.find(
        (t) => t.type === "AUTHENTICATION" && t.disabled !== true && t.name === kept.auth.trigger,
      );
      if (runtime && trigger?.type === "AUTHENTICATION")
        void runAuthTrigger(runtime, trigger, kept.auth.event, this.log, kept.id);
      else await this.keptEvents?.done([kept.id]);
      return;
    }
    const triggers = runtime ? this.triggers.get(runtime) : undefined;
    if (triggers) triggers.handle(kept.change);
    else if (kept.change.durableId !== undefined) await this.keptEvents?.done([kept.change.durableId]);
  }

  /** Stops the database triggers (after the drain): what they did not run stays kept for another instance. */
  async stopTriggers(): Promise<void> {
    if (this.keptAuth) this.keptAuth.stopped = true;
    await Promise.all([...this.triggers.values(), ...this.droppedTriggers].map((triggers) => triggers.stop()));
  }

  /** Ends every runtime's background work (shutdown). */
  close(): void {
    for (const app of this.runtimes.values()) app.close("the server is shutting down", "service");
  }
}
