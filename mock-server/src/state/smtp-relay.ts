/**
 * Real mail: with `--smtp URL`, every message the outbox captures (confirmation and reset mail,
 * EmailJS sends) is also delivered over SMTP through nodemailer. The outbox is the store's mail:
 * the delivery state lives on the message itself (`delivery`), so it survives a restart (in the
 * database, or `--data-dir`), and with several instances on one database each message is claimed
 * by one of them at a time. At least once: a message is marked sent only after the server accepted
 * it. While the server cannot be reached the relay retries with exponential backoff, without limit;
 * a server that refuses a message (an SMTP reply) is retried `maxRefusals` times, then the message
 * is marked failed with the server's reply.
 */
import nodemailer, { type SendMailOptions, type Transporter } from "nodemailer";
import type { MailDelivery, MailMessage, MailStore } from "../store/store.ts";

export interface SmtpRelayOptions {
  /** `smtp://user:pass@host:port` or `smtps://…` (nodemailer's connection URL). */
  url: string;
  /** The first retry's delay; each next one doubles, up to `maxDelayMs`. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** How often a message the server refuses is tried before it is marked failed. */
  maxRefusals?: number;
  /**
   * How long an attempt waits for the server (defaults: 10 s to connect, 10 s for its greeting, 60 s
   * of silence mid-message). Unbounded by us, nodemailer's 10 minutes of a server that accepted the
   * connection and then said nothing held every other message behind it, and the shutdown with them.
   */
  timeouts?: { connectMs?: number; greetingMs?: number; silenceMs?: number };
  /** How long the shutdown waits for an attempt under way before it closes the transport (default 5 s). */
  closeWaitMs?: number;
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

/** What a captured message is as an e-mail: delivered so over SMTP, shown so as the inspector's source. */
export function emailOf(message: MailMessage): SendMailOptions {
  return {
    from: message.fromName ? { name: message.fromName, address: message.from } : message.from,
    to: message.to,
    ...(message.replyTo ? { replyTo: message.replyTo } : {}),
    subject: message.subject,
    text: message.text,
    ...(message.html ? { html: message.html } : {}),
    date: new Date(message.createdAt),
    headers: { "X-Emulator-Message-Id": message.id },
  };
}

/** The message in RFC 5322 form (CRLF line ends), composed as SMTP delivery composes it. */
export async function emailSource(message: MailMessage): Promise<string> {
  const composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "windows" });
  const info = await composer.sendMail(emailOf(message));
  return (info.message as Buffer).toString("utf8");
}

/** An SMTP reply code means the server answered (and refused); without one it could not be reached. */
const refusal = (error: unknown): string | null => {
  const e = error as { responseCode?: number; response?: string; message?: string };
  return typeof e.responseCode === "number" ? (e.response ?? `${e.responseCode}`) : null;
};

/** How long a claimed message is this instance's before another may try it (a send takes far less). */
const claimLeaseMs = 60_000;
/** How often the relay looks for due messages it was not told about (another instance's, retries). */
const pollMs = 5_000;

export class SmtpRelay {
  private readonly transport: Transporter;
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  /** A kick arrived while a pump ran: pump again right after. */
  private again = false;
  private closed = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly maxRefusals: number;
  /** While the server cannot be reached: when to try again, and how many tries in a row failed. */
  private unreachableUntil = 0;
  private unreachableStreak = 0;
  private idle: Promise<void> = Promise.resolve();

  constructor(
    private readonly outbox: MailStore,
    private readonly options: SmtpRelayOptions,
  ) {
    const { connectMs = 10_000, greetingMs = 10_000, silenceMs = 60_000 } = options.timeouts ?? {};
    this.transport = nodemailer.createTransport({
      url: options.url,
      connectionTimeout: connectMs,
      greetingTimeout: greetingMs,
      socketTimeout: silenceMs,
    });
    this.baseDelayMs = options.baseDelayMs ?? 1000;
    this.maxDelayMs = options.maxDelayMs ?? 5 * 60_000;
    this.maxRefusals = options.maxRefusals ?? 5;
  }

  /** A message was queued (or state was loaded): look for due messages now. */
  kick(): void {
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // An attempt under way finishes (its message then marked), but not for ever: the message stays
    // queued in the outbox, for the next start (or another instance) to send.
    let waited: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.idle,
      new Promise<void>((resolve) => {
        waited = setTimeout(resolve, this.options.closeWaitMs ?? 5_000);
      }),
    ]);
    clearTimeout(waited);
    this.transport.close();
  }

  private schedule(delayMs: number): void {
    if (this.closed || this.running) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(
      () => {
        this.idle = this.pump();
      },
      Math.max(0, delayMs),
    );
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
    let retryIn = pollMs;
    try {
      while (!this.closed) {
        this.again = false;
        const now = Date.now();
        if (this.unreachableUntil > now) {
          retryIn = this.unreachableUntil - now;
          break;
        }
        const [message] = await this.outbox.dueForDelivery(now, 1, claimLeaseMs);
        if (!message) {
          if (this.again) continue;
          const next = await this.outbox.nextDeliveryAt();
          retryIn = next === null ? pollMs : Math.min(pollMs, next - Date.now());
          break;
        }
        await this.attempt(message);
      }
    } catch (error) {
      // The store is unreachable (a database outage): look again later.
      this.options.log?.("mail delivery paused: the outbox cannot be read", { error: (error as Error).message });
    } finally {
      this.running = false;
    }
    this.schedule(retryIn);
  }

  private async attempt(message: MailMessage): Promise<void> {
    const attempts = (message.delivery?.attempts ?? 0) + 1;
    const refusals = message.delivery?.refusals ?? 0;
    let delivery: MailDelivery;
    try {
      const info = await this.transport.sendMail(emailOf(message));
      this.unreachableStreak = 0;
      delivery = { state: "sent", attempts, sentAt: new Date().toISOString(), response: String(info.response) };
      this.options.log?.("mail delivered over SMTP", { mailId: message.id, attempts });
    } catch (error) {
      const refused = refusal(error);
      const lastError = refused ?? (error instanceof Error ? error.message : String(error));
      if (refused && refusals + 1 >= this.maxRefusals) {
        delivery = { state: "failed", attempts, refusals: refusals + 1, lastError };
        this.options.log?.("mail not delivered: the SMTP server refused it", { mailId: message.id, lastError });
      } else {
        const delay = refused ? this.backoff(refusals + 1) : this.backoff(++this.unreachableStreak);
        if (!refused) this.unreachableUntil = Date.now() + delay;
        delivery = {
          state: "queued",
          attempts,
          refusals: refusals + (refused ? 1 : 0),
          lastError,
          nextAttemptAt: new Date(Date.now() + delay).toISOString(),
        };
        this.options.log?.("mail delivery will be retried", { mailId: message.id, lastError, retryInMs: delay });
      }
    }
    await this.outbox.setDelivery(message.id, delivery);
    this.options.onChange?.({ ...message, delivery });
  }
}
