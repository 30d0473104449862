/**
 * Node's `Buffer` in functions (a global of App Services functions, as in Node): bytes from text,
 * base64 and hex, and back; typed-array views; the BSON library keeps its own byte handling.
 */
import { describe, expect, it } from "vitest";
import { functionsRunner } from "../helpers/app.ts";

const functions: Record<string, string> = {
  bytes: `exports = (text) => {
    const buf = Buffer.from(text);
    const joined = Buffer.concat([buf, Buffer.from("2a", "hex")]);
    const numbers = Buffer.alloc(4);
    numbers.writeUInt32BE(0xdeadbeef, 0);
    return {
      base64: buf.toString("base64"),
      back: Buffer.from(buf.toString("base64"), "base64").toString("utf8"),
      hex: joined.toString("hex"),
      length: Buffer.byteLength(text),
      isBuffer: Buffer.isBuffer(buf),
      typed: buf instanceof Uint8Array,
      number: numbers.readUInt32BE(0),
      json: JSON.stringify(Buffer.from("ab")),
      equals: Buffer.from("x").equals(Buffer.from("x")),
      binary: new BSON.Binary(Buffer.from("hi")).toString("base64"),
    };
  };`,
  replace: `exports = () => { try { globalThis.Buffer = null; } catch (e) {} return typeof Buffer.from; };`,
  text: `exports = () => {
    const bytes = new TextEncoder().encode("héllo");
    const into = new Uint8Array(3);
    return {
      bytes: Array.from(bytes),
      plain: bytes.constructor === Uint8Array,
      back: new TextDecoder().decode(bytes),
      bom: new TextDecoder("utf8").decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41]).buffer),
      into: new TextEncoder().encodeInto("héllo", into).written,
      latin: (() => { try { new TextDecoder("latin1"); } catch (error) { return error.message; } })(),
    };
  };`,
};

const run = functionsRunner(functions);

describe("Buffer in a function", () => {
  it("reads and writes bytes as Node's does", async () => {
    expect(await run("bytes", "héllo")).toEqual({
      base64: "aMOpbGxv",
      back: "héllo",
      hex: "68c3a96c6c6f2a",
      length: { $numberInt: "6" },
      isBuffer: true,
      typed: true,
      number: { $numberLong: "3735928559" },
      json: '{"type":"Buffer","data":[97,98]}',
      equals: true,
      binary: "aGk=",
    });
  });

  it("has TextEncoder and TextDecoder for UTF-8", async () => {
    expect(await run("text")).toEqual({
      bytes: [104, 195, 169, 108, 108, 111].map((n) => ({ $numberInt: String(n) })),
      plain: true,
      back: "héllo",
      bom: "A",
      into: { $numberInt: "3" },
      latin: 'The "latin1" encoding is not supported',
    });
  });

  it("stays for every call: a function cannot replace it", async () => {
    expect(await run("replace")).toBe("function");
    expect(await run("replace")).toBe("function");
  });
});
