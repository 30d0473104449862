/**
 * Change events as the service streams them: MongoDB change-event documents as canonical
 * Extended JSON in SSE `data:` lines, with `%`, CR and LF percent-escaped (both SDKs un-escape
 * exactly these), and errors as `event: error`.
 */
import { randomUUID } from "node:crypto";
import { ofCollection } from "../../data/change-events.ts";
import type { ChangeEvent } from "../../data/documents.ts";
import { type Document, idKey, isDocument, toEJSONText } from "../../data/documents.ts";
import { matchChange } from "../../data/evaluation.ts";
import { compileQuery, readsTheTime } from "../../data/query-engine.ts";
import type { MatchJob, Shaper } from "../../data/query-jobs.ts";
import { defaultQueryLimits, NeedsWorker, type QueryLimits, withQueryLimits } from "../../data/query-limits.ts";
import { Turns } from "../../data/turns.ts";
import { holdsWide, textInSlices } from "../../data/wide-values.ts";

export function escapeSseData(text: string): string {
  return text.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}

export function sseData(text: string): string {
  return `data: ${escapeSseData(text)}\n\n`;
}

export function sseError(errorCode: string, message: string): string {
  return `event: error\n${sseData(JSON.stringify({ error_code: errorCode, error: message }))}`;
}

/** The error events that end a stream (docs/decisions/0011-revocation.md). */
export const streamErrors = {
  /** Its session, user or app is gone: realm-web throws a WatchError with this code, clients refresh. */
  invalidSession: (reason: string) => sseError("InvalidSession", `invalid session: ${reason}`),
  /** The server stops, or may have missed events: the session is good, clients reopen the stream. */
  unavailable: (reason: string) => sseError("ServiceUnavailable", `service unavailable: ${reason}`),
  /** The client fell too far behind (the unsent events passed the app's maxStreamBufferBytes). */
  bufferLimit: (limitBytes: number) =>
    sseError(
      "StreamBufferLimitExceeded",
      `change stream closed: the client is not reading its events (more than ${limitBytes} bytes unsent)`,
    ),
  /** The instance's streams hold too much unsent, and this client is one of the slow readers. */
  instanceBufferLimit: (limitBytes: number) =>
    sseError(
      "StreamBufferLimitExceeded",
      `change stream closed: the client is reading its events too slowly while the server's streams hold more than ${limitBytes} bytes unsent`,
    ),
  mongo: (message: string) => sseError("MongoDBError", message),
};

/**
 * A change event as the rules let the watcher read it (decision 0029): its document cut down as a
 * read's, and of its update's fields those the watcher may read (`of`: the document whose role
 * decides, after the change or, deleted, before it).
 */
export function shapedChange(event: Document, shaper: Shaper, of: Document | undefined): Document {
  if (!of) return event;
  const out: Document = { ...event };
  if (isDocument(event.fullDocument)) out.fullDocument = shaper.document(event.fullDocument);
  const update = event.updateDescription;
  if (isDocument(update)) {
    const updatedFields: Document = {};
    if (isDocument(update.updatedFields))
      for (const [path, value] of Object.entries(update.updatedFields)) {
        const readable = shaper.field(of, path, value);
        if (readable !== undefined) updatedFields[path] = readable;
      }
    const removedFields = Array.isArray(update.removedFields)
      ? update.removedFields.filter((path) => typeof path === "string" && shaper.sees(of, path))
      : [];
    out.updateDescription = { ...update, updatedFields, removedFields };
  }
  return out;
}

export interface WatchSpec {
  database: string;
  collection: string;
  ids?: unknown[];
  filter?: Document;
}

/**
 * Decides which changes a watcher gets: its namespace, its `ids`, its `filter`, and the read rule.
 * The filter has the query engine's regular expressions and runs under the app's query limits once
 * per change (docs/decisions/0006-query-limits.md): on the main thread's slice, else in a query
 * worker (docs/decisions/0019-evaluation-off-the-main-thread.md); a filter past the limits throws,
 * and the stream ends. `lane`: the watcher's app and user, and its client address's group (their
 * turn in the workers' queue); `clock`, the app's: a filter's `$$NOW` (`$$CLUSTER_TIME`) is its time
 * at each change (decision 0063), and such a filter is compiled for each change, not once.
 */
