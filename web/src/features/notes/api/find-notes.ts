import { callFunction } from "../../../lib/api/call-function.ts";
import { fromEjson, type Note, notesNamespace, sortNotes, toCanonical, toNote } from "./notes-ejson.ts";

/** How many notes a page of the list holds; older ones come a page at a time. */
export const notesPageSize = 100;

/** The list's order: newest change first, then by id (so that a page ends at one place). */
const order = { updatedAt: -1, _id: -1 };

/**
 * The notes after `last` in the list's order. A note without a date of change (written before
 * dates were kept) comes after every dated one, as MongoDB sorts a missing or null value (or any
 * other type but a timestamp) below a date.
 */
export function olderThan(last: Pick<Note, "updatedAt" | "_id">): Record<string, unknown> {
  const undated = { updatedAt: { $not: { $type: "date" } } };
  if (last.updatedAt === null) return { ...undated, _id: { $lt: last._id } };
  return {
    $or: [{ updatedAt: { $lt: last.updatedAt } }, { updatedAt: last.updatedAt, _id: { $lt: last._id } }, undated],
  };
}

/**
 * The user's notes (MongoDB `find` through callFunction; the collection's rules keep it to the
 * owner's): the first `limit` in the list's order, or those after `after`; `more` says whether
 * others follow.
 */
export async function findNotes(
  userId: string,
  signal?: AbortSignal,
  { limit = notesPageSize, after }: { limit?: number; after?: Pick<Note, "updatedAt" | "_id"> } = {},
): Promise<{ notes: Note[]; more: boolean }> {
  const query = { owner_id: userId, ...(after ? olderThan(after) : {}) };
  const reply = await callFunction(
    {
      name: "find",
      service: "mongodb-atlas",
      arguments: [toCanonical({ ...notesNamespace, query, sort: order, limit: limit + 1 })],
    },
    signal,
  );
  const documents = fromEjson(reply);
  const found = Array.isArray(documents) ? documents : [];
  const notes = found
    .slice(0, limit)
    .map(toNote)
    .filter((note) => note !== null);
  return { notes: sortNotes(notes), more: found.length > limit };
}
