/**
 * Canonical Extended JSON text in one pass. The bson library's `EJSON.stringify` first builds a
 * whole tree of `{ $numberInt: … }` wrappers (checking each object against every ancestor for
 * cycles) and then hands that tree to `JSON.stringify`: for a reply of 1,000 documents that double
 * pass was half of the request's CPU. This writer walks the value once and writes the text; its
 * output is the library's, byte for byte (test/data/ejson-text.test.ts compares them on generated
 * values of every BSON type), but for integers past 2^53, written with their exact digits
 * (`numberText`). Values it has no fast path for — BSON types other than the common
 * ones, maps, regular expressions, functions, anything too deep — are written by the library itself,
 * so the rare cases keep its exact behaviour, errors included.
 *
 * A stored document never changes (writes replace it: `storeDocument`), so its text is written once
 * and kept beside it: a `find` of 1,000 documents then joins 1,000 texts instead of writing them.
 */
import { EJSON, ObjectId } from "bson";
import { bsonSize, storedSize, utf8Length } from "./bson-size.ts";
import { step } from "./query-limits.ts";
import { keysOf } from "./wide-keys.ts";

const int32Min = -0x80000000;
const int32Max = 0x7fffffff;
/**
 * Int64's bounds as doubles: -2^63 is one, 2^63 is past the largest (2^63 - 1 rounds to it). The
 * library takes 2^63 for an Int64 and writes `{"$numberLong":"9223372036854776000"}`, which no
 * reader takes for the value (past Int64's range it wraps or is refused): it is a double here.
 */
const int64Min = -(2 ** 63);
const int64Max = 2 ** 63;
/** Past this depth the library writes the rest (and reports a cycle as it does). */
export const maxTextDepth = 200;

/**
 * A number's text. An integer past 2^53 (a computed one: those read stay Longs) is written with
 * its exact digits, where the library writes JavaScript's shortest ("4611686018427388000" for
 * 2^62, 96 more): read back, that text was another value than the one written — and the
 * PostgreSQL store, which reads its documents back from their texts, held another value than the
 * memory store. 2^63 (an Int64 sum or product past the largest) is a double.
 */
function numberText(value: number): string {
  if (Number.isInteger(value) && !Object.is(value, -0)) {
    if (value >= int32Min && value <= int32Max) return `{"$numberInt":"${value}"}`;
    if (value >= int64Min && value < int64Max)
      return `{"$numberLong":"${Number.isSafeInteger(value) ? value : BigInt(value)}"}`;
  }
  return `{"$numberDouble":"${Object.is(value, -0) ? "-0.0" : String(value)}"}`;
}

/**
 * The wrapper and string a number is written with (numberText's `{"<wrapper>":"<string>"}`): one
 * for each number, so a store can look a number up in its documents' texts.
 */
export function numberWrapper(value: number): { wrapper: string; text: string } {
  const written = numberText(value);
  const end = written.indexOf('"', 2);
  return { wrapper: written.slice(2, end), text: written.slice(end + 3, -2) };
}

