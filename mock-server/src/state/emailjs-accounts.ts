/**
 * EmailJS accounts: namespaces of the e-mail API, each with its public key, optional private key
 * (kept hashed), services, templates, rate limit, clock, faults and journal.
 */
import type { ControlSchemas } from "../openapi/types.ts";
import { type Clock, createClock } from "./clock.ts";
import { FaultStore } from "./faults.ts";
import { randomHex, sha256Hex } from "./ids.ts";
import { Journal } from "./journal.ts";

export type EmailJsAccountView = ControlSchemas["EmailJsAccount"];
export type EmailJsAccountState = ControlSchemas["EmailJsAccountState"];
export type CreateEmailJsAccountRequest = ControlSchemas["CreateEmailJsAccountRequest"];
export type EmailJsTemplate = ControlSchemas["EmailJsTemplate"];
export type EmailJsService = ControlSchemas["EmailJsService"];

export class EmailJsAccount {
  readonly clock: Clock;
  readonly faults = new FaultStore();
  readonly journal = new Journal();
  /** Times (account clock) of recent accepted requests, for the rate limit. */
  private recent: number[] = [];

  constructor(
    readonly state: Omit<EmailJsAccountState, "clockOffsetMs">,
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

  /** Counts a request against the rate limit (`rateLimitPerSecond`, 0 = off); false when over it. */
  takeRateLimit(): boolean {
    const limit = this.state.rateLimitPerSecond;
    if (limit <= 0) return true;
    // N per second; a fraction means one per 1/N seconds (0.1: one every 10 s).
    const windowMs = limit >= 1 ? 1000 : 1000 / limit;
    const allowed = limit >= 1 ? Math.floor(limit) : 1;
    const now = this.clock.now();
    this.recent = this.recent.filter((t) => now - t < windowMs);
    if (this.recent.length >= allowed) return false;
    this.recent.push(now);
    return true;
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

  reset(): void {
    this.recent = [];
    this.faults.clear();
    this.journal.clear();
    this.clock.set(0);
  }
}

export class EmailJsAccounts {
  private readonly accounts = new Map<string, EmailJsAccount>();

  constructor(private readonly defaults: CreateEmailJsAccountRequest) {}

  has(publicKey: string): boolean {
    return this.accounts.has(publicKey);
  }

  get(publicKey: string): EmailJsAccount | undefined {
    return this.accounts.get(publicKey);
  }

  list(): EmailJsAccount[] {
    return [...this.accounts.values()];
  }

  /** A new account; unset fields take the defaults (the default account's services and templates). */
  create(request: CreateEmailJsAccountRequest): { account: EmailJsAccount; privateKey?: string } {
    const publicKey = request.publicKey ?? `pk-${randomHex(8)}`;
    if (this.accounts.has(publicKey)) throw new Error(`an EmailJS account with public key '${publicKey}' exists`);
    const requirePrivateKey = request.requirePrivateKey ?? this.defaults.requirePrivateKey ?? false;
    const privateKey = request.privateKey ?? (requirePrivateKey ? `sk-${randomHex(12)}` : undefined);
    const services = structuredClone(request.services ?? this.defaults.services ?? []);
    const account = new EmailJsAccount({
      publicKey,
      ...(privateKey !== undefined ? { privateKeyHash: sha256Hex(privateKey) } : {}),
      requirePrivateKey,
      allowNonBrowser: request.allowNonBrowser ?? this.defaults.allowNonBrowser ?? false,
      rateLimitPerSecond: request.rateLimitPerSecond ?? this.defaults.rateLimitPerSecond ?? 1,
      defaultServiceId: services[0]?.id ?? "default_service",
      services,
      templates: structuredClone(request.templates ?? this.defaults.templates ?? []),
    });
    this.accounts.set(publicKey, account);
    return { account, ...(privateKey !== undefined ? { privateKey } : {}) };
  }

  restore(state: EmailJsAccountState): EmailJsAccount {
    const { clockOffsetMs, ...rest } = state;
    const account = new EmailJsAccount(structuredClone(rest), clockOffsetMs);
    this.accounts.set(account.publicKey, account);
    return account;
  }

  delete(publicKey: string): boolean {
    return this.accounts.delete(publicKey);
  }

  clear(): void {
    this.accounts.clear();
  }
}
