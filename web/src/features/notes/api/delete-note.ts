import { callFunction } from "../../../lib/api/call-function.ts";
import { type Note, notesNamespace, toCanonical } from "./notes-ejson.ts";

/** Deletes a note (MongoDB `deleteOne`); deleting one that is already gone is fine. */
export async function deleteNote(note: Note): Promise<void> {
  await callFunction({
    name: "deleteOne",
    service: "mongodb-atlas",
    arguments: [toCanonical({ ...notesNamespace, query: { _id: note._id } })],
  });
}
