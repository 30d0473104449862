/**
 * A change event's text, with the document a change carries whole written and escaped once for
 * every stream that sends it as it is: each stream's event is still its own (resume token, time)
 * and reads exactly as the whole event written at once would.
 */
import { Timestamp } from "bson";
import { describe, expect, it } from "vitest";
import { encodeChange, sseData } from "../../src/app-services/functions/change-stream.ts";
import { type Document, toEJSONText } from "../../src/data/documents.ts";

const event = (token: string, fullDocument: Document): Document => ({
  _id: { _data: token },
  operationType: "insert",
  clusterTime: new Timestamp({ t: 1, i: Number.parseInt(token, 16) }),
  wallTime: new Date(1000),
  fullDocument,
  ns: { db: "d", coll: "c" },
  documentKey: { _id: fullDocument._id },
});

describe("a change event's text", () => {
  it("reads as the whole event written at once, for each stream sending one document", async () => {
    const shared: Document = {
      _id: 1,
      text: "100% sure\r\nline two\n%0A is not a newline",
      long: "%".repeat(200 * 1024),
      nested: { a: [1, { b: "é𝄞" }], placeholder: "whole-document-" },
    };
    const events = ["01", "02", "03"].map((token) => event(token, shared));
    const texts = await Promise.all(events.map(encodeChange));
    for (const [i, text] of texts.entries()) expect(text).toBe(sseData(toEJSONText(events[i]!)));
    expect(new Set(texts).size).toBe(3);
  });

  it("writes an event without a document, or a wide one, as at once", async () => {
    const drop: Document = { _id: { _data: "09" }, operationType: "drop", ns: { db: "d", coll: "c" } };
    expect(await encodeChange(drop)).toBe(sseData(toEJSONText(drop)));
    const wide: Document = { _id: 2 };
    for (let i = 0; i < 60_000; i++) wide[`f${i}`] = i % 7 === 0 ? "a%b\n" : i;
    const inserted = event("0a", wide);
    expect(await encodeChange(inserted)).toBe(sseData(toEJSONText(inserted)));
  });
});
