/**
 * One app namespace: its settings and everything it holds (users, sessions, keys, tokens, clock,
 * faults, journal). Apps never share state; a test creates its own.
 */
import type { AppConfig } from "../config/app-config.ts";
import { type Collection, DataStore } from "../data/collections.ts";
import { toEJSON } from "../data/documents.ts";
import { AppFunctions } from "../functions/app-functions.ts";
import type { FunctionFolders } from "../functions/function-folder.ts";
import { ApiKeyStore } from "./api-keys.ts";
import { AuthTokenStore } from "./auth-tokens.ts";
import { type Clock, createClock } from "./clock.ts";
import { FaultStore } from "./faults.ts";
import { stableObjectIdHex } from "./ids.ts";
import { Journal } from "./journal.ts";
import { SessionStore } from "./sessions.ts";
import { UserStore } from "./users.ts";

export interface AppTemplate {
  config: AppConfig;
  /** The App Services app folder its functions come from, if any. */
  appDir: string | null;
}

export class AppRuntime {
  readonly domainId: string;
  readonly clock: Clock;
  readonly users = new UserStore();
  readonly sessions = new SessionStore();
  readonly apiKeys = new ApiKeyStore();
  readonly authTokens = new AuthTokenStore();
  readonly faults = new FaultStore();
  readonly journal = new Journal();
  readonly data = new DataStore();
  readonly functions: AppFunctions;
  /** Requests being served now (the per-app concurrency cap counts these). */
  inFlight = 0;
  /** Custom user data documents by user id, for one version of their collection. */
  private customDataIndex: {
    collection: Collection;
    version: number;
    field: string;
    byUser: Map<string, Record<string, unknown>>;
  } | null = null;
  /** Change streams open now. */
  watchers = 0;
  /** Closers of open change streams (ended when the app is reset or deleted). */
  readonly streams = new Set<(reason: string) => void>();

  constructor(
    readonly appId: string,
    readonly template: AppTemplate,
    readonly createdAt: number,
    folders: FunctionFolders,
    clockOffsetMs = 0,
  ) {
    this.domainId = stableObjectIdHex("domain", appId);
    this.clock = createClock(clockOffsetMs);
    this.functions = new AppFunctions(this, template.appDir ? folders.get(template.appDir) : null);
  }

  get config(): AppConfig {
    return this.template.config;
  }

  get appDir(): string | null {
    return this.template.appDir;
  }

  /** The id of one of the app's provider configurations (stable for the app id). */
  providerId(provider: string): string {
    return stableObjectIdHex("provider", this.appId, provider);
  }

  /**
   * The user's custom data (the configured collection's document whose user-id field is the user's
   * id), as canonical Extended JSON for the access token's `user_data` claim.
   */
  customUserData(userId: string): Record<string, unknown> | undefined {
    const config = this.config.customUserData;
    if (!config?.enabled || !config.database || !config.collection || !config.userIdField) return undefined;
    const collection = this.data.existing(config.database, config.collection);
    if (!collection || collection.size === 0) return undefined;
    // Indexed by user id, rebuilt only after the collection changed (logins must not scan it).
    let index = this.customDataIndex;
    const field = config.userIdField;
    if (index?.collection !== collection || index.version !== collection.version || index.field !== field) {
      const byUser = new Map<string, Record<string, unknown>>();
      for (const doc of collection.values()) {
        const id = doc[field];
        if (typeof id === "string" && !byUser.has(id)) byUser.set(id, doc);
      }
      index = { collection, version: collection.version, field, byUser };
      this.customDataIndex = index;
    }
    const doc = index.byUser.get(userId);
    return doc ? (toEJSON(doc) as Record<string, unknown>) : undefined;
  }

  /** Ends what runs in the background for this app: change streams and the function worker. */
  close(): void {
    this.closeStreams("the app was deleted");
    this.functions.close();
  }

  closeStreams(reason: string): void {
    for (const close of [...this.streams]) close(reason);
  }

  /** Deletes a user with its e-mail/password registration, sessions, API keys and tokens. */
  deleteUser(userId: string): boolean {
    const user = this.users.removeUser(userId);
    if (!user) return false;
    this.sessions.removeForUser(userId);
    this.apiKeys.removeForUser(userId);
    return true;
  }

  /** Back to the initial state: no users, sessions, keys, tokens, data, faults or journal; clock at real time. */
  reset(): void {
    this.closeStreams("the app was reset");
    this.functions.close();
    this.data.clear();
    this.users.clear();
    this.sessions.clear();
    this.apiKeys.clear();
    this.authTokens.clear();
    this.faults.clear();
    this.journal.clear();
    this.clock.set(0);
  }
}
