import { callFunction } from "../../../lib/api/call-function.ts";
import { idString, type Note, newNoteId, notesNamespace, toCanonical } from "./notes-ejson.ts";

export interface NoteDraft {
  title: string;
  body: string;
}

/**
 * Adds a note (MongoDB `insertOne`). The id is chosen here, so the app knows it before the change
 * stream reports the insert (which may arrive before this reply).
 */
export function prepareNote(userId: string, draft: NoteDraft): { note: Note; document: Record<string, unknown> } {
  const now = new Date();
  const _id = newNoteId();
  const document = {
    _id,
    owner_id: userId,
    title: draft.title,
    body: draft.body,
    createdAt: now,
    updatedAt: now,
    version: 1,
  };
  return {
    note: { id: idString(_id), _id, title: draft.title, body: draft.body, createdAt: now, updatedAt: now, version: 1 },
    document,
  };
}

export async function insertNote(document: Record<string, unknown>): Promise<void> {
  await callFunction({
    name: "insertOne",
    service: "mongodb-atlas",
    arguments: [toCanonical({ ...notesNamespace, document })],
  });
}
