/**
 * The JSON body parser for every route: an empty body is "no body" (realm-core sends
 * `Content-Type: application/json` with an empty body on `POST /auth/session`), nesting deeper
 * than MongoDB allows is refused before parsing (so a hostile 18 MB `[[[[…` costs one linear scan,
 * not seconds of parsing), and prototype-pollution keys are refused. A large body is parsed a
 * slice at a time, other requests served in between: parsed at once, 16 MB held every other
 * client for a quarter of a second here (docs/decisions/0024-large-bodies-in-slices.md).
 */

import { setImmediate as nextTurn } from "node:timers/promises";
import { parseChunked } from "@discoveryjs/json-ext";
import type { FastifyInstance } from "fastify";
import secureJson from "secure-json-parse";

/** MongoDB refuses documents nested deeper than 100 levels; requests add a few levels of envelope. */
export const maxJsonDepth = 128;

/** Bodies shorter than this (in characters) are parsed in one step, a few milliseconds at most. */
export const slicedFrom = 256 * 1024;

/** What one slice of a large body's parse reads (about a millisecond's work). */
export const sliceChars = 64 * 1024;

export class JsonBodyError extends Error {
  readonly statusCode = 400;
  constructor(
    message: string,
    readonly code: "JSON_SYNTAX" | "JSON_TOO_DEEP" | "JSON_FORBIDDEN_KEY",
  ) {
    super(message);
  }
}

const tooDeep = () => new JsonBodyError(`the JSON body is nested deeper than ${maxJsonDepth} levels`, "JSON_TOO_DEEP");
const forbiddenKey = () =>
  new JsonBodyError(
    "the JSON body contains a forbidden key (__proto__ or constructor.prototype)",
    "JSON_FORBIDDEN_KEY",
  );
const notJson = (error: unknown) =>
  new JsonBodyError(`the body is not valid JSON: ${(error as Error).message}`, "JSON_SYNTAX");

/**
 * The nesting of a JSON text read a part at a time, scanning strings correctly: its depth, and
 * whether its brackets pair up (what the sliced parse relies on; the slices' JSON.parse checks
 * everything between them).
 */
class BracketScan {
  private readonly open: number[] = [];
  private inString = false;
  private escaped = false;
  private read = 0;
  max = 0;

  /** Reads the next part; throws past `limit` levels, or at a bracket that closes nothing open. */
  next(text: string, limit: number): void {
    const { open } = this;
    let { inString, escaped } = this;
    // Inside a string only `"` and `\` matter: found by indexOf (native), each looked for again
    // only once passed, so a long string costs a search, not a loop, and no text costs more than
    // one pass.
    let quote = -1;
    let slash = -1;
    for (let i = 0; i < text.length; i++) {
      if (inString) {
        if (escaped) {
          escaped = false;
          continue;
        }
        if (quote < i) quote = text.indexOf('"', i) >>> 0;
        if (slash < i) slash = text.indexOf("\\", i) >>> 0;
        if (slash < quote) {
          i = slash;
          escaped = true;
        } else if (quote < text.length) {
          i = quote;
          inString = false;
        } else break; // the string goes on in the next part
        continue;
      }
      const c = text.charCodeAt(i);
      if (c === 34 /* " */) inString = true;
      else if (c === 123 /* { */ || c === 91 /* [ */) {
        open.push(c + 2);
        if (open.length > this.max) {
          this.max = open.length;
          if (this.max > limit) throw tooDeep();
        }
      } else if (c === 125 /* } */ || c === 93 /* ] */) {
        if (open.pop() !== c)
          throw notJson(new SyntaxError(`Unexpected token '${text[i]}' in JSON at position ${this.read + i}`));
      }
    }
    this.inString = inString;
    this.escaped = escaped;
    this.read += text.length;
  }

  /** Throws when the text ended inside a string or an open bracket. */
  end(): void {
    if (this.inString || this.open.length > 0) throw notJson(new SyntaxError("Unexpected end of JSON input"));
  }
}

export function parseJsonBody(text: string): unknown {
  if (text.trim() === "") return undefined;
  try {
    new BracketScan().next(text, maxJsonDepth);
  } catch (error) {
    // Past the depth, or brackets that do not pair: JSON.parse names the latter its own way.
    if ((error as JsonBodyError).code === "JSON_TOO_DEEP") throw error;
  }
  try {
    return secureJson.parse(text, undefined, { protoAction: "error", constructorAction: "error" });
  } catch (error) {
    if (/prototype|constructor/i.test((error as Error).message)) throw forbiddenKey();
    throw notJson(error);
  }
}

