/**
 * Every e-mail the emulator "sends", from both services, in one outbox. Links and confirmation or
 * reset tokens are parsed out when a message arrives, so tests need no regular expressions, and a
 * reader can wait server-side for a message that has not arrived yet.
 */
import type { ControlSchemas } from "../openapi/types.ts";

export type MailMessage = ControlSchemas["MailMessage"];
export type MailSource = ControlSchemas["MailSource"];

export interface MailFilter {
  to?: string | undefined;
  appId?: string | undefined;
  account?: string | undefined;
  source?: MailSource | undefined;
  kind?: string | undefined;
  /** An ISO time or a message id: only later messages match. */
  since?: string | undefined;
}

export type NewMail = Omit<MailMessage, "id" | "links" | "createdAt" | "token" | "tokenId" | "attachments"> & {
  createdAtMs: number;
  attachments?: MailMessage["attachments"];
};

const hrefPattern = /href\s*=\s*(?:"([^"]*)"|'([^']*)')/gi;
const urlPattern = /\bhttps?:\/\/[^\s"'<>]+/gi;

function decodeEntities(value: string): string {
  return value
    .replace(/&amp;/g, "&")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">");
}

/** Every distinct http(s) link of a message: `href`s of the HTML first, then URLs in the text. */
export function extractLinks(html: string, text: string): string[] {
  const links = new Set<string>();
  for (const match of html.matchAll(hrefPattern)) {
    const href = decodeEntities(match[1] ?? match[2] ?? "").trim();
    if (/^https?:\/\//i.test(href)) links.add(href);
  }
  for (const match of text.matchAll(urlPattern)) links.add(match[0].replace(/[.,;:!?)\]]+$/, ""));
  return [...links];
}

function tokenPair(links: string[]): { token: string; tokenId: string } | undefined {
  for (const link of links) {
    try {
      const params = new URL(link).searchParams;
      const token = params.get("token");
      const tokenId = params.get("tokenId");
      if (token && tokenId) return { token, tokenId };
    } catch {
      // not a URL after all
    }
  }
  return undefined;
}

const addressPattern = /[^\s<>,;"]+@[^\s<>,;"]+/g;
/** The lowercased addresses of a To header (`a@x, "B" <b@y>`). */
function recipients(to: string): string[] {
  return (to.match(addressPattern) ?? []).map((a) => a.toLowerCase());
}

interface Waiter {
  filter: MailFilter;
  resolve: (messages: MailMessage[]) => void;
}

/** Dropped messages are cut off the front in batches: dropping one must not shift 50,000 on every add. */
const compactEvery = 1024;

export class MailOutbox {
  /** Oldest first; the first `head` entries are already dropped (cut off at the next compaction). */
  private messages: MailMessage[] = [];
  private head = 0;
  private readonly waiters = new Set<Waiter>();
  private nextId = 1;

  constructor(
    private readonly capacity = 50_000,
    private readonly onAdd: (message: MailMessage) => void = () => {},
  ) {}

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

  add(mail: NewMail): MailMessage {
    const { createdAtMs, attachments, ...rest } = mail;
    const links = extractLinks(rest.html, rest.text);
    const message: MailMessage = {
      id: `m-${this.nextId++}`,
      ...rest,
      links,
      attachments: attachments ?? [],
      createdAt: new Date(createdAtMs).toISOString(),
      ...tokenPair(links),
    };
    this.messages.push(message);
    if (this.messages.length - this.head > this.capacity && ++this.head >= compactEvery) this.current();
    for (const waiter of this.waiters) {
      if (this.matches(message, waiter.filter)) {
        this.waiters.delete(waiter);
        waiter.resolve([message]);
      }
    }
    this.onAdd(message);
    return message;
  }

  get(id: string): MailMessage | undefined {
    return this.current().find((m) => m.id === id);
  }

  list(filter: MailFilter = {}): MailMessage[] {
    return this.current().filter((m) => this.matches(m, filter));
  }

  count(filter: MailFilter): number {
    let n = 0;
    for (const m of this.current()) if (this.matches(m, filter)) n++;
    return n;
  }

  /** The matching messages now, or else the first one to arrive within `ms` (else none). */
  wait(filter: MailFilter, ms: number, signal?: AbortSignal): Promise<MailMessage[]> {
    const now = this.list(filter);
    if (now.length > 0 || ms <= 0) return Promise.resolve(now);
    return new Promise((resolve) => {
      const finish = (messages: MailMessage[]) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.waiters.delete(waiter);
        resolve(messages);
      };
      const waiter: Waiter = { filter, resolve: finish };
      const timer = setTimeout(() => finish([]), ms);
      const onAbort = () => finish([]);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.add(waiter);
    });
  }

  /** Answers every held wait now, with what matches so far (on shutdown). */
  releaseWaits(): void {
    for (const waiter of [...this.waiters]) waiter.resolve(this.list(waiter.filter));
  }

  get pendingWaits(): number {
    return this.waiters.size;
  }

  clear(filter: Pick<MailFilter, "appId" | "account"> = {}): void {
    const kept = this.current();
    this.messages =
      filter.appId === undefined && filter.account === undefined ? [] : kept.filter((m) => !this.matches(m, filter));
  }

  exportMessages(): MailMessage[] {
    return this.current().map((m) => structuredClone(m));
  }

  importMessages(messages: MailMessage[]): void {
    this.messages = messages.map((m) => structuredClone(m));
    this.head = 0;
    const ids = messages.map((m) => Number(m.id.replace(/^m-/, ""))).filter(Number.isFinite);
    this.nextId = Math.max(0, ...ids) + 1;
  }

  private matches(m: MailMessage, f: MailFilter): boolean {
    if (f.to !== undefined && !recipients(m.to).includes(f.to.trim().toLowerCase())) return false;
    if (f.appId !== undefined && m.appId !== f.appId) return false;
    if (f.account !== undefined && m.account !== f.account) return false;
    if (f.source !== undefined && m.source !== f.source) return false;
    if (f.kind !== undefined && m.kind !== f.kind) return false;
    if (f.since !== undefined) {
      if (/^m-\d+$/.test(f.since)) {
        if (Number(m.id.slice(2)) <= Number(f.since.slice(2))) return false;
      } else {
        const since = Date.parse(f.since);
        if (Number.isFinite(since) && Date.parse(m.createdAt) <= since) return false;
      }
    }
    return true;
  }
}
