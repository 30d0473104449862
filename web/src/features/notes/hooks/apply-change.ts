import type { ChangeEvent } from "../api/call-function-streaming.ts";
import { asVersion, idString, type Note, sortNotes, toNote } from "../api/notes-ejson.ts";

/** The id of the note an event is about. */
export function changedNoteId(event: ChangeEvent): string | null {
  return event.documentKey && "_id" in event.documentKey ? idString(event.documentKey._id) : null;
}

/** Events that say nothing about single notes (the collection was dropped, renamed, …): reload then. */
export function needsReload(event: ChangeEvent): boolean {
  return !["insert", "replace", "update", "delete"].includes(event.operationType ?? "");
}

/** Whether the list shows a later version of the note than `version` (a save counts up by one). */
function showsLater(notes: Note[], id: string | null, version: unknown): boolean {
  const incoming = asVersion(version);
  const shown = notes.find((n) => n.id === id)?.version ?? null;
  return incoming !== null && shown !== null && incoming < shown;
}

/**
 * Puts a note into the list (newest first) unless the list shows a later version of it: an event
 * delivered late, a save's answer behind another tab's save, or a change applied again over a
 * load that already held what followed it.
 */
export function putNote(notes: Note[], note: Note): Note[] {
  if (showsLater(notes, note.id, note.version)) return notes;
  return sortNotes([...notes.filter((n) => n.id !== note.id), note]);
}

/** Applies a change event to the list (newest first). Unknown notes of an update are left alone. */
export function applyChange(notes: Note[], event: ChangeEvent): Note[] {
  const key = changedNoteId(event);
  switch (event.operationType) {
    case "insert":
    case "replace": {
      const note = toNote(event.fullDocument);
      return note ? putNote(notes, note) : notes;
    }
    case "update": {
      const full = toNote(event.fullDocument);
      if (full) return putNote(notes, full);
      const current = notes.find((n) => n.id === key);
      if (!current) return notes;
      if (showsLater(notes, key, event.updateDescription?.updatedFields?.version)) return notes;
      const changed: Note = { ...current };
      const fields = event.updateDescription?.updatedFields ?? {};
      if (typeof fields.title === "string") changed.title = fields.title;
      if (typeof fields.body === "string") changed.body = fields.body;
      if (fields.updatedAt instanceof Date) changed.updatedAt = fields.updatedAt;
      if (fields.createdAt instanceof Date) changed.createdAt = fields.createdAt;
      if ("version" in fields) changed.version = asVersion(fields.version);
      for (const removed of event.updateDescription?.removedFields ?? []) {
        if (removed === "title" || removed === "body") changed[removed] = "";
        if (removed === "updatedAt" || removed === "createdAt" || removed === "version") changed[removed] = null;
      }
      return sortNotes(notes.map((n) => (n.id === key ? changed : n)));
    }
    case "delete":
      return notes.filter((n) => n.id !== key);
    default:
      return notes;
  }
}

/** A sentence for a change made elsewhere (another tab, device or client). */
export function describeChange(event: ChangeEvent): string | null {
  const title = (value: unknown) => (typeof value === "string" && value.trim() !== "" ? `“${value}”` : "A note");
  switch (event.operationType) {
    case "insert":
      return `${title(event.fullDocument?.title)} was added elsewhere.`;
    case "replace":
    case "update":
      return `${title(event.fullDocument?.title ?? event.updateDescription?.updatedFields?.title)} was changed elsewhere.`;
    case "delete":
      return "A note was deleted elsewhere.";
    default:
      return null;
  }
}
