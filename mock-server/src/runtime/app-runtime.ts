/**
 * One app as this instance serves it: its record and its records in the store (shared by every
 * instance), plus what stays per instance — the clock, faults, request journal, function process,
 * open change streams, the clients' function calls running and the concurrency count. Apps never share state; a test creates its own.
 */
import type { FastifyBaseLogger } from "fastify";
import type { AppConfig } from "../config/app-config.ts";
import { type Document, toEJSON, toEJSONText } from "../data/documents.ts";
import type { UserPrincipal } from "../data/rules.ts";
import { AppFunctions } from "../functions/app-functions.ts";
import type { FunctionFolders } from "../functions/function-folder.ts";
import type { FunctionInspector } from "../functions/function-inspector.ts";
import type { OutboundHttp } from "../functions/outbound-http.ts";
import { type Clock, createClock } from "../state/clock.ts";
import type { EventBus } from "../state/events.ts";
import { FaultStore } from "../state/faults.ts";
import { stableObjectIdHex } from "../state/ids.ts";
import { Journal } from "../state/journal.ts";
import {
  type AppRecord,
  type AppStore,
  type CustomDataPlace,
  type FoundCustomData,
  maxTokenUserDataBytes,
  OversizedCustomData,
  QuotaExceededError,
  type ScheduleClaim,
} from "../store/store.ts";
import { ActionTurns } from "./action-turns.ts";
import type { KeptAuthEvents } from "./auth-triggers.ts";
import { HeldCounts } from "./held-counts.ts";
import { ScheduledTriggers } from "./scheduled-triggers.ts";
import { type StreamEnd, StreamRegistry } from "./streams.ts";

export interface AppTemplate {
  config: AppConfig;
  /** The App Services app folder its functions come from, if any. */
  appDir: string | null;
}

/** The id tokens name an app by (stable for the app id, so exports and instances agree). */
export const domainIdOf = (appId: string) => stableObjectIdHex("domain", appId);

/** Users whose oversized custom data an app's log names, at most (then the log has said enough). */
const maxOversizedSaid = 1_000;

export class AppRuntime {
  readonly clock: Clock;
  readonly faults = new FaultStore();
  readonly journal = new Journal();
  readonly functions: AppFunctions;
  /** Each caller's MongoDB actions from clients, taking turns (decision 0018). */
  readonly actionTurns = new ActionTurns();
  /** Where its authentication trigger events are kept while they run (runtime/apps.ts sets it where the store keeps them). */
  keptAuthEvents: KeptAuthEvents | null = null;
  /** The watch of the app's scheduled triggers (runtime/scheduled-triggers.ts), when it has any. */
  private schedules: ScheduledTriggers | null = null;
  /** Requests being served now (the per-app concurrency cap counts these; open change streams do not). */
  inFlight = 0;
  /** Clients' calls of the app's functions running now, by user and address (their caps count these). */
  readonly functionCalls = new HeldCounts();
  /** Change streams open on this instance, with their sessions (runtime/streams.ts). */
  readonly streams: StreamRegistry;

  constructor(
    readonly record: AppRecord,
    readonly store: AppStore,
    folders: FunctionFolders,
    private readonly events: EventBus,
    /** Where the functions' `context.http` requests go out. */
    readonly outboundHttp: OutboundHttp,
    /** With `--inspect-functions`: where the function process waits for a debugger. */
    readonly functionInspector: FunctionInspector | null,
    clockOffsetMs = 0,
  ) {
    this.clock = createClock(clockOffsetMs, Date.now, (movedMs) => {
      this.streams.clockChanged();
      this.schedules?.clockChanged(movedMs < 0);
      // A clock moved forward may take anonymous users past their lifetime: they go now.
      void this.removeEndedUsers();
    });
    this.streams = new StreamRegistry(this.clock);
    this.functions = new AppFunctions(this, record.appDir ? folders.get(record.appDir) : null, events);
  }

  /** Change streams open now. */
  get watchers(): number {
    return this.streams.size;
  }

  get appId(): string {
    return this.record.appId;
  }

  get domainId(): string {
    return this.record.domainId;
  }

  get createdAt(): number {
    return this.record.createdAt;
  }

