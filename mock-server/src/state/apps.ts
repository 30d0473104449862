/**
 * The registry of app namespaces, by app id and by domain id (tokens name their app's domain).
 */
import { type AppConfig, deepMerge } from "../config/app-config.ts";
import type { FunctionFolders } from "../functions/function-folder.ts";
import { AppRuntime, type AppTemplate } from "./app-runtime.ts";
import type { EventBus } from "./events.ts";
import { randomHex } from "./ids.ts";
import type { MailOutbox } from "./mail.ts";

export class AppRegistry {
  private readonly apps = new Map<string, AppRuntime>();
  private readonly byDomain = new Map<string, AppRuntime>();

  constructor(
    private readonly mail: MailOutbox,
    private readonly events: EventBus,
    private readonly folders: FunctionFolders,
    /** The template new apps are made from (the default app folder). */
    readonly defaultTemplate: AppTemplate,
  ) {}

  get size(): number {
    return this.apps.size;
  }

  get(appId: string): AppRuntime | undefined {
    return this.apps.get(appId);
  }

  byDomainId(domainId: string): AppRuntime | undefined {
    return this.byDomain.get(domainId);
  }

  list(): AppRuntime[] {
    return [...this.apps.values()];
  }

  has(appId: string): boolean {
    return this.apps.has(appId);
  }

  /** An app object that is not registered yet (state import builds all apps before swapping them in). */
  build(appId: string, template: AppTemplate, createdAt: number, clockOffsetMs: number): AppRuntime {
    return new AppRuntime(appId, template, createdAt, this.folders, clockOffsetMs);
  }

  /** Registers a built app. */
  adopt(app: AppRuntime): void {
    if (this.apps.has(app.appId)) throw new Error(`an app with id '${app.appId}' exists`);
    this.register(app);
  }

  private register(app: AppRuntime): void {
    const appId = app.appId;
    this.apps.set(appId, app);
    this.byDomain.set(app.domainId, app);
    app.data.subscribe((change) =>
      this.events.emit({
        type: "data",
        appId,
        action: change.operationType,
        detail: { database: change.database, collection: change.collection },
      }),
    );
    this.events.emit({ type: "app", appId, action: "created" });
  }

  /** A new app from a template (the default one unless given), with config overrides deep-merged. */
  create(
    options: {
      appId?: string;
      overrides?: AppConfig;
      template?: AppTemplate;
      createdAt?: number;
      clockOffsetMs?: number;
    } = {},
  ): AppRuntime {
    const appId = options.appId ?? `app-${randomHex(6)}`;
    if (this.apps.has(appId)) throw new Error(`an app with id '${appId}' exists`);
    const base = options.template ?? this.defaultTemplate;
    const template: AppTemplate = {
      appDir: base.appDir,
      config: options.overrides
        ? deepMerge(structuredClone(base.config), options.overrides)
        : structuredClone(base.config),
    };
    const app = this.build(appId, template, options.createdAt ?? Date.now(), options.clockOffsetMs ?? 0);
    this.register(app);
    return app;
  }

  delete(appId: string): boolean {
    const app = this.apps.get(appId);
    if (!app) return false;
    this.apps.delete(appId);
    this.byDomain.delete(app.domainId);
    app.close();
    this.mail.clear({ appId });
    this.events.emit({ type: "app", appId, action: "deleted" });
    return true;
  }

  reset(appId: string): boolean {
    const app = this.apps.get(appId);
    if (!app) return false;
    app.reset();
    this.mail.clear({ appId });
    this.events.emit({ type: "app", appId, action: "reset" });
    return true;
  }

  clear(): void {
    for (const appId of [...this.apps.keys()]) this.delete(appId);
  }
}
