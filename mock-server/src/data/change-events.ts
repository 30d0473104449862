/**
 * MongoDB's change events as this server makes them from a store's changes: for change streams
 * (`watch`) and database triggers alike.
 */
import { Long, Timestamp } from "bson";
import type { AppConfig } from "../config/app-config.ts";
import { randomHex } from "../state/ids.ts";
import type { ChangeEvent, Document } from "./documents.ts";

/** The last cluster time given: a second and the increment within it. */
let lastSecond = 0;
let lastIncrement = 0;

/** The next cluster time at `ms`: its second, and an increment unique within it (in this process). */
function nextClusterTime(ms: number): { t: number; i: number } {
  const t = Math.max(Math.floor(ms / 1000), lastSecond);
  lastIncrement = t === lastSecond ? lastIncrement + 1 : 1;
  lastSecond = t;
  return { t, i: lastIncrement };
}

/**
 * This process's part of the resume tokens it makes: a cluster time and a place are unique within
 * one process, not between the instances sharing a database (or a restart within the second).
 * Drawn once: a draw for each event took 8 µs, 170 ms at once for an insertMany of 20,000.
 */
const processPart = randomHex(8);

/**
 * Stamps the events of one commit as MongoDB's oplog times them: each its own cluster time (an
 * increment within the second), or, for a transaction (`together`), one cluster time for all, as
 * MongoDB gives a transaction's events its commit time; each a wall time and a resume token. The
 * store stamps them before it announces them, so every stream and trigger, on every instance,
 * sees the same `clusterTime` and `_id`.
 */
export function stampEvents(events: ChangeEvent[], together: boolean, now = Date.now()): void {
  const wallTime = new Date(now);
  const shared = together && events.length > 0 ? nextClusterTime(now) : undefined;
  events.forEach((event, place) => {
    const { t, i } = shared ?? nextClusterTime(now);
    const token = `82${hex(t, 8)}${hex(i, 8)}${hex(place, 4)}${processPart}`.toUpperCase();
    event.stamp = { t, i, wallTime, token };
  });
}

const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");

/**
 * The change-event document of a change (what `filter` matches against and what is sent), its
 * fields in MongoDB's order (change_stream_event_transform.cpp: a transaction's `txnNumber` and
 * `lsid` first). A change the store did not stamp takes `clusterSeconds` and
 * `increment`.
 */
export function changeDocument(change: ChangeEvent, clusterSeconds: number, increment: number): Document {
  const stamp = change.stamp ?? {
    t: clusterSeconds,
    i: increment,
    wallTime: new Date(clusterSeconds * 1000),
    token: `82${hex(clusterSeconds, 8)}${hex(increment, 8)}${randomHex(8)}`.toUpperCase(),
  };
  const event: Document = {};
  // (A transaction's change: MongoDB's transform adds these first.)
  if (change.txnNumber !== undefined) event.txnNumber = Long.fromNumber(change.txnNumber);
  if (change.lsid !== undefined) event.lsid = change.lsid;
  event._id = { _data: stamp.token };
  event.operationType = change.operationType;
  event.clusterTime = new Timestamp({ t: stamp.t, i: stamp.i });
  event.wallTime = stamp.wallTime;
  if (change.fullDocument !== undefined) event.fullDocument = change.fullDocument;
  event.ns = { db: change.database, coll: change.collection };
  if (change.to !== undefined) event.to = change.to;
  if (change.documentKey !== undefined) event.documentKey = change.documentKey;
  if (change.updateDescription !== undefined) event.updateDescription = change.updateDescription;
  return event;
}

/** Whether a change is of the collection: in it, or (a rename) into it. */
export function ofCollection(change: ChangeEvent, database: string, collection: string): boolean {
  return (
    (change.database === database && change.collection === collection) ||
    (change.to !== undefined && change.to.db === database && change.to.coll === collection)
  );
}

/**
 * Whether a change ends the streams of the collection (MongoDB's invalidating commands of a
 * collection's change stream): its drop, or a rename from or over it.
 */
export function invalidates(change: ChangeEvent, database: string, collection: string): boolean {
  return (
    (change.operationType === "drop" || change.operationType === "rename") && ofCollection(change, database, collection)
  );
}

/**
 * The `invalidate` event that follows an invalidating change's own (`event`, its document): its
 * cluster and wall times, and a resume token of its own (MongoDB marks the command's token as
 * from an invalidate).
 */
export function invalidateDocument(event: Document): Document {
  const token = (event._id as { _data: string })._data;
  return {
    _id: { _data: `${token}01` },
    operationType: "invalidate",
    clusterTime: event.clusterTime,
    wallTime: event.wallTime,
  };
}

/**
 * Whether a change of this namespace needs the document before it: some enabled database trigger
 * of the app asks for it (`fullDocumentBeforeChange`).
 */
export function wantsDocumentBefore(triggers: AppConfig["triggers"], database: string, collection: string): boolean {
  return (triggers ?? []).some(
    (trigger) =>
      trigger.type === "DATABASE" &&
      trigger.disabled !== true &&
      trigger.fullDocumentBeforeChange === true &&
      trigger.database === database &&
      (trigger.collection === undefined || trigger.collection === collection),
  );
}