/** The library's own text for one value (undefined where JSON would leave the value out). */
function libraryText(value: unknown): string | undefined {
  return EJSON.stringify(value as never, { relaxed: false }) as string | undefined;
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** A stored document's text, and its BSON size once a metered write (a reply) needed it. */
interface Kept {
  text: string;
  bytes: number;
}

/** Stored documents, with their text once something has written them (null until then). */
const storedTexts = new WeakMap<object, Kept | null>();

/** Freezes a value's plain objects and arrays (its BSON values are left as they are). */
export function freezeTree(value: unknown): void {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return;
  if (!Array.isArray(value) && !isPlainObject(value)) return;
  Object.freeze(value);
  for (const key of keysOf(value)) freezeTree((value as Record<string, unknown>)[key]);
}

/**
 * Marks a document the store keeps as unchangeable: its plain objects and arrays are frozen (a
 * change would throw rather than leave its kept text stale) and its text is kept once written.
 * Pass a private copy: the caller must not hand the same object out for changing.
 */
export function storeDocument<T extends object>(doc: T): T {
  markStored(doc, bsonSize(doc, new WeakMap()));
  freezeTree(doc);
  return doc;
}

/**
 * `storeDocument` but the freeze: keeps the document's BSON size on it and its text once written
 * (wide-values.ts freezes a wide document in slices).
 */
export function markStored(doc: object, size: number): void {
  Object.defineProperty(doc, storedSize, { value: size });
  storedTexts.set(doc, null);
}

/** The text kept for a stored document, null while none is written, undefined for any other value. */
export function keptText(doc: object): string | null | undefined {
  const kept = storedTexts.get(doc);
  return kept === undefined || kept === null ? kept : kept.text;
}

/**
 * Keeps `text` — the canonical Extended JSON `doc` was just read from (a PostgreSQL row) — as its
 * text: a reply or a query worker's input then joins it instead of writing the document again.
 * Only for a text this writer made (the stores write every document with it), and a document
 * nobody changes afterwards (the stores' contract: callers must not change what they read).
 */
export function keepText<T extends object>(doc: T, text: string): T {
  storedTexts.set(doc, { text, bytes: -1 });
  return doc;
}

/**
 * What a metered write (a reply: `replyText`) has written: the BSON size of what it wrote, checked
 * against `cap` as it goes (a value holding one part any number of times stops at the cap, not at
 * its end). Each value written afresh is a step of the query budget (query-limits.ts), so writing
 * a reply keeps the deadline, and on the main thread its slice.
 */
interface Meter {
  bytes: number;
  cap: number;
}

let meter: Meter | null = null;

class ReplyTooLarge extends Error {}
const replyTooLarge = new ReplyTooLarge();

/** Counts `bytes` of BSON and one value written afresh (metered writes only). */
function count(m: Meter, bytes: number): void {
  m.bytes += bytes;
  if (m.bytes > m.cap) throw replyTooLarge;
  step();
}

/** The BSON size of a value of a type the library writes (ObjectId, Date, Long, Binary…). */
const leafBytes = (value: unknown) => bsonSize(value, new WeakMap());

/** The text of `value`, or undefined where JSON leaves a member out (a function, a symbol). */
function write(value: unknown, depth: number): string | undefined {
  const m = meter;
  switch (typeof value) {
    case "string":
      if (m !== null) count(m, 5 + utf8Length(value));
      return JSON.stringify(value);
    case "number":
      if (m !== null) count(m, leafBytes(value));
      return numberText(value);
    case "boolean":
      if (m !== null) count(m, 1);
      return value ? "true" : "false";
    case "undefined":
      if (m !== null) count(m, 0);
      return "null";
    case "bigint":
      if (m !== null) count(m, 8);
      return `{"$numberLong":"${BigInt.asIntN(64, value)}"}`;
    case "object":
      break;
    default:
      return libraryText(value);
  }
  if (value === null) {
    if (m !== null) count(m, 0);
    return "null";
  }
  if (depth > maxTextDepth) {
    if (m !== null) count(m, bsonSize(value, new WeakMap(), m.cap - m.bytes));
    return libraryText(value);
  }
  if (Array.isArray(value)) {
    if (m !== null) count(m, 5);
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ",";
      // A type byte, the index's digits and a NUL.
      if (m !== null) m.bytes += i < 10 ? 3 : i < 100 ? 4 : i < 1000 ? 5 : i < 10_000 ? 6 : 2 + String(i).length;
      out += write(value[i], depth + 1) ?? "null";
    }
    return `${out}]`;
  }
  if (value instanceof ObjectId) {
    if (m !== null) count(m, 12);
    return `{"$oid":"${value.toHexString()}"}`;
  }
  if (value instanceof Date) {
    if (m !== null) count(m, 8);
    return `{"$date":{"$numberLong":"${value.getTime()}"}}`;
  }
  if (!isPlainObject(value) || "_bsontype" in value) {
    if (m !== null) count(m, leafBytes(value));
    return libraryText(value);
  }
  if (depth <= 1) {
    const kept = storedTexts.get(value);
    if (kept) {
      if (m !== null) {
        if (kept.bytes < 0) kept.bytes = bsonSize(value, new WeakMap());
        m.bytes += kept.bytes;
        if (m.bytes > m.cap) throw replyTooLarge;
      }
      return kept.text;
    }
    if (kept === null) {
      const before = m?.bytes ?? 0;
      const text = writeObject(value, depth);
      storedTexts.set(value, { text, bytes: m !== null ? m.bytes - before : -1 });
      return text;
    }
  }
  return writeObject(value, depth);
}

function writeObject(value: object, depth: number): string {
  const m = meter;
  if (m !== null) count(m, 5);
  let out = "{";
  let first = true;
  for (const key of keysOf(value)) {
    const member = (value as Record<string, unknown>)[key];
    if (m !== null && typeof member !== "function" && typeof member !== "symbol") m.bytes += 2 + utf8Length(key);
    const text = write(member, depth + 1);
    if (text === undefined) continue;
    out += `${first ? "" : ","}${JSON.stringify(key)}:${text}`;
    first = false;
  }
  return `${out}}`;
}

/**
 * The text of a value `depth` levels down in another (its nesting counts towards the library's
 * depth), or undefined where JSON leaves a member out. Not metered (replies are: `replyText`).
 */
export function textAt(value: unknown, depth: number): string | undefined {
  const outer = meter;
  meter = null;
  try {
    return write(value, depth);
  } finally {
    meter = outer;
  }
}

/** BSON-typed JS values to canonical Extended JSON text, as `EJSON.stringify(value, { relaxed: false })`. */
export function canonicalEJSONText(value: unknown): string {
  // Top level: what the library answers for a lone function or symbol (undefined), kept as is.
  return write(value, 0) as string;
}

/**
 * MongoDB's largest reply (BSONObjMaxInternalSize, which its BSONObjectTooLarge error names): 16 MiB
 * and 16 KiB.
 */
export const maxReplyBytes = 16 * 1024 * 1024 + 16 * 1024;

export interface ReplyLimits {
  /** Past this BSON size the reply is refused (`onTooLarge` gives the error, with the whole size). */
  capBytes: number;
  /**
   * Measure the whole reply first (through shared parts once each) and refuse it unwritten when it
   * is too large: what a worker does, where writing a value of many shared parts up to the cap would
   * cost more than measuring it.
   */
  measureFirst?: boolean;
  onTooLarge: (bytes: number) => Error;
}

/**
 * A reply's canonical Extended JSON text, written only when its BSON form fits the cap: the size is
 * counted while writing, so the work is bounded by the cap whatever the value (a value holding the
 * same part a million times stops at the cap). The error answers the whole size, measured through
 * shared parts once each (bson-size.ts).
 */
export function replyText(value: unknown, limits: ReplyLimits): string {
  if (limits.measureFirst) {
    const size = bsonSize(value, new WeakMap(), limits.capBytes);
    if (size > limits.capBytes) throw limits.onTooLarge(bsonSize(value, new WeakMap()));
  }
  const outer = meter;
  meter = { bytes: 0, cap: limits.capBytes };
  try {
    const text = write(value, 0) as string;
    return value === undefined ? '{"$undefined":true}' : text;
  } catch (error) {
    if (error === replyTooLarge) throw limits.onTooLarge(bsonSize(value, new WeakMap()));
    throw error;
  } finally {
    meter = outer;
  }
}
