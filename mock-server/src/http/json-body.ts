/**
 * The JSON body parser for every route: an empty body is "no body" (realm-core sends
 * `Content-Type: application/json` with an empty body on `POST /auth/session`), nesting deeper
 * than MongoDB allows is refused before parsing (so a hostile 18 MB `[[[[…` costs one linear scan,
 * not seconds of parsing), prototype-pollution keys are refused, and a lone surrogate's escape is
 * read as U+FFFD, as the service reads it (data/well-formed-json.ts). A large body is parsed a
 * slice at a time, other requests served in between: parsed at once, 16 MB held every other
 * client for a quarter of a second here (docs/decisions/0024-large-bodies-in-slices.md).
 */

import type { FastifyInstance } from "fastify";
import secureJson from "secure-json-parse";
import { takeTurn } from "../data/turns.ts";
import { wellFormedParse } from "../data/well-formed-json.ts";
import { isIndexKey, keepKeys } from "../data/wide-keys.ts";

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

/** JSON's whitespace (not String.prototype.trim's, which takes more). */
function isBlank(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 10 && c !== 13 && c !== 9) return false;
  }
  return true;
}

/** A syntax error at the first character of `text` from `from` that is not whitespace. */
function unexpected(text: string, from: number): JsonBodyError {
  let at = from;
  while (at < text.length && isBlank(text, at, at + 1)) at++;
  if (at >= text.length) return notJson(new SyntaxError("Unexpected end of JSON input"));
  return notJson(new SyntaxError(`Unexpected token '${text[at]}' in JSON at position ${at}`));
}

/** A container being built by the sliced parse, and where its members not yet read start. */
interface Frame {
  readonly value: Record<string, unknown> | unknown[];
  /** Where the members not yet read start: after the container's bracket or a comma. */
  pending: number;
  /** Whether `pending` follows a comma (so what follows may not be empty). */
  afterComma: boolean;
  /** Just after a member built as a frame of its own closed: where it closed; else -1. */
  closedAt: number;
  /**
   * An object's keys as they are added, kept once it closes when it is wide (data/wide-keys.ts);
   * null for an array, or an object with an array index for a key (listed before the others).
   */
  keys: string[] | null;
}

/**
 * Reads a JSON text's structure a part at a time — each character once, strings skipped with
 * indexOf — refusing nesting past the limit and brackets that do not pair. For the sliced parse it
 * also builds the containers open at the end of each part (`open`) and reads the members between
 * part ends with JSON.parse, wrapped in their container's brackets (`read`): every character is
 * parsed once and every member added once, so the work is linear in the text whatever its shape
 * (`@discoveryjs/json-ext`, used before, looked through the whole of an object at each slice it
 * spanned: a 200,000-key object took seconds). Its result is JSON.parse's, key order and duplicate
 * keys included (a member built later replaces an earlier one where the earlier one stood).
 */
