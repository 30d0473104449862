import { EJSON, ObjectId } from "bson";
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { FunctionCallRequest } from "../../../lib/api/call-function.ts";
import type { Note } from "./notes-ejson.ts";

const calls: FunctionCallRequest[] = [];
let replies: unknown[] = [];
vi.mock("../../../lib/api/call-function.ts", () => ({
  callFunction: async (call: FunctionCallRequest) => {
    calls.push(call);
    return EJSON.serialize(replies.shift(), { relaxed: false });
  },
}));
const { NoteChangedError, NoteGoneError, updateNote } = await import("./update-note.ts");

const _id = new ObjectId();
const note: Note = {
  id: _id.toHexString(),
  _id,
  title: "Plan",
  body: "first",
  createdAt: new Date(1000),
  updatedAt: new Date(1000),
  version: 3,
};
const query = (call: FunctionCallRequest | undefined) =>
  EJSON.deserialize((call?.arguments?.[0] ?? {}) as object, { relaxed: true }) as {
    query: unknown;
    update: unknown;
  };

describe("saving an edit (compare-and-set on the version)", () => {
  beforeEach(() => {
    calls.length = 0;
    replies = [];
  });

  it("saves only over the version it was edited from, and counts the save", async () => {
    replies = [{ matchedCount: 1, modifiedCount: 1 }];
    const saved = await updateNote(note, { title: "Plan B", body: "second" });
    expect(saved).toMatchObject({ title: "Plan B", body: "second", version: 4 });
    const sent = query(calls[0]);
    expect(sent.query).toEqual({ _id, version: 3 });
    expect(sent.update).toMatchObject({ $set: { title: "Plan B", body: "second" }, $inc: { version: 1 } });
  });

  it("is refused when the note moved on, with the note as it is now", async () => {
    replies = [
      { matchedCount: 0, modifiedCount: 0 },
      { _id, title: "Their plan", body: "x", version: 4 },
    ];
    const refused = await updateNote(note, { title: "Plan B", body: "second" }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(NoteChangedError);
    expect((refused as InstanceType<typeof NoteChangedError>).current).toMatchObject({
      title: "Their plan",
      version: 4,
    });
    expect(calls.map((c) => c.name)).toEqual(["updateOne", "findOne"]);
  });

  it("is refused when the note is gone", async () => {
    replies = [{ matchedCount: 0, modifiedCount: 0 }, null];
    await expect(updateNote(note, { title: "Plan B", body: "" })).rejects.toBeInstanceOf(NoteGoneError);
  });

  it("gives a note written before versions its first one", async () => {
    replies = [{ matchedCount: 1, modifiedCount: 1 }];
    const saved = await updateNote({ ...note, version: null }, { title: "Plan", body: "" });
    expect(query(calls[0]).query).toEqual({ _id, version: { $exists: false } });
    expect(saved.version).toBe(1);
  });
});
