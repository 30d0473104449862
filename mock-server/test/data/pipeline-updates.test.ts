/**
 * Updates by pipeline as MongoDB writes them: the change is the delta from the document before to
 * the one after (update-delta.ts, MongoDB's doc_diff): a pipeline that changes nothing modifies
 * nothing, a change lists only the paths it changed, a delta no smaller than the document is a
 * replacement; `arrayFilters` have no place in a pipeline.
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON } from "../../src/data/documents.ts";
import { pipelineDelta } from "../../src/data/update-delta.ts";
import { openDataActions } from "../helpers/app.ts";

const doc = (value: unknown) => fromEJSON(value) as Document;

describe("pipelineDelta", () => {
  it("lists the paths set and removed, down through documents and arrays whose type stayed", () => {
    const text = "x".repeat(100);
    const before = doc({ _id: 1, a: 1, b: { x: text, y: 1 }, c: [text, 2, 3], d: text, e: 5 });
    const after = doc({ _id: 1, a: 2, b: { x: text, y: 2, z: 3 }, c: [text, 9, 3, 4], d: text, f: 6 });
    expect(pipelineDelta(before, after)).toEqual({ paths: ["a", "b.y", "b.z", "c.1", "c.3", "f", "e"], truncated: [] });
    // A small embedded document's delta would be larger than it: it is set whole, as MongoDB does.
    const small = pipelineDelta(
      doc({ _id: 1, b: { x: 1, y: 1 }, d: text }),
      doc({ _id: 1, b: { x: 1, y: 2, z: 3 }, d: text }),
    );
    expect(small).toEqual({ paths: ["b"], truncated: [] });
  });

  it("answers no paths for the same document; a changed type or order is a change", () => {
    const before = doc({ _id: 1, a: 1, b: { x: 1 }, pad: "x".repeat(100) });
    expect(pipelineDelta(before, doc({ _id: 1, a: 1, b: { x: 1 }, pad: "x".repeat(100) }))).toEqual({
      paths: [],
      truncated: [],
    });
    // A number become a string; an embedded document's fields reordered.
    expect(pipelineDelta(before, doc({ _id: 1, a: "1", b: { x: 1 }, pad: "x".repeat(100) }))?.paths).toEqual(["a"]);
    const reordered = doc({ _id: 1, pad: "x".repeat(100), a: 1, b: { x: 1 } });
    expect(pipelineDelta(before, reordered)?.paths.sort()).toEqual(["a", "b"]);
  });

  it("says which arrays became shorter", () => {
    const before = doc({ _id: 1, list: [1, 2, 3, 4], nested: { deep: [{ k: 1 }, { k: 2 }] }, pad: "x".repeat(100) });
    const after = doc({ _id: 1, list: [1, 2], nested: { deep: [{ k: 1 }] }, pad: "x".repeat(100) });
    expect(pipelineDelta(before, after)).toEqual({
      paths: [],
      truncated: [
        { field: "list", newSize: 2 },
        { field: "nested.deep", newSize: 1 },
      ],
    });
  });

  it("answers null (a replacement) when the delta is no smaller than the document", () => {
    expect(pipelineDelta(doc({ _id: 1, a: 1, b: 2 }), doc({ _id: 1, c: 3, d: 4 }))).toBeNull();
    // A value whose own delta is larger than it is replaced whole.
    const before = doc({ _id: 1, sub: { a: 1, b: 2, c: 3 }, pad: "x".repeat(200) });
    const after = doc({ _id: 1, sub: { d: 4, e: 5, f: 6 }, pad: "x".repeat(200) });
    expect(pipelineDelta(before, after)).toEqual({ paths: ["sub"], truncated: [] });
  });
});

describe("updates by pipeline", () => {
  const { action, collection } = openDataActions("pipelines");
  const int = (n: number) => ({ $numberInt: String(n) });

  it("counts a pipeline that changes nothing as matched, not modified", async () => {
    const ns = collection();
    await action("insertMany", {
      ...ns,
      documents: [
        { _id: 1, a: 1 },
        { _id: 2, a: 2 },
      ],
    });
    const one = await action("updateOne", { ...ns, query: { _id: 1 }, update: [{ $set: { a: 1 } }] });
    expect(one.body).toEqual({ matchedCount: int(1), modifiedCount: int(0) });
    const empty = await action("updateOne", { ...ns, query: { _id: 1 }, update: [] });
    expect(empty.body).toEqual({ matchedCount: int(1), modifiedCount: int(0) });
    const many = await action("updateMany", { ...ns, query: {}, update: [{ $set: { a: 1 } }] });
    expect(many.body).toEqual({ matchedCount: int(2), modifiedCount: int(1) });
    expect((await action("find", { ...ns, query: {} })).body).toEqual([
      { _id: int(1), a: int(1) },
      { _id: int(2), a: int(1) },
    ]);
  });

  it("refuses arrayFilters with a pipeline, as MongoDB fails to parse them, writing nothing", async () => {
    const ns = collection();
    await action("insertOne", { ...ns, document: { _id: 1, x: 1 } });
    const { response, body } = await action("updateOne", {
      ...ns,
      query: { _id: 1 },
      update: [{ $set: { x: 2 } }],
      arrayFilters: [{ "x.y": { $eq: 1 } }],
    });
    expect(response.statusCode).toBe(400);
    expect(body).toEqual({
      error: "arrayFilters may not be specified for pipeline-style updates",
      error_code: "MongoDBError",
      link: expect.any(String),
    });
    expect((await action("find", { ...ns, query: {} })).body).toEqual([{ _id: int(1), x: int(1) }]);
  });
});
