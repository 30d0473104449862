import { type Note, sortNotes } from "../api/notes-ejson.ts";

/**
 * What happened to a note while it was being edited: nothing (null), saved elsewhere ("changed":
 * another version is stored now) or deleted elsewhere ("deleted"). `base` is the version the edit
 * began from, `current` the note as the list has it now (null when it is gone).
 */
export type EditConflict = "changed" | "deleted" | null;

export function editConflict(base: Note, current: Note | null): EditConflict {
  if (current === null) return "deleted";
  if (current.version !== base.version) return "changed";
  // Notes without versions (written before them): their last change time tells.
  if (base.version === null) return current.updatedAt?.getTime() !== base.updatedAt?.getTime() ? "changed" : null;
  return null;
}

export interface ListedNote {
  /** The note as stored now; for a note deleted during its edit, the version the edit began from. */
  note: Note;
  /** The version being edited, when the note is being edited. */
  base: Note | null;
  /** Deleted elsewhere while being edited: shown only so the draft is not lost. */
  gone: boolean;
}

/**
 * The list as shown: every note, with the edits under way; a note deleted elsewhere during its edit
 * stays in the list (in its old place) until the draft is saved as a new note or discarded.
 */
export function listWithDrafts(notes: Note[], editing: Readonly<Record<string, Note>>): ListedNote[] {
  const present = new Set(notes.map((n) => n.id));
  const gone = Object.values(editing).filter((base) => !present.has(base.id));
  return sortNotes([...notes, ...gone]).map((note) => ({
    note,
    base: editing[note.id] ?? null,
    gone: !present.has(note.id),
  }));
}
