/**
 * MongoDB's change events as this server makes them from a store's changes: for change streams
 * (`watch`) and database triggers alike.
 */
import { Timestamp } from "bson";
import type { AppConfig } from "../config/app-config.ts";
import { randomHex } from "../state/ids.ts";
import type { ChangeEvent, Document } from "./documents.ts";

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