  get config(): AppConfig {
    return this.record.config;
  }

  get appDir(): string | null {
    return this.record.appDir;
  }

  get users() {
    return this.store.users;
  }

  get sessions() {
    return this.store.sessions;
  }

  get apiKeys() {
    return this.store.apiKeys;
  }

  get authTokens() {
    return this.store.authTokens;
  }

  get data() {
    return this.store.data;
  }

  /** The id of one of the app's provider configurations (stable for the app id). */
  providerId(provider: string): string {
    return stableObjectIdHex("provider", this.appId, provider);
  }

  /**
   * The user's custom data (the configured collection's document whose user-id field is the user's
   * id) for an access token: its document, null without one, or OversizedCustomData — unread where
   * the store would otherwise read it whole — when it is longer than a token carries.
   */
  async customUserDataForToken(userId: string): Promise<FoundCustomData> {
    const config = this.customUserDataPlace();
    if (!config) return null;
    const { database, collection, userIdField } = config;
    const data = this.store.data;
    const found = data.findByFieldWithin
      ? await data.findByFieldWithin(database, collection, userIdField, userId, maxTokenUserDataBytes)
      : await data.findByField(database, collection, userIdField, userId);
    return found ?? null;
  }

  /** The user's custom data document as stored (for rules that name `%%user.custom_data`). */
  async customUserDocument(userId: string): Promise<Document | undefined> {
    const config = this.customUserDataPlace();
    if (!config) return undefined;
    return (
      (await this.store.data.findByField(config.database, config.collection, config.userIdField, userId)) ?? undefined
    );
  }

  /**
   * A rule expression's `%function` (data access rules): the function runs as the user whose
   * action the rule decides, with that action's request, under its own settings (a function set
   * to run as system does; a private one can be called).
   */
  callRuleFunction(name: string, args: unknown[], principal: UserPrincipal): Promise<unknown> {
    return this.functions.run(name, args, {
      user: principal.user,
      system: false,
      ...(principal.request ? { request: principal.request } : {}),
      ...(principal.ruleDepth ? { ruleDepth: principal.ruleDepth } : {}),
    });
  }

  /** Trigger runs under way (each settles, never rejects), for a shutdown to wait on. */
  private readonly triggerRuns = new Set<Promise<void>>();

  /** A trigger's function (authentication, database, scheduled; decision 0031): as system, as the service ran them. */
  runTriggerFunction(name: string, args: unknown[]): Promise<unknown> {
    const run = this.functions.run(name, args, { user: null, system: true });
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.triggerRuns.add(settled);
    void settled.then(() => this.triggerRuns.delete(settled));
    return run;
  }

  /** How many trigger runs are under way. */
  get triggersRunning(): number {
    return this.triggerRuns.size;
  }

