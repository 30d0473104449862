/**
 * Everything the emulator holds, with no HTTP in sight: the store (memory or PostgreSQL), the apps
 * and EmailJS accounts this instance serves, the mail relay, the live events and the token key.
 * `app.ts` puts HTTP in front of it; tests can drive it directly.
 */
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import { deepMerge, oauth2ProviderNames } from "../config/app-config.ts";
import { loadAppFolder } from "../config/app-folder.ts";
import { type Budgets, defaultBudgets } from "../config/budgets.ts";
import type { EmulatorOptions } from "../config/options.ts";
import { defaultSweeps } from "../config/retention.ts";
import { ruleProblems } from "../data/rules.ts";
import { FunctionFolders } from "../functions/function-folder.ts";
import { FunctionInspector } from "../functions/function-inspector.ts";
import { OutboundHttp, outboundHosts } from "../functions/outbound-http.ts";
import { UnsentReplies, unsentReplyLimits } from "../http/unsent-replies.ts";
import { FakeIdentityProvider } from "../idp/fake-identity-provider.ts";
import { BuiltinEndpoints } from "../oauth2/builtin-endpoints.ts";
import { type EndpointSource, RemoteEndpoints } from "../oauth2/endpoints.ts";
import type { ControlSchemas } from "../openapi/types.ts";
import { type ControlEvent, EventBus } from "../state/events.ts";
import { randomHex, stableObjectIdHex } from "../state/ids.ts";
import { Hs256Key } from "../state/jwt.ts";
import { defaultPasswordWorkLimits, PasswordWork } from "../state/password-work.ts";
import { LocalCounters } from "../state/rate-counters.ts";
import { SmtpRelay } from "../state/smtp-relay.ts";
import { MemoryStore } from "../store/memory/memory-store.ts";
import { openStore } from "../store/open-store.ts";
import type { MailMessage, NewMail, Store } from "../store/store.ts";
import type { AppTemplate } from "./app-runtime.ts";
import { AppRegistry } from "./apps.ts";
import { type CreateEmailJsAccountRequest, EmailJsAccountExistsError, EmailJsAccounts } from "./emailjs-accounts.ts";
import { LargeRequests, largeRequestLimits } from "./large-requests.ts";
import { RetentionSweeper } from "./retention-sweeper.ts";
import { StreamBacklog } from "./stream-backlog.ts";
import { databaseLost } from "./streams.ts";
import { TriggerRecovery } from "./trigger-recovery.ts";

export type Readiness = ControlSchemas["Readiness"];

export class Emulator {
  readonly startedAt = Date.now();
  readonly events = new EventBus();
  readonly apps: AppRegistry;
  /** Where the functions' `context.http` requests go out (kept connections closed with the server). */
  private readonly outboundHttp: OutboundHttp;
  /** With `--inspect-functions`: where the function processes wait for a debugger. */
  readonly functionInspector: FunctionInspector | null;
  readonly functionFolders: FunctionFolders;
  readonly emailjs: EmailJsAccounts;
  /** Delivers captured mail over SMTP when `--smtp` is set. */
  readonly smtp: SmtpRelay | null;
  /**
   * The harness's fake identity provider (Google, Apple, Facebook), one tenant per app; none in
   * production.
   */
  readonly fakeIdentityProvider: FakeIdentityProvider | null;
  /** Where the OAuth 2.0 providers are reached (`--identity-provider`): `fake`, `real` or a URL. */
  readonly identityProvider: string;
  readonly oauth2: EndpointSource;
  /** This instance's SMTP delivery attempts by outcome (a refusal or an unreachable server: `retry`). */
  readonly mailDeliveries = { sent: 0, retry: 0, failed: 0 };
  /** Connections this instance closed as they came: their address held its cap (http/connection-cap.ts). */
  readonly refusedConnections = { overCap: 0 };
  /** What this instance shares among all its clients (`--budgets`, config/budgets.ts). */
  readonly budgets: Budgets;
  /** Requests with bodies of 16 KiB or more in flight on this instance (runtime/large-requests.ts). */
  readonly largeRequests: LargeRequests;
  /** How often each session refreshed its access token lately (production). */
  readonly sessionRefreshes = new LocalCounters();
  /** Large replies this instance's clients have not read yet (http/unsent-replies.ts). */
  readonly unsentReplies: UnsentReplies;
  /** Unsent change-stream events of this instance's streams, together (runtime/stream-backlog.ts). */
  readonly streamBacklog: StreamBacklog;
  /** Password hashes of this instance, at most a few at once, in turns per client (state/password-work.ts). */
  readonly passwords: PasswordWork;
  /**
   * Removes ended mail, expired tokens, sessions and anonymous users past their lifetime where the
   * store keeps them without end (the database).
   */
  readonly retention: RetentionSweeper | null;
  /** Database trigger events left by stopped instances, claimed and run (stores that keep them). */
  readonly triggerRecovery: TriggerRecovery | null;
  /** Removes anonymous users past their lifetime, each app by its clock, where no retention sweeper does (memory). */
  private readonly endedUserSweeps: NodeJS.Timeout | null;
  /** What the `--app` folders hold that this server does not run, per app (logged at start). */
  readonly notRun: { appId: string; dir: string; notRun: string[] }[] = [];
  private stopping = false;
  private key: Hs256Key;
  private secret: string;
  private readonly stopMailEvents: () => void;
  private readonly stopOutageWatch: () => void;
  private readonly stopAppWatch: () => void;

