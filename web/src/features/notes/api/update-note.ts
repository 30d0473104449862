import { callFunction } from "../../../lib/api/call-function.ts";
import type { NoteDraft } from "./insert-note.ts";
import { fromEjson, type Note, notesNamespace, toCanonical } from "./notes-ejson.ts";

/** The note was deleted (here or elsewhere) before the change reached it. */
export class NoteGoneError extends Error {
  constructor() {
    super("This note no longer exists. It may have been deleted in another tab or on another device.");
    this.name = "NoteGoneError";
  }
}

/** Changes a note's title and text (MongoDB `updateOne`); resolves with the note as changed. */
export async function updateNote(note: Note, draft: NoteDraft): Promise<Note> {
  const updatedAt = new Date();
  const reply = fromEjson(
    await callFunction({
      name: "updateOne",
      service: "mongodb-atlas",
      arguments: [
        toCanonical({
          ...notesNamespace,
          query: { _id: note._id },
          update: { $set: { title: draft.title, body: draft.body, updatedAt } },
        }),
      ],
    }),
  ) as { matchedCount?: unknown };
  if (reply.matchedCount === 0) throw new NoteGoneError();
  return { ...note, title: draft.title, body: draft.body, updatedAt };
}
