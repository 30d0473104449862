/**
 * Real mail: with `--smtp URL`, every message the outbox captures (confirmation and reset mail,
 * EmailJS sends) is also delivered over SMTP through nodemailer. The delivery state lives on the
 * message itself (`delivery`), so it is saved and restored with the outbox (`--data-dir`; the
 * database later) and a restart resumes what was still queued. At least once: a message is marked
 * sent only after the server accepted it. While the server cannot be reached the relay retries
 * with exponential backoff, without limit; a server that refuses a message (an SMTP reply) is
 * retried `maxRefusals` times, then the message is marked failed with the server's reply.
 */
import nodemailer, { type Transporter } from "nodemailer";
import type { MailMessage, MailOutbox } from "./mail.ts";

export type MailDelivery = NonNullable<MailMessage["delivery"]>;

export interface SmtpRelayOptions {
  /** `smtp://user:pass@host:port` or `smtps://…` (nodemailer's connection URL). */
  url: string;
  /** The first retry's delay; each next one doubles, up to `maxDelayMs`. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** How often a message the server refuses is tried before it is marked failed. */
  maxRefusals?: number;
  log?: (line: string, fields: Record<string, unknown>) => void;
  onChange?: (message: MailMessage) => void;
}

/** Checks `--smtp` at start: the reason it is not a usable SMTP URL, or null. */
export function checkSmtpUrl(text: string): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `'${text}' is not a URL`;
  }
  if (url.protocol !== "smtp:" && url.protocol !== "smtps:") return `'${text}' must start with smtp:// or smtps://`;
  if (!url.hostname) return `'${text}' names no host`;
  return null;
}

/** An SMTP reply code means the server answered (and refused); without one it could not be reached. */
const refusal = (error: unknown): string | null => {
  const e = error as { responseCode?: number; response?: string; message?: string };
  return typeof e.responseCode === "number" ? (e.response ?? `${e.responseCode}`) : null;
};

export class SmtpRelay {
  private readonly transport: Transporter;
  private readonly queue: MailMessage[] = [];
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private closed = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly maxRefusals: number;
  /** While the server cannot be reached: when to try again, and how many tries in a row failed. */
  private unreachableUntil = 0;
  private unreachableStreak = 0;

  constructor(
    private readonly outbox: MailOutbox,
    private readonly options: SmtpRelayOptions,
  ) {
    this.transport = nodemailer.createTransport(options.url);
    this.baseDelayMs = options.baseDelayMs ?? 1000;
    this.maxDelayMs = options.maxDelayMs ?? 5 * 60_000;
    this.maxRefusals = options.maxRefusals ?? 5;
  }

  /** A message the outbox has just captured: queue it for delivery. */
  enqueue(message: MailMessage): void {
    message.delivery = { state: "queued", attempts: 0 };
    this.queue.push(message);
    this.schedule(0);
  }

  /** After state is loaded: queue every message still waiting for delivery. */
  resume(): void {
    for (const message of this.outbox.list()) {
      if (message.delivery?.state === "queued" && !this.queue.includes(message)) this.queue.push(message);
    }
    if (this.queue.length > 0) this.schedule(0);
  }

  /** Messages waiting for delivery. */
  get pending(): number {
    return this.queue.length;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.transport.close();
  }

  private schedule(delayMs: number): void {
    if (this.closed || this.running) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.pump(), delayMs);
    this.timer.unref();
  }

  private backoff(failures: number): number {
    return Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** Math.min(failures - 1, 30));
  }

  /**
   * Sends the messages that are due, oldest first. A server that cannot be reached holds back the
   * whole queue (one backoff for all); a refused message only itself.
   */
  private async pump(): Promise<void> {
    this.timer = null;
    this.running = true;
    let retryIn = -1;
    try {
      while (!this.closed && this.queue.length > 0) {
        const now = Date.now();
        if (this.unreachableUntil > now) {
          retryIn = this.unreachableUntil - now;
          break;
        }
        const dueAt = (m: MailMessage) => (m.delivery?.nextAttemptAt ? Date.parse(m.delivery.nextAttemptAt) : 0);
        const message = this.queue.find((m) => dueAt(m) <= now);
        if (!message) {
          retryIn = Math.min(...this.queue.map(dueAt)) - now;
          break;
        }
        await this.attempt(message);
      }
    } finally {
      this.running = false;
    }
    if (retryIn >= 0) this.schedule(retryIn);
  }

  private async attempt(message: MailMessage): Promise<void> {
    const attempts = (message.delivery?.attempts ?? 0) + 1;
    const refusals = message.delivery?.refusals ?? 0;
    try {
      const info = await this.transport.sendMail({
        from: message.fromName ? { name: message.fromName, address: message.from } : message.from,
        to: message.to,
        ...(message.replyTo ? { replyTo: message.replyTo } : {}),
        subject: message.subject,
        text: message.text,
        ...(message.html ? { html: message.html } : {}),
        headers: { "X-Emulator-Message-Id": message.id },
      });
      this.unreachableStreak = 0;
      message.delivery = { state: "sent", attempts, sentAt: new Date().toISOString(), response: String(info.response) };
      this.queue.splice(this.queue.indexOf(message), 1);
      this.options.log?.("mail delivered over SMTP", { mailId: message.id, attempts });
    } catch (error) {
      const refused = refusal(error);
      const lastError = refused ?? (error instanceof Error ? error.message : String(error));
      if (refused && refusals + 1 >= this.maxRefusals) {
        message.delivery = { state: "failed", attempts, refusals: refusals + 1, lastError };
        this.queue.splice(this.queue.indexOf(message), 1);
        this.options.log?.("mail not delivered: the SMTP server refused it", { mailId: message.id, lastError });
      } else {
        const delay = refused ? this.backoff(refusals + 1) : this.backoff(++this.unreachableStreak);
        if (!refused) this.unreachableUntil = Date.now() + delay;
        message.delivery = {
          state: "queued",
          attempts,
          refusals: refusals + (refused ? 1 : 0),
          lastError,
          nextAttemptAt: new Date(Date.now() + delay).toISOString(),
        };
        this.options.log?.("mail delivery will be retried", { mailId: message.id, lastError, retryInMs: delay });
      }
    }
    this.options.onChange?.(message);
  }
}