class JsonReader {
  /** Where the root value closed (-1 until it has). */
  end = -1;
  root: Record<string, unknown> | unknown[] | undefined;
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** The next `"` and `\` at or past where the scan is (found once, kept until passed). */
  private quote = -1;
  private slash = -1;
  /** Per level (1 is the root's contents): the code of its closing bracket, where its opening one is, where its current member starts. */
  private readonly closers: number[] = [0];
  private readonly openAt: number[] = [0];
  private readonly memberAt: number[] = [0];
  /** The containers built so far that are still open, outermost first (level n's is frames[n - 1]). */
  private readonly frames: Frame[] = [];

  constructor(private readonly text: string) {}

  /** Reads the text from `from` to `to` (or to where the root value closes). */
  scan(from: number, to: number): void {
    const { text, closers, openAt, memberAt, frames } = this;
    let { depth, inString, escaped, quote, slash } = this;
    for (let i = from; i < to; i++) {
      if (inString) {
        if (escaped) {
          escaped = false;
          continue;
        }
        if (quote < i) quote = text.indexOf('"', i) >>> 0;
        if (slash < i) slash = text.indexOf("\\", i) >>> 0;
        if (slash < quote) {
          if (slash >= to) break; // the string goes on in the next part
          i = slash;
          escaped = true;
        } else if (quote < to) {
          i = quote;
          inString = false;
        } else break;
        continue;
      }
      const c = text.charCodeAt(i);
      if (c === 34 /* " */) inString = true;
      else if (c === 123 /* { */ || c === 91 /* [ */) {
        if (++depth > maxJsonDepth) throw tooDeep();
        closers[depth] = c + 2;
        openAt[depth] = i;
        memberAt[depth] = i + 1;
      } else if (c === 44 /* , */) {
        memberAt[depth] = i + 1;
        if (depth !== 0 && depth === frames.length) this.separated(frames[depth - 1]!, i);
      } else if (c === 125 /* } */ || c === 93 /* ] */) {
        if (closers[depth] !== c) throw unexpected(text, i);
        if (depth === frames.length) this.closed(i);
        if (--depth === 0) {
          this.end = i + 1;
          break;
        }
      }
    }
    this.depth = depth;
    this.inString = inString;
    this.escaped = escaped;
    this.quote = quote;
    this.slash = slash;
  }

  /** Builds the containers open where the scan stands and reads the members complete before it. */
  open(): void {
    const { text, closers, openAt, memberAt, frames, depth } = this;
    for (let level = frames.length + 1; level <= depth; level++) {
      const value = closers[level] === 125 ? {} : [];
      const parent = frames[level - 2];
      if (parent === undefined) this.root = value;
      else {
        const start = memberAt[level - 1]!;
        if (start > parent.pending) this.read(parent, start - 1, false);
        if (parent.closedAt >= 0) throw unexpected(text, parent.closedAt);
        const head = openAt[level]!;
        if (Array.isArray(parent.value)) {
          if (!isBlank(text, start, head)) throw unexpected(text, start);
          parent.value.push(value);
        } else {
          const key = this.key(start, head);
          addedKey(parent, key);
          parent.value[key] = value;
        }
      }
      const keys = Array.isArray(value) ? null : [];
      frames.push({ value, pending: openAt[level]! + 1, afterComma: false, closedAt: -1, keys });
    }
    const innermost = frames[depth - 1];
    if (innermost !== undefined && memberAt[depth]! > innermost.pending)
      this.read(innermost, memberAt[depth]! - 1, false);
  }

  /** The result, once the text is all read. */
  finish(start: number): unknown {
    if (this.end < 0) throw notJson(new SyntaxError("Unexpected end of JSON input"));
    if (!isBlank(this.text, this.end, this.text.length)) throw unexpected(this.text, this.end);
    return this.root ?? parseSlice(this.text.slice(start, this.end), start);
  }

  /** A comma between the members of the innermost container built. */
  private separated(frame: Frame, at: number): void {
    if (frame.closedAt < 0) return;
    if (!isBlank(this.text, frame.closedAt, at)) throw unexpected(this.text, frame.closedAt);
    frame.closedAt = -1;
    frame.pending = at + 1;
    frame.afterComma = true;
  }

  /** The closing bracket of the innermost container built. */
  private closed(at: number): void {
    const frame = this.frames.pop()!;
    this.read(frame, at, true);
    if (frame.keys !== null) keepKeys(frame.value, frame.keys);
    const parent = this.frames.at(-1);
    if (parent !== undefined) parent.closedAt = at + 1;
  }

  /** Reads a container's members from where it stands to `to` (a comma, or its closing bracket when `last`). */
  private read(frame: Frame, to: number, last: boolean): void {
    const { text } = this;
    if (frame.closedAt >= 0) {
      if (!isBlank(text, frame.closedAt, to)) throw unexpected(text, frame.closedAt);
    } else if (isBlank(text, frame.pending, to)) {
      // Nothing before a comma, or after the last one.
      if (!last || frame.afterComma) throw unexpected(text, frame.pending);
    } else if (Array.isArray(frame.value)) {
      const items = parseSlice(`[${text.slice(frame.pending, to)}]`, frame.pending - 1) as unknown[];
      // (One at a time: spreading many arguments would overflow the stack.)
      for (const item of items) frame.value.push(item);
    } else {
      const members = parseSlice(`{${text.slice(frame.pending, to)}}`, frame.pending - 1) as Record<string, unknown>;
      if (frame.keys !== null) for (const key of Object.keys(members)) addedKey(frame, key);
      Object.assign(frame.value, members);
    }
    frame.pending = to + 1;
    frame.afterComma = true;
  }

  /** An object member's key, from its start to its value's opening bracket (`"key" :`). */
  private key(start: number, end: number): string {
    const head = this.text.slice(start, end);
    const colon = head.lastIndexOf(":");
    if (colon < 0 || !isBlank(head, colon + 1, head.length)) throw unexpected(this.text, start);
    const key = parseSlice(head.slice(0, colon), start);
    if (typeof key !== "string") throw unexpected(this.text, start);
    return key;
  }
}

/** Notes a key about to be set on an object frame (a new one joins its keys, in order). */
function addedKey(frame: Frame, key: string): void {
  if (frame.keys === null || Object.hasOwn(frame.value, key)) return;
  if (isIndexKey(key)) frame.keys = null;
  else frame.keys.push(key);
}

/** JSON.parse of a part of the body that starts at `offset`, its error's position made the body's. */
function parseSlice(text: string, offset: number): unknown {
  try {
    return wellFormedParse(text, JSON.parse);
  } catch (error) {
    const message = (error as Error).message.replace(
      /position (\d+)/,
      (_, at: string) => `position ${Number(at) + offset}`,
    );
    throw notJson(new SyntaxError(message));
  }
}

export function parseJsonBody(text: string): unknown {
  if (text.trim() === "") return undefined;
  try {
    new JsonReader(text).scan(0, text.length);
  } catch (error) {
    // Past the depth, or brackets that do not pair: JSON.parse names the latter its own way.
    if ((error as JsonBodyError).code === "JSON_TOO_DEEP") throw error;
  }
  try {
    return wellFormedParse(text, (json) =>
      secureJson.parse(json, undefined, { protoAction: "error", constructorAction: "error" }),
    );
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
 * members are added to their containers by assignment, where such a key would set a prototype. (A
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
    if (++seen % 4096 === 0) await takeTurn();
  }
  return false;
}

/** Parses a large body a slice at a time, giving other requests a turn between slices (JsonReader). */
export async function parseJsonBodyInSlices(text: string): Promise<unknown> {
  let start = 0;
  while (start < text.length && isBlank(text, start, start + 1)) start++;
  if (start === text.length) return undefined;
  const first = text.charCodeAt(start);
  // A string or a number cannot be read in parts (nor can it nest).
  if (first !== 123 /* { */ && first !== 91 /* [ */) return parseJsonBody(text);
  if (protoKey.test(text)) throw forbiddenKey();
  // (The body's text was just put together and decoded, one step of ~20 ms for 6 MB: the first
  // slice waits a turn.)
  await takeTurn();
  const reader = new JsonReader(text);
  for (let at = start; reader.end < 0 && at < text.length; at += sliceChars) {
    reader.scan(at, Math.min(at + sliceChars, text.length));
    if (reader.end >= 0) break;
    reader.open();
    await takeTurn();
  }
  const parsed = reader.finish(start);
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
