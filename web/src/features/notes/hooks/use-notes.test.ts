import { ObjectId } from "bson";
import { describe, expect, it } from "vitest";
import type { ChangeEvent } from "../api/call-function-streaming.ts";
import type { Note } from "../api/notes-ejson.ts";
import { initialNotesState, type NotesState, notesReducer } from "./use-notes.ts";

const note = (id: ObjectId, title: string, at: number, version = 1): Note => ({
  id: id.toHexString(),
  _id: id,
  title,
  body: "",
  createdAt: new Date(0),
  updatedAt: new Date(at),
  version,
});
const inserted = (n: Note): ChangeEvent => ({
  operationType: "insert",
  documentKey: { _id: n._id },
  fullDocument: { _id: n._id, title: n.title, updatedAt: n.updatedAt, version: n.version },
});
const titles = (state: NotesState) => state.notes.map((n) => n.title);

describe("the notes list while a load is under way", () => {
  const a = new ObjectId();
  const b = new ObjectId();
  const c = new ObjectId();

  it("applies the changes seen meanwhile again to what the load answers (its snapshot may be older)", () => {
    let state = notesReducer(initialNotesState, { type: "load" });
    // Seen while the load runs: b added elsewhere, a deleted, c saved here.
    state = notesReducer(state, { type: "change", event: inserted(note(b, "b", 2000)) });
    state = notesReducer(state, { type: "change", event: { operationType: "delete", documentKey: { _id: a } } });
    state = notesReducer(state, { type: "put", note: note(c, "c", 3000) });
    expect(titles(state)).toEqual(["c", "b"]);
    // The load's snapshot was taken before all three.
    state = notesReducer(state, { type: "loaded", notes: [note(a, "a", 1000)], more: false });
    expect(state.status).toBe("ready");
    expect(titles(state)).toEqual(["c", "b"]);
  });

  it("ends with the newest version when the snapshot already holds what was seen meanwhile", () => {
    let state = notesReducer(initialNotesState, { type: "load" });
    state = notesReducer(state, { type: "change", event: inserted(note(a, "a v1", 1000, 1)) });
    state = notesReducer(state, { type: "loaded", notes: [note(a, "a v2", 2000, 2)], more: false });
    expect(titles(state)).toEqual(["a v2"]);
  });

  it("keeps nothing of a load once it answered or failed", () => {
    let state = notesReducer(initialNotesState, { type: "load" });
    state = notesReducer(state, { type: "change", event: inserted(note(b, "b", 2000)) });
    state = notesReducer(state, { type: "failed", error: new Error("offline") });
    state = notesReducer(state, { type: "load" });
    state = notesReducer(state, { type: "loaded", notes: [note(a, "a", 1000)], more: false });
    expect(titles(state)).toEqual(["a"]);
    state = notesReducer(state, { type: "change", event: { operationType: "delete", documentKey: { _id: a } } });
    state = notesReducer(state, { type: "load" });
    state = notesReducer(state, { type: "loaded", notes: [note(c, "c", 3000)], more: false });
    expect(titles(state)).toEqual(["c"]);
  });
});

describe("older notes, a page at a time", () => {
  const a = new ObjectId();
  const b = new ObjectId();
  const c = new ObjectId();
  const d = new ObjectId();

  it("adds the next page after the last one read, and says when none is left", () => {
    let state = notesReducer(initialNotesState, { type: "load" });
    state = notesReducer(state, { type: "loaded", notes: [note(a, "a", 4000), note(b, "b", 3000)], more: true });
    expect(state.more).toBe(true);
    expect(state.cursor).toEqual({ updatedAt: new Date(3000), _id: b });
    // An insert dated earlier arrives: the next page still starts after b.
    state = notesReducer(state, { type: "change", event: inserted(note(d, "d", 1000)) });
    expect(state.cursor).toEqual({ updatedAt: new Date(3000), _id: b });
    state = notesReducer(state, { type: "loadOlder" });
    state = notesReducer(state, { type: "olderLoaded", notes: [note(c, "c", 2000), note(d, "d", 1000)], more: false });
    expect(titles(state)).toEqual(["a", "b", "c", "d"]);
    expect(state.more).toBe(false);
    expect(state.older.status).toBe("idle");
  });

  it("keeps a note deleted while the page was read deleted", () => {
    let state = notesReducer(initialNotesState, { type: "load" });
    state = notesReducer(state, { type: "loaded", notes: [note(a, "a", 4000)], more: true });
    state = notesReducer(state, { type: "loadOlder" });
    state = notesReducer(state, { type: "change", event: { operationType: "delete", documentKey: { _id: c } } });
    state = notesReducer(state, { type: "olderLoaded", notes: [note(c, "c", 2000)], more: false });
    expect(titles(state)).toEqual(["a"]);
  });

  it("says when a page could not be read, keeping the list", () => {
    let state = notesReducer(initialNotesState, { type: "load" });
    state = notesReducer(state, { type: "loaded", notes: [note(a, "a", 4000)], more: true });
    state = notesReducer(state, { type: "loadOlder" });
    state = notesReducer(state, { type: "olderFailed", error: new Error("offline") });
    expect(state.older.status).toBe("error");
    expect(titles(state)).toEqual(["a"]);
    expect(state.more).toBe(true);
  });
});
