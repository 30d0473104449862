/**
 * What both stores do with a message: parse its links and confirmation or reset token out when it
 * arrives (so tests need no regular expressions), and match it against a filter.
 */
import type { MailFilter, MailMessage, NewMail } from "./store.ts";

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

export function tokenPair(links: string[]): { token: string; tokenId: string } | undefined {
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
export function recipients(to: string): string[] {
  return (to.match(addressPattern) ?? []).map((a) => a.toLowerCase());
}

/** A new message with its id, parsed links and token pair. */
export function composeMessage(id: string, mail: NewMail, deliver: boolean): MailMessage {
  const { createdAtMs, attachments, forToken: _, ...rest } = mail;
  const links = extractLinks(rest.html, rest.text);
  return {
    id,
    ...rest,
    links,
    attachments: attachments ?? [],
    createdAt: new Date(createdAtMs).toISOString(),
    ...tokenPair(links),
    ...(deliver ? { delivery: { state: "queued" as const, attempts: 0 } } : {}),
  };
}

/** The number of a message id (`m-12` → 12). */
export const mailSeq = (id: string) => Number(id.slice(2));

/** The number of an id as this server writes them (`m-12`), or undefined for any other text. */
export function messageNumber(id: string): number | undefined {
  if (!/^m-[1-9]\d*$/.test(id)) return undefined;
  const n = mailSeq(id);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** Whether a message's subject, recipients or text holds `search` (trimmed), the case of letters ignored. */
export function searchMatches(m: Pick<MailMessage, "subject" | "to" | "text">, search: string | undefined): boolean {
  const needle = search?.trim().toLowerCase();
  return !needle || [m.subject, m.to, m.text].some((field) => field.toLowerCase().includes(needle));
}

export function mailMatches(m: MailMessage, f: MailFilter): boolean {
  if (f.to !== undefined && !recipients(m.to).includes(f.to.trim().toLowerCase())) return false;
  if (f.appId !== undefined && m.appId !== f.appId) return false;
  if (f.account !== undefined && m.account !== f.account) return false;
  if (f.source !== undefined && m.source !== f.source) return false;
  if (f.kind !== undefined && m.kind !== f.kind) return false;
  if (!searchMatches(m, f.search)) return false;
  if (f.since !== undefined) {
    if (/^m-\d+$/.test(f.since)) {
      if (mailSeq(m.id) <= mailSeq(f.since)) return false;
    } else {
      const since = Date.parse(f.since);
      if (Number.isFinite(since) && Date.parse(m.createdAt) <= since) return false;
    }
  }
  return true;
}

interface Waiter {
  filter: MailFilter;
  resolve: (messages: MailMessage[]) => void;
}

/**
 * Held `wait` requests: each is answered by the first matching message to arrive, by its time
 * running out or its client leaving, or at shutdown.
 */
export class MailWaits {
  private readonly waiters = new Set<Waiter>();

  get size(): number {
    return this.waiters.size;
  }

  /**
   * `current` answers now when it finds something (or `ms` is 0); else the first arrival within
   * `ms`. The wait is registered before `current` looks, so a message stored meanwhile is not missed.
   */
  wait(
    filter: MailFilter,
    ms: number,
    current: () => Promise<MailMessage[]>,
    signal?: AbortSignal,
  ): Promise<MailMessage[]> {
    return new Promise((resolve, reject) => {
      let done = false;
      const finish = (messages: MailMessage[]) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.waiters.delete(waiter);
        resolve(messages);
      };
      const waiter: Waiter = { filter, resolve: finish };
      const timer = ms > 0 ? setTimeout(() => finish([]), ms) : undefined;
      const onAbort = () => finish([]);
      signal?.addEventListener("abort", onAbort, { once: true });
      if (ms > 0) this.waiters.add(waiter);
      current().then(
        (now) => {
          if (now.length > 0 || ms <= 0) finish(now);
        },
        (error: unknown) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
          this.waiters.delete(waiter);
          reject(error);
        },
      );
    });
  }

  /** A message arrived: answer the waits it matches. */
  arrived(message: MailMessage): void {
    for (const waiter of this.waiters) {
      if (mailMatches(message, waiter.filter)) waiter.resolve([message]);
    }
  }

  /** Answers every held wait now with `current(filter)` (on shutdown). */
  release(current: (filter: MailFilter) => MailMessage[] | Promise<MailMessage[]>): void {
    for (const waiter of [...this.waiters]) {
      this.waiters.delete(waiter);
      void Promise.resolve(current(waiter.filter)).then(waiter.resolve, () => waiter.resolve([]));
    }
  }
}
