/**
 * The request journal of a namespace: what was asked and answered, with secrets redacted. A ring
 * buffer, so a long-running emulator keeps a bounded history.
 */
import type { ControlSchemas } from "../openapi/types.ts";

export type JournalEntry = ControlSchemas["JournalEntry"];

/**
 * Field names whose values are secrets: passwords, access and refresh tokens, API keys,
 * confirmation and reset tokens, the OAuth 2.0 providers' tokens and codes, EmailJS private keys,
 * the signing secret. The journal redacts them
 * in request and reply bodies and URLs, and the request logs censor them (app.ts).
 */
export const secretFieldNames = [
  "password",
  "key",
  "token",
  "tokenId",
  "access_token",
  "refresh_token",
  "accessToken",
  // OAuth 2.0: an ID token, an authorization code (Google's `authCode`, a callback's `code`), the
  // client's secret and PKCE verifier.
  "id_token",
  "authCode",
  "code",
  "client_secret",
  "code_verifier",
  "privateKey",
  "signingSecret",
  "baas_at",
] as const;
const secretKeys = new Set<string>(secretFieldNames);
export const redacted = "[redacted]";

/** A copy of a request body with every secret-named field (at any depth) redacted. */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 20) return redacted;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = secretKeys.has(k) ? redacted : redact(v, depth + 1);
    return out;
  }
  return value;
}

/** Bodies larger than this are journaled as a note of their size, not kept (a journal holds 5,000 entries). */
export const journaledBodyLimit = 16 * 1024;

/** The size of a parsed body sent without Content-Length (chunked): its JSON or text length. */
function measuredSize(body: unknown): number {
  if (typeof body === "string") return Buffer.byteLength(body);
  try {
    return Buffer.byteLength(JSON.stringify(body) ?? "");
  } catch {
    return 0; // not JSON-shaped (a parsed form with files): kept as redact() copies it
  }
}

/** What the journal keeps of a request body: a redacted copy, or a note when it is large. */
export function journalBody(body: unknown, contentLength: string | undefined): unknown {
  const bytes = contentLength === undefined ? measuredSize(body) : Number(contentLength);
  return bytes > journaledBodyLimit ? `[a body of ${bytes} bytes, not kept]` : redact(body);
}

/**
 * A JSON text that may hold a secret: one naming a secret field as a key or a value (any
 * `"password"`), or with an escape (a key can be spelt `"pass\u0077ord"`). Such a body is
 * redacted as it is journaled; any other is kept as its text, which holds nothing to redact.
 */
const mayHoldSecret = new RegExp(`"(?:${secretFieldNames.join("|")})"|\\\\`);

/**
 * Whether the journal keeps a request body as its JSON text: when it is small and may hold no
 * secret (one string, parsed and redacted only when the journal is read: a redacted copy of every
 * request's body made on its path was most of the journal's cost). Otherwise it keeps what
 * `journalBody` makes of the parsed body.
 */
export function keptAsText(text: string, contentLength: string | undefined): boolean {
  const bytes = contentLength === undefined ? Buffer.byteLength(text) : Number(contentLength);
  return bytes <= journaledBodyLimit && !mayHoldSecret.test(text);
}

/**
 * What the journal keeps of a reply: its body as sent (parsed JSON, else text) with secrets
 * redacted, or a note when it is large, and the App Services `error_code` it carries.
 */
export function journalReply(payload: unknown): { responseBody?: unknown; errorCode?: string } {
  const text = typeof payload === "string" ? payload : Buffer.isBuffer(payload) ? payload.toString("utf8") : "";
  if (text === "") return {};
  const bytes = typeof payload === "string" ? Buffer.byteLength(text) : (payload as Buffer).length;
  if (bytes > journaledBodyLimit) return { responseBody: `[a body of ${bytes} bytes, not kept]` };
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // a text reply (EmailJS): kept as it is
  }
  const errorCode = (body as { error_code?: unknown } | null)?.error_code;
  return { responseBody: redact(body), ...(typeof errorCode === "string" ? { errorCode } : {}) };
}

