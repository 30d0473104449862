/**
 * MongoDB's limit on one document: 16 MiB of BSON (BSONObjMaxUserSize), checked on every document
 * an action writes, with the server's own texts: an insert answers "object to insert too large",
 * an update, a replacement or an upsert "Resulting document after update is larger than 16777216"
 * (query-jobs.ts, measured through shared parts).
 */
import { calculateObjectSize } from "bson";
import { type AppServicesError, appServicesErrors as errors } from "../errors/catalogue.ts";
import type { Document } from "./documents.ts";

export const maxDocumentBytes = 16 * 1024 * 1024;

/** The document's size as BSON (wide-values.ts `documentSizeInSlices` for a wide one). */
export const documentSize = (doc: Document) => calculateObjectSize(doc);

/** The insert's error for a document of `size` bytes when it is too large, else null. */
export function tooLargeToInsert(size: number): AppServicesError | null {
  return size > maxDocumentBytes ? errors.insertTooLarge(size) : null;
}

/** The insert's error when the document is too large, else null. */
export function documentTooLarge(doc: Document): AppServicesError | null {
  return tooLargeToInsert(documentSize(doc));
}
