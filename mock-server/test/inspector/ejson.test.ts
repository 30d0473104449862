/** The inspector reads canonical Extended JSON as BSON types: what a person sees for each value. */
import { describe, expect, it } from "vitest";
import { fieldRows, idText, preview, typed } from "../../src/inspector/ui/ejson.ts";

describe("typed", () => {
  it("names every BSON type of canonical Extended JSON", () => {
    const cases: [unknown, string, string][] = [
      [{ $oid: "65a1b2c3d4e5f60718293a50" }, "ObjectId", "65a1b2c3d4e5f60718293a50"],
      [{ $date: { $numberLong: "1795341600000" } }, "Date", "2026-11-22T10:00:00.000Z"],
      [{ $date: "2026-11-22T10:00:00Z" }, "Date", "2026-11-22T10:00:00.000Z"],
      [{ $numberInt: "42" }, "Int32", "42"],
      [{ $numberLong: "9007199254740993" }, "Int64", "9007199254740993"],
      [{ $numberDouble: "1.5" }, "Double", "1.5"],
      [{ $numberDouble: "-Infinity" }, "Double", "-Infinity"],
      [{ $numberDecimal: "1.10" }, "Decimal128", "1.10"],
      [{ $binary: { base64: "AQID", subType: "00" } }, "Binary (subtype 00)", "AQID"],
      [
        { $binary: { base64: "EjRWeJCrze8SNFZ4kKvN7w==", subType: "04" } },
        "UUID",
        "12345678-90ab-cdef-1234-567890abcdef",
      ],
      [{ $regularExpression: { pattern: "^a", options: "i" } }, "Regex", "/^a/i"],
      [{ $timestamp: { t: 1, i: 2 } }, "Timestamp", "t 1, i 2"],
      [{ $minKey: 1 }, "MinKey", "MinKey"],
      [{ $maxKey: 1 }, "MaxKey", "MaxKey"],
      [{ $code: "x()" }, "Code", "x()"],
      [null, "Null", "null"],
      [true, "Boolean", "true"],
      ["text", "String", "text"],
    ];
    for (const [input, type, text] of cases)
      expect(typed(input), JSON.stringify(input)).toEqual({ kind: "value", type, text });
  });

  it("keeps plain documents, and a wrapper of the wrong shape, as objects", () => {
    expect(typed({ $oid: 1 }).kind).toBe("object");
    expect(typed({ a: { $numberInt: "1" }, b: [] })).toEqual({
      kind: "object",
      type: "Object",
      fields: [
        ["a", { kind: "value", type: "Int32", text: "1" }],
        ["b", { kind: "array", type: "Array", items: [] }],
      ],
    });
  });
});

describe("a document as rows", () => {
  const doc = {
    _id: { $oid: "65a1b2c3d4e5f60718293a50" },
    title: "Milk",
    tags: ["a", { $numberInt: "2" }],
    owner: { name: "Ada", at: { $date: { $numberLong: "0" } } },
  };

  it("lists nested fields after their parent, by path and depth", () => {
    expect(fieldRows(doc).map((r) => [r.path, r.depth, r.type, r.text])).toEqual([
      ["_id", 0, "ObjectId", "65a1b2c3d4e5f60718293a50"],
      ["title", 0, "String", "Milk"],
      ["tags", 0, "Array (2)", ""],
      ["tags.0", 1, "String", "a"],
      ["tags.1", 1, "Int32", "2"],
      ["owner", 0, "Object (2 fields)", ""],
      ["owner.name", 1, "String", "Ada"],
      ["owner.at", 1, "Date", "1970-01-01T00:00:00.000Z"],
    ]);
  });

  it("previews the fields after _id, cut short, and names the _id", () => {
    expect(preview(doc)).toBe("title: Milk · tags: [2] · owner: {2}");
    expect(preview({ _id: 1, long: "x".repeat(200) }, 20)).toHaveLength(20);
    expect(idText(doc._id)).toBe("ObjectId 65a1b2c3d4e5f60718293a50");
    expect(idText("a")).toBe('"a"');
  });
});
