/**
 * Every e-mail the emulator "sends", from both services, in one outbox in memory (the newest
 * 50,000). A reader can wait server-side for a message that has not arrived yet.
 */
import { composeMessage, MailWaits, mailMatches } from "../mail-messages.ts";
import type { MailDelivery, MailFilter, MailMessage, MailStore, NewMail } from "../store.ts";

/** Dropped messages are cut off the front in batches: dropping one must not shift 50,000 on every add. */
const compactEvery = 1024;

export class MemoryMail implements MailStore {
  /** Oldest first; the first `head` entries are already dropped (cut off at the next compaction). */
  private messages: MailMessage[] = [];
  private head = 0;
  private readonly waits = new MailWaits();
  private readonly listeners = new Set<(message: MailMessage) => void>();
  private nextId = 1;
  /** Messages waiting for SMTP delivery, oldest first. */
  private readonly queued = new Map<string, MailMessage>();

  constructor(private readonly capacity = 50_000) {}

  get size(): number {
    return this.messages.length - this.head;
  }

  /** The kept messages, oldest first. */
  private current(): MailMessage[] {
    if (this.head > 0) {
      this.messages = this.messages.slice(this.head);
      this.head = 0;
    }
    return this.messages;
  }

  /** Whether the message's app, EmailJS account and token are there (the store wires it). */
  owned: (mail: NewMail) => boolean = () => true;

  async add(mail: NewMail, deliver: boolean): Promise<MailMessage | undefined> {
    if (!this.owned(mail)) return undefined;
    const message = composeMessage(`m-${this.nextId++}`, mail, deliver);
    this.messages.push(message);
    if (deliver) this.queued.set(message.id, message);
    if (this.messages.length - this.head > this.capacity && ++this.head >= compactEvery) this.current();
    this.waits.arrived(message);
    for (const listener of this.listeners) listener(message);
    return message;
  }

  async get(id: string): Promise<MailMessage | undefined> {
    return this.current().find((m) => m.id === id);
  }

  listNow(filter: MailFilter = {}): MailMessage[] {
    return this.current().filter((m) => mailMatches(m, filter));
  }

  async list(filter: MailFilter = {}, limit?: number): Promise<MailMessage[]> {
    const all = this.listNow(filter);
    return limit === undefined ? all : all.slice(-limit);
  }

  async count(filter: MailFilter): Promise<number> {
    let n = 0;
    for (const m of this.current()) if (mailMatches(m, filter)) n++;
    return n;
  }

  wait(filter: MailFilter, ms: number, signal?: AbortSignal): Promise<MailMessage[]> {
    return this.waits.wait(filter, ms, async () => this.listNow(filter), signal);
  }

  releaseWaits(): void {
    this.waits.release((filter) => this.listNow(filter));
  }

  get pendingWaits(): number {
    return this.waits.size;
  }

  async clear(filter: Pick<MailFilter, "appId" | "account"> = {}): Promise<void> {
    this.clearNow(filter);
  }

  clearNow(filter: Pick<MailFilter, "appId" | "account"> = {}): void {
    const kept = this.current();
    this.messages =
      filter.appId === undefined && filter.account === undefined ? [] : kept.filter((m) => !mailMatches(m, filter));
    this.reindex();
  }

  private reindex(): void {
    this.queued.clear();
    for (const m of this.messages) if (m.delivery?.state === "queued") this.queued.set(m.id, m);
  }

  async dueForDelivery(now: number, limit: number, _leaseMs: number): Promise<MailMessage[]> {
    const due: MailMessage[] = [];
    for (const m of this.queued.values()) {
      const at = m.delivery?.nextAttemptAt;
      if (at !== undefined && Date.parse(at) > now) continue;
      due.push(m);
      if (due.length >= limit) break;
    }
    return due;
  }

  async queuedCount(): Promise<number> {
    return this.queued.size;
  }

  async nextDeliveryAt(): Promise<number | null> {
    let next: number | null = null;
    for (const m of this.queued.values()) {
      const due = m.delivery?.nextAttemptAt;
      const at = due === undefined ? 0 : Date.parse(due);
      if (next === null || at < next) next = at;
    }
    return next;
  }

  async setDelivery(id: string, delivery: MailDelivery): Promise<void> {
    const message = this.queued.get(id) ?? this.current().find((m) => m.id === id);
    if (!message) return;
    message.delivery = delivery;
    if (delivery.state === "queued") this.queued.set(id, message);
    else this.queued.delete(id);
  }

  onAdd(listener: (message: MailMessage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async remove(id: string): Promise<boolean> {
    const messages = this.current();
    const index = messages.findIndex((m) => m.id === id);
    if (index < 0) return false;
    messages.splice(index, 1);
    this.queued.delete(id);
    return true;
  }

  exportMessages(): MailMessage[] {
    return this.current().map((m) => structuredClone(m));
  }

  importMessages(messages: MailMessage[]): void {
    this.messages = messages.map((m) => structuredClone(m));
    this.head = 0;
    this.reindex();
    const ids = messages.map((m) => Number(m.id.replace(/^m-/, ""))).filter(Number.isFinite);
    this.nextId = Math.max(0, ...ids) + 1;
  }
}
