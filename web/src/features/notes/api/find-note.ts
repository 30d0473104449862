import { callFunction } from "../../../lib/api/call-function.ts";
import { fromEjson, type Note, notesNamespace, toCanonical, toNote } from "./notes-ejson.ts";

/** One note as it is stored now (MongoDB `findOne`), or null when it no longer exists. */
export async function findNote(id: unknown): Promise<Note | null> {
  const reply = await callFunction({
    name: "findOne",
    service: "mongodb-atlas",
    arguments: [toCanonical({ ...notesNamespace, query: { _id: id } })],
  });
  return toNote(fromEjson(reply));
}
