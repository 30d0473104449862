import { useCallback, useEffect, useReducer, useState } from "react";
import { isAbortError } from "../../../lib/errors/service-errors.ts";
import type { ChangeEvent } from "../api/call-function-streaming.ts";
import { findNotes } from "../api/find-notes.ts";
import type { Note } from "../api/notes-ejson.ts";
import { applyChange, putNote } from "./apply-change.ts";

/** A change to the list: streamed, or made here (a save's answer, a deletion). */
type Edit = { type: "change"; event: ChangeEvent } | { type: "put"; note: Note } | { type: "remove"; id: string };

export interface NotesState {
  status: "loading" | "ready" | "error";
  notes: Note[];
  error: unknown;
  /**
   * The changes applied while a load runs: what the load answers may have been read before them,
   * so they are applied again to it (in order, each note ending at its latest version).
   */
  sinceLoad: Edit[];
}

type Action = { type: "load" } | { type: "loaded"; notes: Note[] } | { type: "failed"; error: unknown } | Edit;

export const initialNotesState: NotesState = { status: "loading", notes: [], error: null, sinceLoad: [] };

function applyEdit(notes: Note[], edit: Edit): Note[] {
  switch (edit.type) {
    case "change":
      return applyChange(notes, edit.event);
    case "put":
      return putNote(notes, edit.note);
    case "remove":
      return notes.filter((n) => n.id !== edit.id);
  }
}

export function notesReducer(state: NotesState, action: Action): NotesState {
  switch (action.type) {
    case "load":
      return { ...state, status: "loading", error: null, sinceLoad: [] };
    case "loaded":
      return { status: "ready", notes: state.sinceLoad.reduce(applyEdit, action.notes), error: null, sinceLoad: [] };
    case "failed":
      return { ...state, status: "error", error: action.error, sinceLoad: [] };
    default:
      return {
        ...state,
        notes: applyEdit(state.notes, action),
        sinceLoad: state.status === "loading" ? [...state.sinceLoad, action] : state.sinceLoad,
      };
  }
}

/**
 * The user's notes: loaded once `enabled` (the board waits for its change stream, so that no
 * change falls between the load and the stream) and on `reload()`, then kept current by local and
 * streamed changes.
 */
export function useNotes(userId: string, enabled = true) {
  const [state, dispatch] = useReducer(notesReducer, initialNotesState);
  const [generation, setGeneration] = useState(0);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `generation` asks for a reload
  useEffect(() => {
    if (!enabled) return;
    const controller = new AbortController();
    dispatch({ type: "load" });
    findNotes(userId, controller.signal).then(
      (notes) => {
        if (!controller.signal.aborted) dispatch({ type: "loaded", notes });
      },
      (error: unknown) => {
        if (!controller.signal.aborted && !isAbortError(error)) dispatch({ type: "failed", error });
      },
    );
    return () => controller.abort();
  }, [userId, generation, enabled]);

  const reload = useCallback(() => setGeneration((n) => n + 1), []);
  const applyEvent = useCallback((event: ChangeEvent) => dispatch({ type: "change", event }), []);
  const put = useCallback((note: Note) => dispatch({ type: "put", note }), []);
  const remove = useCallback((id: string) => dispatch({ type: "remove", id }), []);
  return { ...state, reload, applyEvent, put, remove };
}
