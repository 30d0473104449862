import { callFunction } from "../../../lib/api/call-function.ts";
import { fromEjson, type Note, notesNamespace, sortNotes, toCanonical, toNote } from "./notes-ejson.ts";

export const notesLimit = 500;

/** The user's notes (MongoDB `find` through callFunction; the collection's rules keep it to the owner's). */
export async function findNotes(userId: string, signal?: AbortSignal): Promise<Note[]> {
  const reply = await callFunction(
    {
      name: "find",
      service: "mongodb-atlas",
      arguments: [
        toCanonical({ ...notesNamespace, query: { owner_id: userId }, sort: { updatedAt: -1 }, limit: notesLimit }),
      ],
    },
    signal,
  );
  const documents = fromEjson(reply);
  return sortNotes((Array.isArray(documents) ? documents : []).map(toNote).filter((note) => note !== null));
}