/** True when the text is in the entry's method, path, operation, error code or bodies (any case). */
function entryMentions(entry: JournalEntry, needle: string): boolean {
  const haystack = [
    entry.method,
    entry.path,
    entry.operationId ?? "",
    entry.errorCode ?? "",
    entry.requestBody === undefined ? "" : JSON.stringify(entry.requestBody),
    entry.responseBody === undefined ? "" : JSON.stringify(entry.responseBody),
  ];
  return haystack.some((text) => text.toLowerCase().includes(needle));
}

/** The URL with secret query values (`baas_at`, …) redacted. */
export function redactUrl(url: string): string {
  const q = url.indexOf("?");
  if (q < 0) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  for (const name of [...params.keys()]) if (secretKeys.has(name)) params.set(name, redacted);
  return `${url.slice(0, q)}?${params.toString()}`;
}

/**
 * A reply over the size limit is replaced by its note at once: the journal must not hold 5,000 large
 * replies until someone reads it. (A string's length in characters is at most its UTF-8 size.)
 */
function keptReply(reply: unknown): unknown {
  const size =
    typeof reply === "string"
      ? reply.length > journaledBodyLimit
        ? Buffer.byteLength(reply)
        : 0
      : Buffer.isBuffer(reply)
        ? reply.length
        : 0;
  // (The note is read back as a text reply: the entry's responseBody.)
  return size > journaledBodyLimit ? `[a body of ${size} bytes, not kept]` : reply;
}

/**
 * A request body kept as its JSON text, parsed and redacted for a reader. The text is what the
 * client sent, which the server's parser read: a leading byte order mark (which that parser skips)
 * is skipped here too. One that is not JSON after all cannot fail the journal's listing: it is
 * shown as a note (not as its text, which nothing redacted).
 */
function bodyOfText(text: string): unknown {
  try {
    return redact(JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text));
  } catch {
    return unreadableBody;
  }
}

const unreadableBody = "[a body that is not JSON]";

/**
 * An entry as recorded on a request's path: its reply kept as it was sent (a string or a buffer,
 * never changed afterwards), its request body possibly as its JSON text (see `keptAsText`)
 * and its time as a number. Parsing and redacting them and writing the time wait until someone
 * reads the journal.
 */
class Unread {
  constructor(
    readonly entry: JournalEntry,
    readonly reply: unknown,
    readonly atMs: number | undefined,
    readonly bodyText: string | undefined,
  ) {}

  read(): JournalEntry {
    const { entry } = this;
    if (this.atMs !== undefined) entry.time = new Date(this.atMs).toISOString();
    if (this.bodyText !== undefined) entry.requestBody = bodyOfText(this.bodyText);
    return this.reply === undefined ? entry : Object.assign(entry, journalReply(this.reply));
  }
}

/**
 * How `Journal.record` keeps a finished request: its texts — id, method, path, operation, faulted
 * ("1" or ""), request body text, then the reply as sent, last because it alone may hold any
 * character — joined by NUL and written as UTF-8 into buffers outside V8's heap, and its numbers
 * (status, duration, time, where the bytes are) in one array of unboxed doubles.
 *
 * Why: a journal holds 5,000 entries, each living for the next 5,000 requests — long enough to be
 * copied by the young generation's collections, promoted, and then collected in the old one. Each
 * object an entry holds costs every request that work: as objects (an entry, its slot, boxed
 * numbers, the request's own strings) it was ~2.5 µs of a 27 µs function call, measured by
 * shrinking the journal to 16 entries; as one flat string each, still ~2 µs. Bytes outside the heap
 * hold nothing for the collector.
 *
 * The bytes are a log of segments: records are appended to the newest segment, and a new one is
 * started when a record does not fit. Records die in the order they were written (the ring drops
 * its oldest), so a segment is let go as a whole once its last record has died: no record is ever
 * moved. (The first version kept one buffer and moved the live records to its start when it was
 * full: with 5,000 replies of 13 KB, each move was 65 MB, and stalled every request for 16–100 ms
 * every few thousand requests — the in-memory `find` benchmark's tail.) A new segment holds a
 * quarter of the live bytes (64 KB to 1 MB, or the record if larger), in the buffer of the last
 * segment let go when that fits, so the journal holds its live records plus at most three segments
 * and, once steady, allocates nothing.
 */
