/**
 * The notes' Extended JSON: arguments go out canonical (as the SDK sends them), results come back
 * through the relaxed reader (numbers become numbers, `$date` a Date, `$oid` an ObjectId).
 * `bson` is loaded with this route's chunk only.
 */
import { EJSON, ObjectId } from "bson";
import type { EJSONValue } from "../../../lib/api/call-function.ts";

export const notesNamespace = { database: "notes-app", collection: "notes" } as const;

export function toCanonical(value: Record<string, unknown>): EJSONValue {
  return EJSON.serialize(value, { relaxed: false });
}

export function fromEjson(value: EJSONValue): unknown {
  return EJSON.deserialize(value as Parameters<typeof EJSON.deserialize>[0], { relaxed: true });
}

export function parseEjsonText(text: string): unknown {
  return EJSON.parse(text, { relaxed: true });
}

export interface Note {
  /** A stable string for the UI (the ObjectId's hex). */
  id: string;
  /** The document's `_id` as stored, for queries. */
  _id: unknown;
  title: string;
  body: string;
  createdAt: Date | null;
  updatedAt: Date | null;
  /**
   * Counts the note's saves (1 when added); a save names the version it was edited from and is
   * refused when the note has moved on. Null for notes written before versions existed.
   */
  version: number | null;
}

export function idString(id: unknown): string {
  return id instanceof ObjectId ? id.toHexString() : EJSON.stringify({ id }, { relaxed: false });
}

const asDate = (value: unknown) => (value instanceof Date && !Number.isNaN(value.getTime()) ? value : null);

export const asVersion = (value: unknown) => (typeof value === "number" && Number.isInteger(value) ? value : null);

/** A stored document as a note (documents missing a title or body still show, with blanks). */
export function toNote(document: unknown): Note | null {
  if (typeof document !== "object" || document === null || !("_id" in document)) return null;
  const doc = document as Record<string, unknown>;
  return {
    id: idString(doc._id),
    _id: doc._id,
    title: typeof doc.title === "string" ? doc.title : "",
    body: typeof doc.body === "string" ? doc.body : "",
    createdAt: asDate(doc.createdAt),
    updatedAt: asDate(doc.updatedAt),
    version: asVersion(doc.version),
  };
}

/** Newest change first. */
export function sortNotes(notes: Note[]): Note[] {
  return [...notes].sort((a, b) => (b.updatedAt?.getTime() ?? 0) - (a.updatedAt?.getTime() ?? 0));
}

export function newNoteId(): ObjectId {
  return new ObjectId();
}
