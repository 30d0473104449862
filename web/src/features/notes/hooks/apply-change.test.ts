import { ObjectId } from "bson";
import { describe, expect, it } from "vitest";
import type { Note } from "../api/notes-ejson.ts";
import { applyChange, describeChange, needsReload, putNote } from "./apply-change.ts";

const id1 = new ObjectId();
const id2 = new ObjectId();
const note = (id: ObjectId, title: string, updatedAt: number): Note => ({
  id: id.toHexString(),
  _id: id,
  title,
  body: "",
  createdAt: new Date(0),
  updatedAt: new Date(updatedAt),
  version: 1,
});

describe("applying change events to the notes list", () => {
  const list = [note(id1, "one", 2000), note(id2, "two", 1000)];

  it("adds an inserted note in date order, once", () => {
    const id3 = new ObjectId();
    const event = {
      operationType: "insert",
      documentKey: { _id: id3 },
      fullDocument: { _id: id3, title: "three", body: "b", createdAt: new Date(3000), updatedAt: new Date(3000) },
    };
    const once = applyChange(list, event);
    expect(once.map((n) => n.title)).toEqual(["three", "one", "two"]);
    expect(applyChange(once, event).map((n) => n.title)).toEqual(["three", "one", "two"]);
  });

  it("applies the updated fields of an update without the full document", () => {
    const next = applyChange(list, {
      operationType: "update",
      documentKey: { _id: id2 },
      updateDescription: {
        updatedFields: { title: "two!", updatedAt: new Date(5000), version: 2 },
        removedFields: ["body"],
      },
    });
    expect(next.map((n) => [n.title, n.updatedAt?.getTime(), n.version])).toEqual([
      ["two!", 5000, 2],
      ["one", 2000, 1],
    ]);
  });

  it("removes a deleted note and leaves unknown notes alone", () => {
    expect(applyChange(list, { operationType: "delete", documentKey: { _id: id1 } }).map((n) => n.title)).toEqual([
      "two",
    ]);
    const stranger = new ObjectId();
    expect(applyChange(list, { operationType: "update", documentKey: { _id: stranger }, updateDescription: {} })).toBe(
      list,
    );
  });

  it("asks for a reload on collection-wide events and describes note changes", () => {
    expect(needsReload({ operationType: "drop" })).toBe(true);
    expect(needsReload({ operationType: "insert" })).toBe(false);
    expect(describeChange({ operationType: "insert", fullDocument: { title: "three" } })).toBe(
      "“three” was added elsewhere.",
    );
    expect(describeChange({ operationType: "delete" })).toBe("A note was deleted elsewhere.");
  });
});

describe("versions of a note", () => {
  const v = (version: number, title: string) => ({ ...note(id1, title, 1000 * version), version });
  const list = [v(3, "third"), note(id2, "two", 500)];

  it("keeps a newer version than an event brings (a late event, or one replayed after a load)", () => {
    const older = {
      operationType: "replace",
      documentKey: { _id: id1 },
      fullDocument: { _id: id1, title: "second", updatedAt: new Date(2000), version: 2 },
    };
    expect(applyChange(list, older)).toBe(list);
    const olderUpdate = {
      operationType: "update",
      documentKey: { _id: id1 },
      updateDescription: { updatedFields: { title: "second", version: 2 } },
    };
    expect(applyChange(list, olderUpdate)).toBe(list);
    const newer = { ...older, fullDocument: { ...older.fullDocument, title: "fourth", version: 4 } };
    expect(applyChange(list, newer)[0]).toMatchObject({ title: "fourth", version: 4 });
  });

  it("keeps a newer version than a save's answer brings, and takes notes without versions as they come", () => {
    expect(putNote(list, v(2, "second"))).toBe(list);
    expect(putNote(list, v(3, "third again"))[0]!.title).toBe("third again");
    const unversioned = { ...v(1, "old"), version: null };
    expect(putNote(list, unversioned).map((n) => n.title)).toEqual(["old", "two"]);
  });
});