  /**
   * An emulator on a store (a new in-memory one unless given). `Emulator.open` also adds the default
   * app, the default EmailJS account and the `--app` folders; the constructor adds nothing.
   */
  constructor(
    readonly options: EmulatorOptions,
    readonly store: Store = new MemoryStore(),
  ) {
    this.secret = options.signingSecret ?? randomHex(32);
    this.key = new Hs256Key(this.secret, options.signingSecretFallbacks);
    this.budgets = { ...defaultBudgets, ...options.budgets };
    this.streamBacklog = new StreamBacklog(this.budgets.streams);
    this.largeRequests = new LargeRequests({
      bytes: this.budgets.bodies,
      idleMs: options.largeRequestIdleMs ?? largeRequestLimits.idleMs,
    });
    const { now, ...passwordWork } = options.passwordWork ?? {};
    this.passwords = new PasswordWork({ ...defaultPasswordWorkLimits(availableParallelism()), ...passwordWork }, now);
    this.unsentReplies = new UnsentReplies({
      bytes: this.budgets.replies,
      idleMs: options.unsentReplyIdleMs ?? unsentReplyLimits.idleMs,
    });
    // The relay's and the sweeps' lines, as JSON on stderr.
    const log =
      options.logLevel === "silent"
        ? {}
        : {
            log: (line: string, fields: Record<string, unknown>) =>
              process.stderr.write(`${JSON.stringify({ msg: line, ...fields })}\n`),
          };
    this.smtp = options.smtpUrl
      ? new SmtpRelay(store.mail, {
          url: options.smtpUrl,
          ...options.smtpRetry,
          onChange: (message) => {
            const state = message.delivery?.state;
            if (state === undefined) return;
            this.mailDeliveries[state === "sent" ? "sent" : state === "failed" ? "failed" : "retry"] += 1;
            this.mailEvent(message, `delivery-${state}`);
          },
          ...log,
        })
      : null;
    this.retention = store.retention
      ? new RetentionSweeper(store.retention, options.retention, {
          ...options.retentionSweeps,
          ...log,
        })
      : null;
    this.retention?.start();
    this.stopMailEvents = store.mail.onAdd((message) => {
      if (message.delivery?.state === "queued") this.smtp?.kick();
      this.mailEvent(message, "captured");
    });
    // Events from other instances may have been lost (a database outage): a change stream that
    // missed some must end rather than go on as if complete; clients reopen it.
    this.stopOutageWatch =
      store.onOutage?.(() => {
        for (const app of this.apps.loaded()) app.closeStreams(databaseLost, "service");
      }) ?? (() => undefined);
    // The fake provider is a testing feature: a production server defaults to the real ones (the
    // command line refuses `--identity-provider fake` with `--production`).
    this.identityProvider =
      options.production && options.identityProvider === "fake" ? "real" : options.identityProvider;
    this.fakeIdentityProvider = options.production ? null : new FakeIdentityProvider();
    this.oauth2 =
      this.identityProvider === "fake"
        ? new BuiltinEndpoints(this.fakeIdentityProvider!)
        : new RemoteEndpoints(this.identityProvider);
    // An app reset or deleted forgets its fake provider's accounts, codes and tokens.
    this.stopAppWatch = store.apps.onChange((appId, change) => {
      if (change === "reset" || change === "deleted") this.fakeIdentityProvider?.drop(appId);
    });
    this.functionFolders = new FunctionFolders(options.watchFunctions);
    this.outboundHttp = new OutboundHttp(outboundHosts(options.functionHttpHosts, options.production));
    this.functionInspector = options.inspectFunctions === null ? null : new FunctionInspector(options.inspectFunctions);
    this.apps = new AppRegistry(
      store.apps,
      this.events,
      this.functionFolders,
      defaultTemplate(options),
      this.outboundHttp,
      this.functionInspector,
      store.triggerEvents ?? null,
    );
    this.triggerRecovery = store.triggerEvents
      ? new TriggerRecovery(store.triggerEvents, this.apps, () => this.apps.log)
      : null;
    this.emailjs = new EmailJsAccounts(store.emailjs, emailJsDefaults(options), this.events);
    this.endedUserSweeps = this.retention
      ? null
      : setInterval(() => void this.removeEndedUsers(), defaultSweeps.everyMs).unref();
  }