const separator = "\u0000";
const compactTexts = 6;
/**
 * Per slot in `Journal.numbers`: status, durationMs, atMs, then where its bytes are — segment
 * number, offset and length (0: none).
 */
const stride = 6;
const minimumSegment = 64 * 1024;
const maximumSegment = 1024 * 1024;

/** A buffer of the byte log, and how many live records it still holds. */
interface Segment {
  readonly bytes: Buffer;
  used: number;
  live: number;
}

function readCompact(text: string, status: number, durationMs: number, atMs: number): JournalEntry {
  const texts: string[] = [];
  let from = 0;
  for (let i = 0; i < compactTexts; i++) {
    const to = text.indexOf(separator, from);
    texts.push(text.slice(from, to));
    from = to + 1;
  }
  const [id, method, path, operationId, faulted, bodyText] = texts as [string, string, string, string, string, string];
  const entry: JournalEntry = {
    id,
    time: new Date(atMs).toISOString(),
    method,
    path,
    operationId,
    status,
    durationMs,
    faulted: faulted === "1",
  };
  if (bodyText !== "") entry.requestBody = bodyOfText(bodyText);
  return Object.assign(entry, journalReply(text.slice(from)));
}

export class Journal {
  /**
   * A ring: once full, `start` is the oldest entry (dropping one must not shift thousands on every
   * request). A slot holds an entry, an entry still to be read, or null: a recorded request, whose
   * texts are in `bytes`.
   */
  private entries: (JournalEntry | Unread | null)[] = [];
  /** `stride` numbers per slot (see there); doubles, stored unboxed in the array. */
  private numbers: number[] = [];
  /** The byte log's segments by number; the newest is where records are appended. */
  private segments = new Map<number, Segment>();
  private nextSegment = 0;
  /** The bytes of the live records. */
  private liveBytes = 0;
  /** The buffer of the last segment let go, for the next one (a steady journal allocates none). */
  private spare: Buffer | null = null;
  private start = 0;
  constructor(private readonly capacity = 5000) {}

  /**
   * Records an entry; `reply` is the body as sent, if any (see `journalReply`); `atMs`, if given,
   * is the entry's time (its `time` is then written from it when the journal is read); `bodyText`,
   * if given, is the request body's JSON text (`keptAsText`; the entry has no
   * `requestBody` then: it is read from the text).
   */
  add(entry: JournalEntry, reply?: unknown, atMs?: number, bodyText?: string): void {
    const slot =
      reply === undefined && atMs === undefined && bodyText === undefined
        ? entry
        : new Unread(entry, keptReply(reply), atMs, bodyText);
    this.put(slot, 0, 0, 0, undefined);
  }

  /**
   * Records a finished request (what `add` records of an entry without `requestBody`, with its
   * time `atMs`) as bytes when it can (see `separator`): a reply that is text (or none), and texts
   * before it without NUL (the body text is JSON, which holds none).
   */
  record(
    id: string,
    method: string,
    path: string,
    operationId: string,
    status: number,
    durationMs: number,
    faulted: boolean,
    atMs: number,
    bodyText: string | undefined,
    reply: unknown,
  ): void {
    const kept = keptReply(reply);
    if (
      (kept !== undefined && typeof kept !== "string") ||
      id.includes(separator) ||
      method.includes(separator) ||
      path.includes(separator) ||
      operationId.includes(separator)
    ) {
      this.add({ id, time: "", method, path, operationId, status, durationMs, faulted }, reply, atMs, bodyText);
      return;
    }
    const text = [id, method, path, operationId, faulted ? "1" : "", bodyText ?? "", kept ?? ""].join(separator);
    this.put(null, status, durationMs, atMs, text);
  }

