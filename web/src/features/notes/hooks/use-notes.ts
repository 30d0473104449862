import { useCallback, useEffect, useReducer, useState } from "react";
import { isAbortError } from "../../../lib/errors/service-errors.ts";
import type { ChangeEvent } from "../api/call-function-streaming.ts";
import { findNotes } from "../api/find-notes.ts";
import { type Note, sortNotes } from "../api/notes-ejson.ts";
import { applyChange } from "./apply-change.ts";

export interface NotesState {
  status: "loading" | "ready" | "error";
  notes: Note[];
  error: unknown;
}

type Action =
  | { type: "load" }
  | { type: "loaded"; notes: Note[] }
  | { type: "failed"; error: unknown }
  | { type: "change"; event: ChangeEvent }
  | { type: "put"; note: Note }
  | { type: "remove"; id: string };

export function notesReducer(state: NotesState, action: Action): NotesState {
  switch (action.type) {
    case "load":
      return { ...state, status: "loading", error: null };
    case "loaded":
      return { status: "ready", notes: action.notes, error: null };
    case "failed":
      return { ...state, status: "error", error: action.error };
    case "change":
      return { ...state, notes: applyChange(state.notes, action.event) };
    case "put":
      return { ...state, notes: sortNotes([...state.notes.filter((n) => n.id !== action.note.id), action.note]) };
    case "remove":
      return { ...state, notes: state.notes.filter((n) => n.id !== action.id) };
  }
}

/** The user's notes: loaded on start and on `reload()`, then kept current by local and streamed changes. */
export function useNotes(userId: string) {
  const [state, dispatch] = useReducer(notesReducer, { status: "loading", notes: [], error: null });
  const [generation, setGeneration] = useState(0);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `generation` asks for a reload
  useEffect(() => {
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
  }, [userId, generation]);

  const reload = useCallback(() => setGeneration((n) => n + 1), []);
  const applyEvent = useCallback((event: ChangeEvent) => dispatch({ type: "change", event }), []);
  const put = useCallback((note: Note) => dispatch({ type: "put", note }), []);
  const remove = useCallback((id: string) => dispatch({ type: "remove", id }), []);
  return { ...state, reload, applyEvent, put, remove };
}
