import { useCallback, useEffect, useReducer, useRef, useState } from "react";
import { isAbortError } from "../../../lib/errors/service-errors.ts";
import type { ChangeEvent } from "../api/call-function-streaming.ts";
import { findNotes, notesPageSize } from "../api/find-notes.ts";
import type { Note } from "../api/notes-ejson.ts";
import { applyChange, putNote } from "./apply-change.ts";

/** A change to the list: streamed, or made here (a save's answer, a deletion). */
type Edit = { type: "change"; event: ChangeEvent } | { type: "put"; note: Note } | { type: "remove"; id: string };

export interface NotesState {
  status: "loading" | "ready" | "error";
  notes: Note[];
  error: unknown;
  /** Whether older notes than those shown are stored (a page at a time: `loadOlder`). */
  more: boolean;
  /**
   * Where the pages read so far end: the last note the latest page answered (a note that arrived
   * otherwise, such as an insert dated earlier, may sort past it, and the next page starts here).
   */
  cursor: Pick<Note, "updatedAt" | "_id"> | null;
  /** The load of the next older page. */
  older: { status: "idle" | "loading" | "error"; error: unknown };
  /**
   * The changes applied while a load runs: what the load answers may have been read before them,
   * so they are applied again to it (in order, each note ending at its latest version).
   */
  sinceLoad: Edit[];
}

type Action =
  | { type: "load" }
  | { type: "loaded"; notes: Note[]; more: boolean }
  | { type: "failed"; error: unknown }
  | { type: "loadOlder" }
  | { type: "olderLoaded"; notes: Note[]; more: boolean }
  | { type: "olderFailed"; error: unknown }
  | Edit;

const olderIdle: NotesState["older"] = { status: "idle", error: null };

export const initialNotesState: NotesState = {
  status: "loading",
  notes: [],
  error: null,
  more: false,
  cursor: null,
  older: olderIdle,
  sinceLoad: [],
};

const endOf = (page: Note[]) => {
  const last = page.at(-1);
  return last ? { updatedAt: last.updatedAt, _id: last._id } : null;
};

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
      // (A load of the whole list supersedes a page's: useNotes aborts that one.)
      return { ...state, status: "loading", error: null, older: olderIdle, sinceLoad: [] };
    case "loaded":
      return {
        ...state,
        status: "ready",
        notes: state.sinceLoad.reduce(applyEdit, action.notes),
        more: action.more,
        cursor: endOf(action.notes),
        error: null,
        sinceLoad: [],
      };
    case "failed":
      return { ...state, status: "error", error: action.error, sinceLoad: [] };
    case "loadOlder":
      return { ...state, older: { status: "loading", error: null }, sinceLoad: [] };
    case "olderLoaded": {
      // Added to the list as it is now, then the changes seen meanwhile again (a note deleted
      // while the page was read stays deleted).
      const merged = action.notes.reduce(putNote, state.notes);
      return {
        ...state,
        notes: state.sinceLoad.reduce(applyEdit, merged),
        more: action.more,
        cursor: endOf(action.notes) ?? state.cursor,
        older: olderIdle,
        sinceLoad: [],
      };
    }
    case "olderFailed":
      return { ...state, older: { status: "error", error: action.error }, sinceLoad: [] };
    default: {
      const loading = state.status === "loading" || state.older.status === "loading";
      return {
        ...state,
        notes: applyEdit(state.notes, action),
        sinceLoad: loading ? [...state.sinceLoad, action] : state.sinceLoad,
      };
    }
  }
}

/**
 * The user's notes, newest change first, a page at a time (`loadOlder` adds the next older page):
 * loaded once `enabled` (the board waits for its change stream, so that no change falls between
 * the load and the stream) and on `reload()` (as many as are shown), then kept current by local
 * and streamed changes.
 */
export function useNotes(userId: string, enabled = true) {
  const [state, dispatch] = useReducer(notesReducer, initialNotesState);
  const [generation, setGeneration] = useState(0);
  const latest = useRef(state);
  latest.current = state;
  const olderLoad = useRef<AbortController | null>(null);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `generation` asks for a reload
  useEffect(() => {
    if (!enabled) return;
    const controller = new AbortController();
    olderLoad.current?.abort();
    dispatch({ type: "load" });
    const limit = Math.max(notesPageSize, latest.current.notes.length);
    findNotes(userId, controller.signal, { limit }).then(
      ({ notes, more }) => {
        if (!controller.signal.aborted) dispatch({ type: "loaded", notes, more });
      },
      (error: unknown) => {
        if (!controller.signal.aborted && !isAbortError(error)) dispatch({ type: "failed", error });
      },
    );
    return () => controller.abort();
  }, [userId, generation, enabled]);
  useEffect(() => () => olderLoad.current?.abort(), []);

  const reload = useCallback(() => setGeneration((n) => n + 1), []);
  const loadOlder = useCallback(() => {
    const { status, older, cursor } = latest.current;
    if (status !== "ready" || older.status === "loading" || !cursor) return;
    const controller = new AbortController();
    olderLoad.current = controller;
    dispatch({ type: "loadOlder" });
    findNotes(userId, controller.signal, { after: cursor }).then(
      (page) => {
        if (!controller.signal.aborted) dispatch({ type: "olderLoaded", ...page });
      },
      (error: unknown) => {
        if (!controller.signal.aborted && !isAbortError(error)) dispatch({ type: "olderFailed", error });
      },
    );
  }, [userId]);
  const applyEvent = useCallback((event: ChangeEvent) => dispatch({ type: "change", event }), []);
  const put = useCallback((note: Note) => dispatch({ type: "put", note }), []);
  const remove = useCallback((id: string) => dispatch({ type: "remove", id }), []);
  return { ...state, reload, loadOlder, applyEvent, put, remove };
}