/** A key spelled with any of its characters written as a JSON `\u` escape (hex digits in either case). */
function keyPattern(name: string): string {
  const spelled = [...name].map((c) => {
    const hex = c.charCodeAt(0).toString(16).padStart(4, "0");
    return `(?:${c}|\\\\u${hex.replace(/[a-f]/g, (d) => `[${d}${d.toUpperCase()}]`)})`;
  });
  return `"${spelled.join("")}"\\s*:`;
}

/**
 * A `__proto__` key anywhere in the text. Looked for in the text, not the result: the slices'
 * objects are merged by assignment, where such a key would set the merged object's prototype. (A
 * `"` inside a string is escaped, so a match is such a key or the end of one, `"a\"__proto__":`.)
 */
const protoKey = new RegExp(keyPattern("__proto__"));
const constructorKey = new RegExp(keyPattern("constructor"));

/** Whether any object holds `constructor.prototype` (walked in slices, as secure-json-parse would refuse it). */
async function holdsConstructorPrototype(root: unknown): Promise<boolean> {
  const pending: unknown[] = [root];
  let seen = 0;
  while (pending.length > 0) {
    const node = pending.pop();
    if (node === null || typeof node !== "object") continue;
    if (Array.isArray(node)) {
      for (const item of node) if (item !== null && typeof item === "object") pending.push(item);
    } else {
      const record = node as Record<string, unknown>;
      const maker = Object.hasOwn(record, "constructor") ? record.constructor : undefined;
      if (maker !== null && typeof maker === "object" && Object.hasOwn(maker, "prototype")) return true;
      for (const key in record) {
        const value = record[key];
        if (value !== null && typeof value === "object") pending.push(value);
      }
    }
    if (++seen % 4096 === 0) await nextTurn();
  }
  return false;
}

/** Parses a large body a slice at a time (json-ext joins what JSON.parse makes of each slice). */
export async function parseJsonBodyInSlices(text: string): Promise<unknown> {
  if (text.trim() === "") return undefined;
  if (protoKey.test(text)) throw forbiddenKey();
  const brackets = new BracketScan();
  let parsed: unknown;
  try {
    parsed = await parseChunked(async function* slices() {
      for (let at = 0; at < text.length; at += sliceChars) {
        const slice = text.slice(at, at + sliceChars);
        brackets.next(slice, maxJsonDepth);
        yield slice;
        await nextTurn();
      }
      // (json-ext 1.1 answers a text whose outermost brackets never close with what it has read.)
      brackets.end();
    });
  } catch (error) {
    throw error instanceof JsonBodyError ? error : notJson(error);
  }
  if (constructorKey.test(text) && (await holdsConstructorPrototype(parsed))) throw forbiddenKey();
  return parsed;
}

export function registerJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser("application/json");
  app.decorateRequest("jsonText", null);
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = body as string;
    const parsedAs = (parsed: unknown) => {
      // Kept for the journal (http/request-journal.ts): a body that names no secret is kept as this text.
      if (parsed !== undefined) request.jsonText = text;
      done(null, parsed);
    };
    if (text.length >= slicedFrom) {
      parseJsonBodyInSlices(text).then(parsedAs, (error: Error) => done(error, undefined));
      return;
    }
    let parsed: unknown;
    try {
      parsed = parseJsonBody(text);
    } catch (error) {
      done(error as Error, undefined);
      return;
    }
    parsedAs(parsed);
  });
}

/**
 * For the routes of operations that take no request body: any body is read and dropped, whatever
 * its content type, size or content (the document lists no error for a stray body on a DELETE or on
 * `POST /auth/session`; found by the fuzzer). Used in a plugin scope holding only those routes.
 */
export function ignoreRequestBodies(scope: FastifyInstance): void {
  // Its type too: Fastify refuses a malformed Content-Type (`a/b, c/d`) before any parser runs.
  scope.addHook("preParsing", (request, _reply, payload, done) => {
    // (Only when there is one: deleting a property turns the headers object into a slow dictionary.)
    if (request.headers["content-type"] !== undefined) delete request.headers["content-type"];
    done(null, payload);
  });
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser("*", (_request, payload, done) => {
    payload.on("error", (error) => done(error, undefined));
    payload.on("end", () => done(null, undefined));
    payload.resume();
  });
}
