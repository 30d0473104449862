/**
 * Change events as the service streams them: MongoDB change-event documents as canonical
 * Extended JSON in SSE `data:` lines, with `%`, CR and LF percent-escaped (both SDKs un-escape
 * exactly these), and errors as `event: error`.
 */
import { Timestamp } from "bson";
import type { ChangeEvent } from "../../data/documents.ts";
import { type Document, idKey, toEJSONText } from "../../data/documents.ts";
import { compileQuery } from "../../data/query-engine.ts";
import { defaultQueryLimits, type QueryLimits, withQueryLimits } from "../../data/query-limits.ts";
import { randomHex } from "../../state/ids.ts";

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
  /** The client fell too far behind (the unsent events passed the app's maxStreamBufferBytes). */
  bufferLimit: (limitBytes: number) =>
    sseError(
      "StreamBufferLimitExceeded",
      `change stream closed: the client is not reading its events (more than ${limitBytes} bytes unsent)`,
    ),
  mongo: (message: string) => sseError("MongoDBError", message),
};

/** The change-event document of a change (what `filter` matches against and what is sent). */
export function changeDocument(change: ChangeEvent, clusterSeconds: number, increment: number): Document {
  const event: Document = {
    _id: {
      _data: `82${clusterSeconds.toString(16).padStart(8, "0")}${increment.toString(16).padStart(8, "0")}${randomHex(8)}`,
    },
    operationType: change.operationType,
    clusterTime: new Timestamp({ t: clusterSeconds, i: increment }),
    ns: { db: change.database, coll: change.collection },
    documentKey: change.documentKey,
  };
  if (change.fullDocument !== undefined) event.fullDocument = change.fullDocument;
  if (change.updateDescription !== undefined) event.updateDescription = change.updateDescription;
  return event;
}

export interface WatchSpec {
  database: string;
  collection: string;
  ids?: unknown[];
  filter?: Document;
}

/**
 * Decides which changes a watcher gets: its namespace, its `ids`, its `filter`, and the read rule.
 * The filter has the query engine's regular expressions and runs under the query limits once per
 * change (docs/decisions/0006-query-limits.md): a filter past them throws, and the stream ends.
 */
export function watchMatcher(spec: WatchSpec, readFilter: Document, limits: QueryLimits = defaultQueryLimits) {
  const ids = spec.ids ? new Set(spec.ids.map(idKey)) : null;
  const [filter, readable] = withQueryLimits(limits, () => [
    spec.filter && Object.keys(spec.filter).length > 0 ? compileQuery(spec.filter) : null,
    Object.keys(readFilter).length > 0 ? compileQuery(readFilter) : null,
  ]);
  return (change: ChangeEvent, event: () => Document): boolean => {
    if (change.database !== spec.database || change.collection !== spec.collection) return false;
    if (ids && !ids.has(idKey(change.documentKey._id))) return false;
    return withQueryLimits(limits, () => {
      if (readable) {
        const doc = change.fullDocument ?? change.before;
        if (!doc || !readable.test(doc)) return false;
      }
      return filter ? filter.test(event()) : true;
    });
  };
}

export function encodeChange(event: Document): string {
  return sseData(toEJSONText(event));
}