  /**
   * Resolves when no trigger run is under way: those running now and those they lead to (a
   * database trigger's next queued event, a run's own writes' triggers).
   */
  async triggersSettled(): Promise<void> {
    while (this.triggerRuns.size > 0) {
      await Promise.all(this.triggerRuns);
      // (A finished run starts the next queued event in its own settlement's turns.)
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /**
   * The `user_data` claim of custom data found (by the store, with a login or a refresh), or none:
   * without custom data, and past `maxTokenUserDataBytes` (then `oversized` says how long it is).
   */
  tokenUserData(found: FoundCustomData): { claim?: Record<string, unknown>; oversized?: number } {
    if (found === null) return {};
    const bytes = found instanceof OversizedCustomData ? found.bytes : this.customDataBytes(found);
    if (bytes > maxTokenUserDataBytes) return { oversized: bytes };
    return { claim: toEJSON(found as Document) as Record<string, unknown> };
  }

  /** Users whose custom data was left out of a token, said once each (at most `maxOversizedSaid`). */
  private readonly oversizedSaid = new Set<string>();

  /** Whether it is the first time this user's custom data was too large for its token (for the log). */
  firstOversized(userId: string): boolean {
    if (this.oversizedSaid.has(userId) || this.oversizedSaid.size >= maxOversizedSaid) return false;
    this.oversizedSaid.add(userId);
    return true;
  }

  /**
   * The same as canonical Extended JSON text, `{}` when there is none (`context.user.custom_data`
   * of each function call): at once when the store answers at once, the text kept per stored
   * document (the in-memory store replaces a document on every change, never edits it).
   */
  customUserDataText(userId: string): string | Promise<string> {
    const config = this.customUserDataPlace();
    if (!config) return "{}";
    const data = this.store.data;
    if (!data.findByFieldNow)
      return data
        .findByField(config.database, config.collection, config.userIdField, userId)
        .then((doc) => this.customDataText(doc));
    return this.customDataText(data.findByFieldNow(config.database, config.collection, config.userIdField, userId));
  }

  private readonly customDataTexts = new WeakMap<Document, string>();

  private customDataText(doc: Document | undefined): string {
    if (!doc) return "{}";
    let text = this.customDataTexts.get(doc);
    if (text === undefined) {
      text = toEJSONText(doc);
      this.customDataTexts.set(doc, text);
    }
    return text;
  }

  private readonly customDataSizes = new WeakMap<Document, number>();

  /** The UTF-8 bytes of a custom data document's canonical Extended JSON (kept per stored document). */
  private customDataBytes(doc: Document): number {
    let bytes = this.customDataSizes.get(doc);
    if (bytes === undefined) {
      bytes = Buffer.byteLength(this.customDataText(doc));
      this.customDataSizes.set(doc, bytes);
    }
    return bytes;
  }

  /** Where the app keeps its users' custom data, when it is enabled. */
  customUserDataPlace(): CustomDataPlace | undefined {
    const config = this.config.customUserData;
    if (!config?.enabled || !config.database || !config.collection || !config.userIdField) return undefined;
    return { database: config.database, collection: config.collection, userIdField: config.userIdField };
  }

  /** Ends what runs in the background for this app: change streams, schedules, the function process. */
  close(reason = "the app was deleted", cause: StreamEnd = "session"): void {
    this.closeStreams(reason, cause);
    this.schedules?.close();
    this.functions.close();
  }

  /** Starts watching the app's scheduled triggers (if it has any), their failures logged to `log`. */
  watchSchedules(log: () => FastifyBaseLogger | undefined): void {
    if (this.schedules) return;
    const schedules = new ScheduledTriggers(this, log);
    if (schedules.size > 0) this.schedules = schedules;
  }

  /** Resolves once the scheduled triggers' check and runs started on this instance have ended. */
  schedulesSettled(): Promise<void> {
    return this.schedules?.settled() ?? Promise.resolve();
  }

  /** A scheduled trigger's time, claimed for this instance to run (the store decides). */
  claimScheduledTime(trigger: string, time: number, putBackBefore: number): Promise<ScheduleClaim> {
    return this.store.claimScheduledTime(trigger, time, putBackBefore);
  }

  closeStreams(reason: string, cause: StreamEnd = "session"): void {
    this.streams.closeAll(reason, cause);
  }

  /**
   * Removes the users past their lifetime by this app's clock, where the store removes them on the
   * app's clock (memory: its one instance's clocks are the app's; the database's retention sweeps
   * remove them by real time); each is announced as a deletion. How many went.
   */
  async removeEndedUsers(): Promise<number> {
    const ended = (await this.store.removeEndedUsers?.(this.clock.now())) ?? [];
    for (const id of ended) this.events.emit({ type: "user", appId: this.appId, action: "deleted", id });
    return ended.length;
  }

  /**
   * A write that adds a user or a registration. Refused at the app's `users` limit, it is tried
   * once more after the anonymous users past their lifetime are removed, if there were any: their
   * places are free from the instant they ended, not from the next sweep (every 10 minutes).
   */
  async withRoomForUsers<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (!(error instanceof QuotaExceededError) || error.quota !== "users") throw error;
      if ((await this.removeEndedUsers()) === 0) throw error;
      return write();
    }
  }

  /** The per-instance part of a reset: streams end, no faults or journal, clock at real time. */
  resetLocal(): void {
    this.closeStreams("the app was reset");
    this.functions.close();
    this.faults.clear();
    this.journal.clear();
    this.clock.set(0);
  }
}