  /**
   * Removes the anonymous users past their lifetime from every app, each by its clock: how many.
   * After a state is imported (`--data-dir` at start included), on either store; in memory also
   * every few minutes (the database's retention sweeps remove them by real time).
   */
  async removeEndedUsers(): Promise<number> {
    let removed = 0;
    for (const app of await this.apps.list()) removed += await app.removeEndedUsers();
    return removed;
  }

  /**
   * An emulator on the store the options name (a given one, PostgreSQL with `databaseUrl`, else
   * memory), with its default app, default EmailJS account and `--app` folders in place.
   */
  static async open(options: EmulatorOptions, store?: Store): Promise<Emulator> {
    const opened = store ?? (await openStore(options));
    const emulator = new Emulator(options, opened);
    try {
      await emulator.addDefaults();
      await emulator.apps.watchSchedules();
      emulator.triggerRecovery?.start();
    } catch (error) {
      await emulator.close();
      throw error;
    }
    return emulator;
  }

  /**
   * The default app and EmailJS account, and the `--app` folders. On a store that has them
   * already (a database, a restart, a state loaded from `--data-dir`), their settings are updated
   * from the folders and the start's options instead: what a start is given wins over what was kept.
   */
  async addDefaults(): Promise<void> {
    const { options } = this;
    // The demo app and the open EmailJS account (which would mail anyone) are the harness's, not a
    // production server's: there, apps come from --app folders (or the database).
    if (!options.production) {
      await this.apps.upsert({ appId: options.defaultAppId, template: this.apps.defaultTemplate });
      const defaults = emailJsDefaults(options);
      if (defaults.publicKey !== undefined && !(await this.store.emailjs.get(defaults.publicKey))) {
        // Another instance starting on the same database may create it first: fine.
        await this.emailjs.create(defaults).catch((error: unknown) => {
          if (!(error instanceof EmailJsAccountExistsError)) throw error;
        });
      }
    }
    for (const dir of options.appDirs) {
      const loaded = loadAppFolder(dir);
      const template: AppTemplate = { config: loaded.config, appDir: dir };
      // A folder without an app_id is named after its path, so a restart finds it again.
      const appId = loaded.appId ?? `app-${stableObjectIdHex("app-folder", resolve(dir)).slice(0, 12)}`;
      await this.apps.upsert({ appId, template });
      // (And the rules it does not evaluate: their namespaces' actions are refused.)
      const notRun = [...loaded.notRun, ...ruleProblems(loaded.config)];
      if (notRun.length > 0) this.notRun.push({ appId, dir, notRun });
    }
  }