  private put(
    slot: JournalEntry | Unread | null,
    status: number,
    durationMs: number,
    atMs: number,
    text?: string,
  ): void {
    const entries = this.entries;
    const numbers = this.numbers;
    let at = entries.length;
    if (at < this.capacity) {
      entries.push(slot);
      numbers.push(status, durationMs, atMs, 0, 0, 0);
    } else {
      at = this.start;
      this.start = (at + 1) % this.capacity;
      this.release(at);
      entries[at] = slot;
      numbers[stride * at] = status;
      numbers[stride * at + 1] = durationMs;
      numbers[stride * at + 2] = atMs;
    }
    if (text === undefined) return;
    const length = Buffer.byteLength(text);
    let number = this.nextSegment - 1;
    let segment = this.segments.get(number);
    if (!segment || segment.used + length > segment.bytes.length) {
      // The full segment goes when its last record dies (now, if none is live).
      if (segment?.live === 0) this.drop(number);
      const size = Math.max(length, Math.min(maximumSegment, Math.max(minimumSegment, this.liveBytes >> 2)));
      const spare = this.spare;
      this.spare = null;
      const bytes = spare && spare.length >= size && spare.length <= 2 * size ? spare : Buffer.allocUnsafeSlow(size);
      segment = { bytes, used: 0, live: 0 };
      number = this.nextSegment++;
      this.segments.set(number, segment);
    }
    segment.bytes.write(text, segment.used);
    numbers[stride * at + 3] = number;
    numbers[stride * at + 4] = segment.used;
    numbers[stride * at + 5] = length;
    segment.used += length;
    segment.live++;
    this.liveBytes += length;
  }

  /** The slot's bytes are no longer needed: its segment goes with its last live record (unless it is the newest). */
  private release(at: number): void {
    const numbers = this.numbers;
    const length = numbers[stride * at + 5]!;
    if (length === 0) return;
    numbers[stride * at + 5] = 0;
    this.liveBytes -= length;
    const number = numbers[stride * at + 3]!;
    const segment = this.segments.get(number)!;
    if (--segment.live === 0 && number !== this.nextSegment - 1) this.drop(number);
  }

  private drop(number: number): void {
    this.spare = this.segments.get(number)!.bytes;
    this.segments.delete(number);
  }

  /** Bytes held outside the heap (tests: the log holds its live records and at most three segments more). */
  get heldBytes(): number {
    let total = this.spare?.length ?? 0;
    for (const segment of this.segments.values()) total += segment.bytes.length;
    return total;
  }

  /** Oldest first. */
  list(filter: { operationId?: string; status?: number; search?: string; limit?: number } = {}): JournalEntry[] {
    const entries = this.entries;
    const numbers = this.numbers;
    for (let i = 0; i < entries.length; i++) {
      const slot = entries[i]!;
      if (slot === null) {
        const at = stride * i;
        const offset = numbers[at + 4]!;
        const text = this.segments.get(numbers[at + 3]!)!.bytes.toString("utf8", offset, offset + numbers[at + 5]!);
        entries[i] = readCompact(text, numbers[at]!, numbers[at + 1]!, numbers[at + 2]!);
        // (Read: its bytes are no longer needed.)
        this.release(i);
      } else if (slot instanceof Unread) entries[i] = slot.read();
    }
    const read = entries as JournalEntry[];
    let out = this.start === 0 ? read.slice() : [...read.slice(this.start), ...read.slice(0, this.start)];
    if (filter.operationId !== undefined) out = out.filter((e) => e.operationId === filter.operationId);
    if (filter.status !== undefined) out = out.filter((e) => e.status === filter.status);
    const needle = filter.search?.trim().toLowerCase();
    if (needle) out = out.filter((e) => entryMentions(e, needle));
    if (filter.limit !== undefined) out = out.slice(-filter.limit);
    return out;
  }

  clear(): void {
    this.entries = [];
    this.numbers = [];
    this.segments = new Map();
    this.spare = null;
    this.nextSegment = 0;
    this.liveBytes = 0;
    this.start = 0;
  }
}
