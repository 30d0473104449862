import { ObjectId } from "bson";
import { describe, expect, it } from "vitest";
import type { Note } from "../api/notes-ejson.ts";
import { editConflict, listWithDrafts } from "./edit-drafts.ts";

function note(title: string, updatedAt: number, version: number | null = 1): Note {
  const _id = new ObjectId();
  return {
    id: _id.toHexString(),
    _id,
    title,
    body: "",
    createdAt: new Date(0),
    updatedAt: new Date(updatedAt),
    version,
  };
}

describe("a note changed while it is being edited", () => {
  const base = note("one", 1000, 3);

  it("is unchanged while the stored version is the edited one", () => {
    expect(editConflict(base, { ...base, title: "one" })).toBeNull();
  });

  it("is changed once another version is stored, and deleted once it is gone", () => {
    expect(editConflict(base, { ...base, version: 4, updatedAt: new Date(2000) })).toBe("changed");
    expect(editConflict(base, null)).toBe("deleted");
  });

  it("tells a change of a note without versions by its change time", () => {
    const old = note("old", 1000, null);
    expect(editConflict(old, { ...old })).toBeNull();
    expect(editConflict(old, { ...old, updatedAt: new Date(2000) })).toBe("changed");
    expect(editConflict(old, { ...old, version: 1 })).toBe("changed");
  });
});

describe("the list with the edits under way", () => {
  it("keeps a note deleted during its edit in its place, and marks the notes being edited", () => {
    const newest = note("newest", 3000);
    const edited = note("edited", 2000);
    const oldest = note("oldest", 1000);
    const listed = listWithDrafts([newest, oldest], { [edited.id]: edited, [oldest.id]: oldest });
    expect(listed.map((l) => [l.note.title, l.base?.title ?? null, l.gone])).toEqual([
      ["newest", null, false],
      ["edited", "edited", true],
      ["oldest", "oldest", false],
    ]);
  });
});
