/**
 * The logical size of a value: the size its BSON form would have, computed once per distinct
 * object or array (by identity), so a value built from shared references — `[v, v]`, again and
 * again — is measured in as many steps as it has distinct parts while its size doubles with each
 * level. Everything that bounds work on values (the query ceiling, the reply cap, the document
 * limit) measures with this, never by walking the value as a tree. See
 * docs/decisions/0019-evaluation-off-the-main-thread.md.
 */
import { BSON } from "bson";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { keysOf } from "./wide-keys.ts";

/** The sizes of frozen objects and arrays (stored documents): they never change, so their size holds for good. */
const frozenSizes = new WeakMap<object, number>();

/**
 * A stored document's size, kept on it (a symbol: no key, copy or text sees it) when the store
 * keeps it (ejson-text.ts `storeDocument`): read in a property access, not a lookup, for each of
 * the documents a query reads.
 */
export const storedSize = Symbol("bsonSize");

/** The size kept on a stored document, if any. */
export function keptSize(doc: object): number | undefined {
  return (doc as { [storedSize]?: number })[storedSize];
}

/**
 * At least the BSON size of the document whose canonical Extended JSON text is `text` (as this
 * server writes it), without reading it: a reply of stored texts is checked against its cap with
 * these (mongo-actions.ts `exactFind`; past the cap, the document is read and sized exactly).
 *
 * Six bytes for each UTF-16 unit of the text. Every part of the BSON form comes from a part of the
 * text at most ~5.3 times its length: a document or an array is 5 bytes for its two brackets; a
 * field is a type byte, its name (up to 3 UTF-8 bytes a unit) and a NUL for its quotes, colon and
 * name; a string 5 bytes and up to 3 a unit for its quotes and units; an array element a type
 * byte, its index's digits (at most 9: a string holds fewer than 2^29 units, an element at least
 * three) and a NUL for its comma — with its value, at worst 16 bytes for `,[]`, `,{}` or `,""`; the
 * first element's 3 bytes go with the brackets (8 for `[` `]`); every other value (`null`, `true`,
 * `{"$numberInt":"…"}`, `{"$oid":"…"}`, `{"$date":…}`, …) is longer as text than as BSON.
 */
export const sizeBoundOfText = (text: string): number => 6 * text.length;

/** MongoDB's deepest nesting (BSONDepth); a value nested deeper cannot be stored or sent. */
export const maxBsonDepth = 200;

/** UTF-8 bytes of a string (the short ASCII ones counted here, without a native call). */
export function utf8Length(text: string): number {
  const n = text.length;
  if (n > 64) return Buffer.byteLength(text, "utf8");
  for (let i = 0; i < n; i++) if (text.charCodeAt(i) > 0x7f) return Buffer.byteLength(text, "utf8");
  return n;
}

/** The keys of an array of `n` elements in BSON: each index's digits and a NUL. */
function indexKeysBytes(n: number): number {
  let total = n;
  for (let digits = 1, low = 0, high = 10; low < n; digits++, low = high, high *= 10)
    total += (Math.min(n, high) - low) * digits;
  return total;
}

/** A value of a BSON class the library writes (sized by the library: these are leaves or rare). */
function libraryValueSize(value: object): number {
  // {v: value}: 4 (size) + 1 (type) + 2 ("v\0") + value + 1 (NUL).
  return BSON.calculateObjectSize({ v: value } as never) - 8;
}

function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Sizes of this evaluation's values (unfrozen ones may change later, so they are kept per budget). */
export type SizeCache = WeakMap<object, number>;

class TooLarge extends Error {}
const tooLarge = new TooLarge();

/**
 * The BSON size of `value` as an element's value (a document's or array's whole size; a string's
 * 4 + bytes + 1), or `Infinity` as soon as it passes `limit` (the walk stops there: the work is
 * bounded by the limit, whatever the value).
 */
export function bsonSize(value: unknown, cache: SizeCache, limit = Number.POSITIVE_INFINITY): number {
  try {
    return sizeOf(value, cache, limit, 0);
  } catch (error) {
    if (error === tooLarge) return Number.POSITIVE_INFINITY;
    throw error;
  }
}

/** `bsonSize` of a value `depth` levels down in another (its nesting counts towards the deepest). */
export function bsonSizeAt(value: unknown, cache: SizeCache, depth: number): number {
  return sizeOf(value, cache, Number.POSITIVE_INFINITY, depth);
}

function sizeOf(value: unknown, cache: SizeCache, limit: number, depth: number): number {
  switch (typeof value) {
    case "string":
      return 5 + utf8Length(value);
    case "number":
      return Number.isInteger(value) && value >= -0x80000000 && value <= 0x7fffffff && !Object.is(value, -0) ? 4 : 8;
    case "boolean":
      return 1;
    case "undefined":
      return 0;
    case "bigint":
      return 8;
    case "object":
      break;
    default:
      return 0;
  }
  if (value === null) return 0;
  const frozen = Object.isFrozen(value);
  const known = frozen ? (keptSize(value) ?? frozenSizes.get(value)) : cache.get(value);
  if (known !== undefined) {
    if (known > limit) throw tooLarge;
    return known;
  }
  let size: number;
  if (Array.isArray(value)) {
    if (depth >= maxBsonDepth) throw errors.mongo("the query or document is nested too deeply");
    // Each element takes a type byte and its key: a long array is refused unwalked.
    size = 5 + value.length + indexKeysBytes(value.length);
    if (size > limit) throw tooLarge;
    let previous: unknown;
    let previousSize = 0;
    for (let i = 0; i < value.length; i++) {
      const element = value[i];
      // A run of one shared element (what doubling builds) is sized once.
      if (i === 0 || element !== previous || element === null || typeof element !== "object") {
        previousSize = sizeOf(element, cache, limit, depth + 1);
        previous = element;
      }
      size += previousSize;
      if (size > limit) throw tooLarge;
    }
  } else if (value instanceof Date) {
    return 8;
  } else if (!isPlain(value)) {
    const type = (value as { _bsontype?: unknown })._bsontype;
    if (type === "ObjectId") return 12;
    if (type === "Long" || type === "Double" || type === "Timestamp") return 8;
    if (type === "Int32") return 4;
    if (type === "Decimal128") return 16;
    if (type === undefined && !(value instanceof RegExp) && !ArrayBuffer.isView(value)) return 0;
    size = libraryValueSize(value);
  } else {
    if (depth >= maxBsonDepth) throw errors.mongo("the query or document is nested too deeply");
    size = 5;
    for (const key of keysOf(value)) {
      const v = (value as Record<string, unknown>)[key];
      if (typeof v === "function" || typeof v === "symbol") continue;
      size += 2 + utf8Length(key) + sizeOf(v, cache, limit, depth + 1);
      if (size > limit) throw tooLarge;
    }
  }
  if (frozen) frozenSizes.set(value, size);
  else cache.set(value, size);
  if (size > limit) throw tooLarge;
  return size;
}

/** MongoDB's largest document (and reply): 16 MiB. */
export const maxBsonObjectSize = 16 * 1024 * 1024;
