import { describe, expect, it } from "vitest";
import { createWatchStreamParser, unescapeSseData } from "./watch-stream-parser.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("unescapeSseData", () => {
  it("undoes exactly %25, %0A and %0D, in one pass", () => {
    expect(unescapeSseData("100%25 done")).toBe("100% done");
    expect(unescapeSseData("a%0Ab%0Dc")).toBe("a\nb\rc");
    // An escaped "%" followed by "0A" is the text "%0A", not a line feed.
    expect(unescapeSseData("%250A")).toBe("%0A");
    expect(unescapeSseData("%41 %zz %")).toBe("%41 %zz %");
  });
});

describe("watch stream parser", () => {
  it("dispatches a data line on the empty line, un-escaped and parsed", () => {
    const parser = createWatchStreamParser();
    // A line break the service escaped (between JSON tokens here) and an escaped "%".
    expect(parser.feed('data: {"operationType":"insert",%0D%0A"text":"100%25 done\\nnext"}\n')).toEqual([]);
    expect(parser.feed("\n")).toEqual([
      { kind: "event", document: { operationType: "insert", text: "100% done\nnext" } },
    ]);
  });

  it("joins data lines with line feeds and drops the last one", () => {
    const parser = createWatchStreamParser();
    expect(parser.feed('data: {"a":\ndata: 1}\n\n')).toEqual([{ kind: "event", document: { a: 1 } }]);
  });

  it("handles events split anywhere across chunks, including inside a UTF-8 character", () => {
    const parser = createWatchStreamParser();
    const frame = bytes('data: {"title":"café ☕"}\r\n\r\n');
    const items = [];
    for (let i = 0; i < frame.length; i += 3) items.push(...parser.feed(frame.slice(i, i + 3)));
    expect(items).toEqual([{ kind: "event", document: { title: "café ☕" } }]);
  });

  it("strips one leading space only, ignores comments, id, retry and unknown fields", () => {
    const parser = createWatchStreamParser();
    const items = parser.feed(':\n: keep-alive\nid: 7\nretry: 100\nfoo: bar\ndata:  {"x":1}\n\n');
    // Two spaces: one is part of the value (JSON does not mind).
    expect(items).toEqual([{ kind: "event", document: { x: 1 } }]);
  });

  it("accepts the message type and dispatches nothing for an empty data buffer", () => {
    const parser = createWatchStreamParser();
    expect(parser.feed("event: message\n\n")).toEqual([]);
    expect(parser.feed('event: message\ndata: {"y":2}\n\n')).toEqual([{ kind: "event", document: { y: 2 } }]);
  });

  it("reports error events with their code and message", () => {
    const parser = createWatchStreamParser();
    expect(
      parser.feed('event: error\ndata: {"error_code":"InvalidSession","error":"invalid session: 100%25 gone"}\n\n'),
    ).toEqual([{ kind: "error", code: "InvalidSession", message: "invalid session: 100% gone" }]);
  });

  it("falls back to code unknown and the raw data for an unreadable error event", () => {
    const parser = createWatchStreamParser();
    expect(parser.feed("event: error\ndata: boom\n\n")).toEqual([{ kind: "error", code: "unknown", message: "boom" }]);
    expect(parser.feed('event: error\ndata: {"error":"no code"}\n\n')).toEqual([
      { kind: "error", code: "unknown", message: '{"error":"no code"}' },
    ]);
  });

  it("turns a message that is not a document into a malformed-event error", () => {
    const parser = createWatchStreamParser();
    expect(parser.feed("data: [1,2]\n\ndata: nope\n\n")).toEqual([
      { kind: "error", code: "bad bson parse", message: "server returned malformed event: [1,2]" },
      { kind: "error", code: "bad bson parse", message: "server returned malformed event: nope" },
    ]);
  });

  it("ignores other event types and resets the type after each dispatch", () => {
    const parser = createWatchStreamParser();
    expect(parser.feed('event: ping\ndata: {"z":0}\n\ndata: {"z":1}\n\n')).toEqual([
      { kind: "event", document: { z: 1 } },
    ]);
  });

  it("parses documents with the parser it is given (Extended JSON in the app)", () => {
    const parser = createWatchStreamParser({ parseDocument: (text) => ({ parsed: text }) });
    expect(parser.feed("data: raw\n\n")).toEqual([{ kind: "event", document: { parsed: "raw" } }]);
  });
});
