/**
 * Canonical Extended JSON text in one pass. The bson library's `EJSON.stringify` first builds a
 * whole tree of `{ $numberInt: … }` wrappers (checking each object against every ancestor for
 * cycles) and then hands that tree to `JSON.stringify`: for a reply of 1,000 documents that double
 * pass was half of the request's CPU. This writer walks the value once and writes the text; its
 * output is the library's, byte for byte (test/data/ejson-text.test.ts compares them on generated
 * values of every BSON type). Values it has no fast path for — BSON types other than the common
 * ones, maps, regular expressions, functions, anything too deep — are written by the library itself,
 * so the rare cases keep its exact behaviour, errors included.
 *
 * A stored document never changes (writes replace it: `storeDocument`), so its text is written once
 * and kept beside it: a `find` of 1,000 documents then joins 1,000 texts instead of writing them.
 */
import { EJSON, ObjectId } from "bson";

const int32Min = -0x80000000;
const int32Max = 0x7fffffff;
/** ±2^63 as doubles: the library's Int64 bounds (2^63 - 1 rounds to 2^63 as a double). */
const int64Min = -(2 ** 63);
const int64Max = 2 ** 63;
/** Past this depth the library writes the rest (and reports a cycle as it does). */
const maxDepth = 200;

function numberText(value: number): string {
  if (Number.isInteger(value) && !Object.is(value, -0)) {
    if (value >= int32Min && value <= int32Max) return `{"$numberInt":"${value}"}`;
    if (value >= int64Min && value <= int64Max) return `{"$numberLong":"${value}"}`;
  }
  return `{"$numberDouble":"${Object.is(value, -0) ? "-0.0" : String(value)}"}`;
}

/** The library's own text for one value (undefined where JSON would leave the value out). */
function libraryText(value: unknown): string | undefined {
  return EJSON.stringify(value as never, { relaxed: false }) as string | undefined;
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Stored documents, with their text once something has written them (null until then). */
const storedTexts = new WeakMap<object, string | null>();

function freezeTree(value: unknown): void {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return;
  if (!Array.isArray(value) && !isPlainObject(value)) return;
  Object.freeze(value);
  for (const key of Object.keys(value)) freezeTree((value as Record<string, unknown>)[key]);
}

/**
 * Marks a document the store keeps as unchangeable: its plain objects and arrays are frozen (a
 * change would throw rather than leave its kept text stale) and its text is kept once written.
 * Pass a private copy: the caller must not hand the same object out for changing.
 */
export function storeDocument<T extends object>(doc: T): T {
  freezeTree(doc);
  storedTexts.set(doc, null);
  return doc;
}

/** The text of `value`, or undefined where JSON leaves a member out (a function, a symbol). */
function write(value: unknown, depth: number): string | undefined {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
      return numberText(value);
    case "boolean":
      return value ? "true" : "false";
    case "undefined":
      return "null";
    case "bigint":
      return `{"$numberLong":"${BigInt.asIntN(64, value)}"}`;
    case "object":
      break;
    default:
      return libraryText(value);
  }
  if (value === null) return "null";
  if (depth > maxDepth) return libraryText(value);
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ",";
      out += write(value[i], depth + 1) ?? "null";
    }
    return `${out}]`;
  }
  if (value instanceof ObjectId) return `{"$oid":"${value.toHexString()}"}`;
  if (value instanceof Date) return `{"$date":{"$numberLong":"${value.getTime()}"}}`;
  if (!isPlainObject(value) || "_bsontype" in value) return libraryText(value);
  if (depth <= 1) {
    const kept = storedTexts.get(value);
    if (kept) return kept;
    if (kept === null) {
      const text = writeObject(value, depth);
      storedTexts.set(value, text);
      return text;
    }
  }
  return writeObject(value, depth);
}

function writeObject(value: object, depth: number): string {
  let out = "{";
  let first = true;
  for (const key of Object.keys(value)) {
    const text = write((value as Record<string, unknown>)[key], depth + 1);
    if (text === undefined) continue;
    out += `${first ? "" : ","}${JSON.stringify(key)}:${text}`;
    first = false;
  }
  return `${out}}`;
}

/** BSON-typed JS values to canonical Extended JSON text, as `EJSON.stringify(value, { relaxed: false })`. */
export function canonicalEJSONText(value: unknown): string {
  // Top level: what the library answers for a lone function or symbol (undefined), kept as is.
  return write(value, 0) as string;
}
