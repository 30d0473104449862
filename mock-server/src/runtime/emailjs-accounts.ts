/**
 * EmailJS accounts as this instance serves them: namespaces of the e-mail API, each with its public
 * key, optional private key (kept hashed), services, templates and rate limit (in the store, shared
 * by every instance), and its clock, faults, journal and rate-limit counter (per instance).
 */
import type { ControlSchemas } from "../openapi/types.ts";
import { type Clock, createClock } from "../state/clock.ts";
import type { EventBus } from "../state/events.ts";
import { FaultStore } from "../state/faults.ts";
import { randomHex, sha256Hex } from "../state/ids.ts";
import { Journal } from "../state/journal.ts";
import type {
  EmailJsAccountRecord,
  EmailJsAccountRecords,
  EmailJsAccountState,
  RateLimitCounters,
} from "../store/store.ts";

export type EmailJsAccountView = ControlSchemas["EmailJsAccount"];
export type CreateEmailJsAccountRequest = ControlSchemas["CreateEmailJsAccountRequest"];
export type EmailJsTemplate = ControlSchemas["EmailJsTemplate"];
export type EmailJsService = ControlSchemas["EmailJsService"];

export class EmailJsAccount {
  readonly clock: Clock;
  readonly faults = new FaultStore();
  readonly journal = new Journal();
  constructor(
    readonly state: EmailJsAccountRecord,
    clockOffsetMs = 0,
  ) {
    this.clock = createClock(clockOffsetMs);
  }

  get publicKey(): string {
    return this.state.publicKey;
  }

  checkPrivateKey(candidate: string | undefined): "ok" | "missing" | "invalid" {
    if (!this.state.requirePrivateKey) return "ok";
    if (candidate === undefined || candidate === "") return "missing";
    return this.state.privateKeyHash !== undefined && sha256Hex(candidate) === this.state.privateKeyHash
      ? "ok"
      : "invalid";
  }

  /**
   * Counts a request against the rate limit (`rateLimitPerSecond`, 0 = off); false when over it.
   * In fixed windows `counters` keeps (the database's, shared by every instance, where there is
   * one), by the account's clock, or the counters' own in production.
   */
  async takeRateLimit(counters: RateLimitCounters, production: boolean): Promise<boolean> {
    const limit = this.state.rateLimitPerSecond;
    if (limit <= 0) return true;
    // N per second; a fraction means one per 1/N seconds (0.1: one every 10 s).
    const windowMs = limit >= 1 ? 1000 : 1000 / limit;
    const allowed = limit >= 1 ? Math.floor(limit) : 1;
    const { hits } = await counters.hit(
      `emailjs|${this.publicKey}|send`,
      windowMs,
      production ? undefined : this.clock.now(),
      allowed,
    );
    return hits <= allowed;
  }

  service(id: string): EmailJsService | undefined {
    const wanted = id === "default_service" ? this.state.defaultServiceId : id;
    return this.state.services.find((s) => s.id === wanted);
  }

  template(id: string): EmailJsTemplate | undefined {
    return this.state.templates.find((t) => t.id === id);
  }

  view(privateKey?: string): EmailJsAccountView {
    const { privateKeyHash: _hash, ...rest } = this.state;
    return { ...structuredClone(rest), ...(privateKey !== undefined ? { privateKey } : {}) };
  }

  exportState(): EmailJsAccountState {
    return { ...structuredClone(this.state), clockOffsetMs: this.clock.offsetMs };
  }
}

export class EmailJsAccountExistsError extends Error {}

export class EmailJsAccounts {
  private readonly accounts = new Map<string, EmailJsAccount>();
  private readonly clockOffsets = new Map<string, number>();

  constructor(
    private readonly records: EmailJsAccountRecords,
    private readonly defaults: CreateEmailJsAccountRequest,
    events?: EventBus,
  ) {
    records.onChange((publicKey) => {
      // Another instance (or an import) changed the account: build it again on next use.
      this.accounts.delete(publicKey);
      if (events) void this.announce(events, publicKey);
    });
  }

  /** Tells the live events an account was made (or replaced by an import) or deleted, here or elsewhere. */
  private async announce(events: EventBus, publicKey: string): Promise<void> {
    const record = await this.records.get(publicKey).catch(() => null);
    // (The database away: whether it is there is not known, so nothing is said.)
    if (record === null) return;
    events.emit({ type: "account", account: publicKey, action: record ? "created" : "deleted" });
  }

  private runtimeOf(record: EmailJsAccountRecord): EmailJsAccount {
    const cached = this.accounts.get(record.publicKey);
    if (cached) return cached;
    const account = new EmailJsAccount(record, this.clockOffsets.get(record.publicKey) ?? 0);
    this.clockOffsets.delete(record.publicKey);
    this.accounts.set(record.publicKey, account);
    return account;
  }

  async get(publicKey: string): Promise<EmailJsAccount | undefined> {
    const cached = this.accounts.get(publicKey);
    if (cached) return cached;
    const record = await this.records.get(publicKey);
    return record ? this.runtimeOf(record) : undefined;
  }

  async list(): Promise<EmailJsAccount[]> {
    return (await this.records.list()).map((record) => this.runtimeOf(record));
  }

  /** A new account; unset fields take the defaults (the default account's services and templates). */
  async create(request: CreateEmailJsAccountRequest): Promise<{ account: EmailJsAccount; privateKey?: string }> {
    const publicKey = request.publicKey ?? `pk-${randomHex(8)}`;
    const requirePrivateKey = request.requirePrivateKey ?? this.defaults.requirePrivateKey ?? false;
    const privateKey = request.privateKey ?? (requirePrivateKey ? `sk-${randomHex(12)}` : undefined);
    const services = structuredClone(request.services ?? this.defaults.services ?? []);
    const record: EmailJsAccountRecord = {
      publicKey,
      ...(privateKey !== undefined ? { privateKeyHash: sha256Hex(privateKey) } : {}),
      requirePrivateKey,
      allowNonBrowser: request.allowNonBrowser ?? this.defaults.allowNonBrowser ?? false,
      rateLimitPerSecond: request.rateLimitPerSecond ?? this.defaults.rateLimitPerSecond ?? 1,
      defaultServiceId: services[0]?.id ?? "default_service",
      services,
      templates: structuredClone(request.templates ?? this.defaults.templates ?? []),
    };
    if (!(await this.records.create(record)))
      throw new EmailJsAccountExistsError(`an EmailJS account with public key '${publicKey}' exists`);
    return { account: this.runtimeOf(record), ...(privateKey !== undefined ? { privateKey } : {}) };
  }

  async delete(publicKey: string): Promise<boolean> {
    this.accounts.delete(publicKey);
    return this.records.delete(publicKey);
  }

  /** Gives each account this clock offset (after a state import). */
  setClockOffsets(offsets: Map<string, number>): void {
    for (const [publicKey, offset] of offsets) {
      const cached = this.accounts.get(publicKey);
      if (cached) cached.clock.set(offset);
      else this.clockOffsets.set(publicKey, offset);
    }
  }

  cachedClockOffset(publicKey: string): number {
    return this.accounts.get(publicKey)?.clock.offsetMs ?? this.clockOffsets.get(publicKey) ?? 0;
  }
}