  private mailEvent(message: MailMessage, action: Extract<ControlEvent, { type: "mail" }>["action"]): void {
    this.events.emit({
      type: "mail",
      action,
      id: message.id,
      ...(message.appId ? { appId: message.appId } : {}),
      ...(message.account ? { account: message.account } : {}),
      ...(message.delivery ? { detail: { delivery: message.delivery.state } } : {}),
    });
  }

  /**
   * Captures a message (and queues it for SMTP delivery with `--smtp`); undefined when its app or
   * EmailJS account was deleted meanwhile (MailStore.add).
   */
  sendMail(mail: NewMail): Promise<MailMessage | undefined> {
    return this.store.mail.add(mail, this.smtp !== null);
  }

  /** The server is shutting down: no new traffic should come here (readiness says so). */
  markStopping(): void {
    this.stopping = true;
  }

  /** Whether this instance should get traffic, and why not (`/_mock/v1/ready`). */
  async readiness(): Promise<Readiness> {
    if (this.stopping) return { status: "stopping", reason: "the server is shutting down" };
    const problem = await this.store.health?.();
    return problem ? { status: "unavailable", reason: problem } : { status: "ready" };
  }

  /** The HS256 key of access and refresh tokens. */
  get tokenKey(): Hs256Key {
    return this.key;
  }

  get signingSecret(): string {
    return this.secret;
  }

  /** The secrets whose tokens and sealed flows are accepted: the signing secret, then its fallbacks. */
  get acceptedSecrets(): string[] {
    return [this.secret, ...this.options.signingSecretFallbacks];
  }

  /**
   * Requests whose access or refresh token a fallback secret signed (`--signing-secret-fallbacks`):
   * while they come, dropping the fallback would sign those users out.
   */
  readonly fallbackTokenUses = { access: 0, refresh: 0 };

  /**
   * Lets trigger runs under way finish (at most the drain time: their writes were acknowledged, a
   * stop should not lose their triggers), then stops watching app folders, the relay and the apps'
   * function processes, and closes the store.
   */
  async close(): Promise<void> {
    const cut = await this.apps.settleTriggers(this.options.drainMs);
    if (cut > 0) this.apps.log?.warn({ runs: cut }, "trigger runs cut by the shutdown (they outlasted the drain time)");
    await this.triggerRecovery?.close();
    // (Events the triggers did not run to their end stay kept: another instance runs them.)
    await this.apps.stopTriggers();
    this.stopMailEvents();
    this.stopOutageWatch();
    this.stopAppWatch();
    await this.smtp?.close();
    await this.retention?.close();
    if (this.endedUserSweeps) clearInterval(this.endedUserSweeps);
    this.functionFolders.close();
    this.apps.close();
    await this.outboundHttp.close();
    await this.store.close();
  }

  /** Replaces the token secret (state import), so imported sessions keep working. */
  setSigningSecret(secret: string): void {
    this.secret = secret;
    this.key = new Hs256Key(secret, this.options.signingSecretFallbacks);
  }
}

/** The default app folder, its e-mail links pointed at the web app when `--web-url` is given. */
function defaultTemplate(options: EmulatorOptions): AppTemplate {
  const folder = loadAppFolder(options.defaultAppDir);
  if (options.webUrl) {
    const web = options.webUrl.replace(/\/+$/, "");
    // The OAuth 2.0 providers end their browser flow at the web app's redirect page.
    const redirects = Object.fromEntries(
      oauth2ProviderNames
        .filter((p) => folder.config.providers?.[p]?.redirectUris)
        .map((p) => [p, { redirectUris: [`${web}/auth/callback`] }]),
    );
    folder.config = deepMerge(folder.config, {
      providers: {
        "local-userpass": { emailConfirmationUrl: `${web}/confirm`, resetPasswordUrl: `${web}/reset-password` },
        ...redirects,
      },
    });
  }
  return { config: folder.config, appDir: options.defaultAppDir };
}

/** New EmailJS accounts copy the default account's services and templates. */
function emailJsDefaults(options: EmulatorOptions): CreateEmailJsAccountRequest {
  return JSON.parse(readFileSync(options.emailjsDefaultsFile, "utf8")) as CreateEmailJsAccountRequest;
}