export function watchMatcher(
  spec: WatchSpec,
  readFilter: Document,
  limits: QueryLimits = defaultQueryLimits,
  {
    lane,
    group,
    clock,
  }: { lane: string; group?: string | undefined; clock?: { readonly offsetMs: number; now(): number } } = { lane: "" },
) {
  const ids = spec.ids ? new Set(spec.ids.map(idKey)) : null;
  const job: MatchJob = {
    kind: "match",
    filter: spec.filter && Object.keys(spec.filter).length > 0 ? spec.filter : null,
    readFilter: Object.keys(readFilter).length > 0 ? readFilter : null,
  };
  // Compiled once for the main thread (and refused at once when it does not compile); a filter
  // too large to compile there is compiled in a worker for each change.
  let compiled: [{ test(doc: unknown): boolean } | null, { test(doc: unknown): boolean } | null] | null = null;
  try {
    compiled = withQueryLimits(
      limits,
      () => [job.filter ? compileQuery(job.filter) : null, job.readFilter ? compileQuery(job.readFilter) : null],
      { mainThread: true },
    );
  } catch (error) {
    if (!(error instanceof NeedsWorker)) throw error;
  }
  // (A filter that reads the time is compiled again at each change: a compiled query keeps its
  // $$NOW. Looked for only in filters small enough to have compiled here.)
  const filterReadsTime = compiled !== null && job.filter !== null && readsTheTime(job.filter);
  const readFilterReadsTime = compiled !== null && job.readFilter !== null && readsTheTime(job.readFilter);
  // A collection's own events (its drop, a rename, the invalidate after them) are about no
  // document: `ids` takes none of them, and the document rules have nothing to decide on (the
  // watcher may read the collection, or it gets nothing at all); the filter decides.
  const collectionJob: MatchJob = { ...job, readFilter: null };
  return async (change: ChangeEvent, event: () => Document): Promise<boolean> => {
    if (!ofCollection(change, spec.database, spec.collection)) return false;
    const key = change.documentKey;
    if (ids && (key === undefined || !ids.has(idKey(key._id)))) return false;
    const doc = key === undefined ? undefined : (change.fullDocument ?? change.before);
    const here =
      compiled === null
        ? null
        : () => {
            const [compiledFilter, compiledReadable] = compiled!;
            const readable = readFilterReadsTime ? compileQuery(job.readFilter!) : compiledReadable;
            if (key !== undefined && readable && (!doc || !readable.test(doc))) return false;
            const filter = filterReadsTime ? compileQuery(job.filter!) : compiledFilter;
            return filter ? filter.test(event()) : true;
          };
    const evaluation = {
      limits,
      deadline: performance.now() + limits.timeoutMs,
      lane,
      ...(group ? { group } : {}),
      operator: "watch",
      // (The change's time, one `$$NOW` for its filters: the app's clock's when it has one.)
      now: clock?.now() ?? Date.now(),
    };
    return matchChange(evaluation, here, key === undefined ? collectionJob : job, event(), doc);
  };
}

/**
 * A change event's SSE block. The document a change carries whole (`fullDocument`, the same object
 * for every stream that sends it as it is) is written and escaped once for all of them, and the
 * rest of each stream's event (its own resume token and time) around it: ten streams sent a 900 KB
 * document wrote and escaped it ten times on the main thread, a hundred a 15 MB one for 28 s. A wide
 * or long text is written and escaped in slices (a 200,000-field document: ~60 ms to write at once,
 * and its 8 MB escaped at once held the thread 85 ms more: wide-values.ts ContainerText).
 */
export async function encodeChange(event: Document): Promise<string> {
  const whole = event.fullDocument;
  if (!isDocument(whole)) return `data: ${await escapedText(event)}\n\n`;
  let shared = documentTexts.get(whole);
  if (shared === undefined) {
    shared = escapedText(whole);
    documentTexts.set(whole, shared);
  }
  const rest = await escapedText({ ...event, fullDocument: placeholder });
  const at = rest.indexOf(placeholderText);
  return `data: ${rest.slice(0, at)}${await shared}${rest.slice(at + placeholderText.length)}\n\n`;
}

/** The escaped texts of the documents changes carry whole, while some stream may still send them. */
const documentTexts = new WeakMap<Document, Promise<string>>();
/**
 * What stands for the shared document in a stream's own part of the event: ASCII that no text
 * escapes, unknown outside this process (a user's value cannot be it).
 */
const placeholder = `whole-document-${randomUUID()}`;
const placeholderText = JSON.stringify(placeholder);

/** A value's canonical Extended JSON text, SSE-escaped; a wide or long one in slices. */
async function escapedText(value: Document): Promise<string> {
  const text = holdsWide(value) ? await textInSlices(value) : toEJSONText(value);
  if (text.length <= escapePiece) return escapeSseData(text);
  const turns = new Turns();
  let escaped = "";
  for (let from = 0; from < text.length; from += escapePiece) {
    escaped += escapeSseData(text.slice(from, from + escapePiece));
    await turns.maybe();
  }
  return escaped;
}

/** The characters of a wide event's text escaped in one step (each is escaped alone: any cut will do). */
const escapePiece = 64 * 1024;
