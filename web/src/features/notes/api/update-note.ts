import { callFunction } from "../../../lib/api/call-function.ts";
import { findNote } from "./find-note.ts";
import type { NoteDraft } from "./insert-note.ts";
import { fromEjson, type Note, notesNamespace, toCanonical } from "./notes-ejson.ts";

/** The note was deleted (here or elsewhere) before the change reached it. */
export class NoteGoneError extends Error {
  constructor() {
    super("This note no longer exists. It may have been deleted in another tab or on another device.");
    this.name = "NoteGoneError";
  }
}

/** The note was saved elsewhere after this edit began: the save was refused; `current` is the note now. */
export class NoteChangedError extends Error {
  constructor(readonly current: Note) {
    super("This note was changed in another tab or on another device since you began editing it.");
    this.name = "NoteChangedError";
  }
}

/**
 * Saves an edit of a note (MongoDB `updateOne`) as a compare-and-set: only while the stored note is
 * still the version the edit began from (`note`), so a change made elsewhere in the meantime is
 * never overwritten. Resolves with the note as saved; otherwise throws NoteChangedError (with the
 * note as it is now) or NoteGoneError.
 */
export async function updateNote(note: Note, draft: NoteDraft): Promise<Note> {
  const updatedAt = new Date();
  const reply = fromEjson(
    await callFunction({
      name: "updateOne",
      service: "mongodb-atlas",
      arguments: [
        toCanonical({
          ...notesNamespace,
          // Notes written before versions existed have none: the first save gives them one.
          query: { _id: note._id, version: note.version === null ? { $exists: false } : note.version },
          update: { $set: { title: draft.title, body: draft.body, updatedAt }, $inc: { version: 1 } },
        }),
      ],
    }),
  ) as { matchedCount?: unknown };
  if (reply.matchedCount === 0) {
    const current = await findNote(note._id);
    throw current ? new NoteChangedError(current) : new NoteGoneError();
  }
  return { ...note, title: draft.title, body: draft.body, updatedAt, version: (note.version ?? 0) + 1 };
}
