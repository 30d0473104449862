/**
 * Documents as the emulator keeps them: JS values with BSON types (ObjectId, Date, Long, Binary,
 * Decimal128…), read from and written as Extended JSON. Numbers are kept as JS numbers (EJSON's
 * relaxed reading), so MongoDB query semantics (mingo) compare them naturally.
 */
import { type Binary, BSONRegExp, Decimal128, Double, EJSON, Int32, Long, ObjectId, Timestamp } from "bson";
import { canonicalEJSONText } from "./ejson-text.ts";
import { strictFormProblem } from "./strict-forms.ts";
import { wellFormedJson } from "./well-formed-json.ts";
import { keepKeys, keysOf } from "./wide-keys.ts";

export type Document = Record<string, unknown>;

/** Int32 and Double as JS numbers; Int64 too when it fits (2^53), else kept as a Long. */
export function numbersToJs(value: unknown): unknown {
  if (value instanceof Int32 || value instanceof Double) return value.valueOf();
  // A Timestamp is a Long to the library; it stays a Timestamp.
  if (value instanceof Long && !(value instanceof Timestamp))
    return value.lessThanOrEqual(Number.MAX_SAFE_INTEGER) && value.greaterThanOrEqual(Number.MIN_SAFE_INTEGER)
      ? value.toNumber()
      : value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = numbersToJs(value[i]);
    return value;
  }
  if (value !== null && typeof value === "object" && isPlain(value)) {
    const record = value as Document;
    for (const key of Object.keys(record)) record[key] = numbersToJs(record[key]);
  }
  return value;
}

/**
 * Canonical or relaxed Extended JSON (already JSON-parsed) to BSON-typed JS values. Numbers become
 * JS numbers (so MongoDB query semantics compare them naturally), except Int64 beyond 2^53, which
 * stays an exact Long. Regular expressions: see `markRegexes`.
 */
export function fromEJSON(value: unknown, options: { saved?: boolean } = {}): unknown {
  const written = JSON.stringify(value);
  if (written === undefined) return value;
  let text = wellFormedJson(written);
  // (A state this server saved: an Int64 past the range is a double it wrote before it wrote them
  // exactly, read as that double, not refused as a client's.)
  if (options.saved) text = savedDoubles(text);
  checkNumberStrings(text);
  let parsed: unknown;
  if (!mentionsRegex.test(text)) {
    // The common types read here (a copy: the value is the caller's), the rest by the library,
    // which also refuses a field name holding U+0000 (JSON writes it "\u0000").
    if (!text.includes("\\u0000"))
      try {
        return commonTypes(JSON.parse(text));
      } catch (error) {
        if (error !== notCommon) throw error;
      }
    parsed = EJSON.parse(text, { relaxed: false });
  } else parsed = restoreRegexes(EJSON.parse(JSON.stringify(markRegexes(JSON.parse(text))), { relaxed: false }));
  if (text.includes('"$date"')) checkDates(parsed);
  return numbersToJs(parsed);
}

// The bson library reads `{"$numberInt": "abc"}` as 0, `"1.5"` as 1 and `"3000000000"` wrapped
// around, and `{"$date": "not a date"}` as an invalid date (which it then cannot write back); the
// service's reader refuses them (`strconv.ParseInt: parsing "abc": invalid syntax`), and so do we,
// in its words (data/strict-forms.ts). The function process checks arguments with the same patterns.
export const badNumberString = /"\$number(Int|Long)"\s*:\s*"(?![+-]?\d+")((?:[^"\\]|\\.)*)"/;
/**
 * An Int32's or Int64's digits long enough to be past its range (it wraps them around: the
 * library's writing of -2^63 as "-9223372036854776000" is read as 9223372036854775616). MongoDB's
 * Extended JSON readers refuse them (value out of range), and so do we.
 */
export const longNumberString = /"\$number(Int|Long)"\s*:\s*"([+-]?\d{10,})"/g;

const int64Top = 2n ** 63n;

/**
 * Before it wrote integers past 2^53 exactly (decision 0040), this server wrote a double of 2^63
 * or more (within Int64's text) as the library does, an Int64 of JavaScript's digits
 * ("9223372036854776000"), which the library reads wrapped around: in its saved states and stored
 * texts such an Int64 past the range is read as the double it was.
 */
export function savedDoubles(text: string): string {
  if (!text.includes('"$numberLong"')) return text;
  return text.replace(longNumberString, (whole, kind: string, digits: string) => {
    const n = BigInt(digits);
    return kind === "Long" && (n < -int64Top || n >= int64Top) ? `"$numberDouble":"${digits}"` : whole;
  });
}

/** The string a JSON text's `"…"` content (as a regular expression caught it) holds. */
function jsonStringContent(raw: string): string {
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw;
  }
}

function checkNumberStrings(text: string): void {
  const bad = badNumberString.exec(text);
  if (bad) {
    const problem = strictFormProblem({ [`$number${bad[1]}`]: jsonStringContent(bad[2]!) });
    if (problem !== null) throw new Error(problem);
  }
  for (const [, kind, digits] of text.matchAll(longNumberString)) {
    const problem = strictFormProblem({ [`$number${kind}`]: digits });
    if (problem !== null) throw new Error(problem);
  }
}

function checkDates(node: unknown): void {
  if (node instanceof Date) {
    if (Number.isNaN(node.getTime())) throw new Error("$date is not a valid date");
    return;
  }
  if (Array.isArray(node)) for (const item of node) checkDates(item);
  else if (node !== null && typeof node === "object" && isPlain(node))
    for (const value of Object.values(node)) checkDates(value);
}

/**
 * Canonical Extended JSON text (a function's MongoDB action from its process, a query worker's
 * job) to BSON-typed values: the common types' reader, else the library's.
 */
export function fromEJSONText(written: string): unknown {
  const text = wellFormedJson(written);
  if (mentionsRegex.test(text)) return fromEJSON(JSON.parse(text), { saved: true });
  try {
    return commonTypes(JSON.parse(text));
  } catch (error) {
    if (error !== notCommon) throw error;
    return numbersToJs(EJSON.parse(savedDoubles(text), { relaxed: false }));
  }
}

const mentionsRegex = /"\$regex"|"\$regularExpression"/;

/**
 * A stored document's canonical Extended JSON text read back, and whether writing the result again
 * gives that very text (so a reply may join the text as it is: ejson-text.ts `keepText`). It does
 * through the common types' reader below and the bson library's; a text mentioning regular
 * expressions is read another way, which does not promise that.
 */
export function fromStoredText(text: string): { value: unknown; sameText: boolean } {
  if (mentionsRegex.test(text)) return { value: fromEJSON(JSON.parse(text), { saved: true }), sameText: false };
  const parsed = JSON.parse(text) as unknown;
  try {
    return { value: commonTypes(parsed), sameText: true };
  } catch (error) {
    if (error !== notCommon) throw error;
    const read = savedDoubles(text);
    return { value: numbersToJs(EJSON.parse(read, { relaxed: false })), sameText: read === text };
  }
}

/**
 * Whether a reply holds a stored text as it is: writing what `fromStoredText` reads from it gives
 * it back (not promised for a text mentioning regular expressions).
 */
export const repliedAsStored = (text: string): boolean => !mentionsRegex.test(text);

/**
 * A sort key's canonical Extended JSON text (one field of a stored document) read as the document's
 * reading would read it, when it is a scalar — a string, a number, a boolean, null, an ObjectId or
 * a date; else undefined (an array or a document sorts by its whole form, which a text of one
 * field does not always keep: jsonb orders a document's fields its own way).
 */
export function scalarFromStoredText(text: string): unknown {
  const first = text.charCodeAt(0);
  // A string, true, false or null is its JSON (a bare number is not canonical Extended JSON).
  if (first !== 123 /* { */) {
    const value = JSON.parse(text) as unknown;
    return typeof value === "number" || (value !== null && typeof value === "object") ? undefined : value;
  }
  // The most common key, an Int32, as `commonTypes` reads it (jsonb writes a space after the colon).
  const int = storedInt32.exec(text);
  if (int !== null) return Number(int[1]) || 0;
  if (!repliedAsStored(text)) return undefined;
  const { value } = fromStoredText(text);
  if (value === null || typeof value !== "object") return typeof value === "bigint" ? undefined : value;
  return value instanceof ObjectId || value instanceof Date ? value : undefined;
}

const storedInt32 = /^\{"\$numberInt": ?"(-?\d{1,10})"\}$/;

/** A value `commonTypes` leaves to the bson library's reader. */
const notCommon = new Error("not one of the common types");
const decimalInteger = /^-?\d{1,15}$/;
/** An Int64's text as the library reads one (no leading zero, no "-0"), within 2^53. */
const longText = /^(0|-?[1-9]\d{0,14})$/;
const objectIdHex = /^[0-9a-fA-F]{24}$/;
const decimalNumber = /^-?(\d+(\.\d+)?([eE][+-]?\d+)?|Infinity)$|^NaN$/;

/** The keys that make the bson library read an object (holding a value under them) as a BSON type. */
export const codecKeys: ReadonlySet<string> = new Set([
  "$oid",
  "$binary",
  "$uuid",
  "$symbol",
  "$numberInt",
  "$numberDecimal",
  "$numberDouble",
  "$numberLong",
  "$minKey",
  "$maxKey",
  "$regex",
  "$regularExpression",
  "$timestamp",
]);

/**
 * The keys that make the bson library read an object as a value rather than a document: its
 * codecs', a date, code, a DBRef, a DBPointer, undefined. Other `$` keys (a query's operators:
 * `$exists`, `$in`, …) are a document's fields.
 */
const typeKeys = new Set([...codecKeys, "$date", "$code", "$scope", "$ref", "$id", "$db", "$dbPointer", "$undefined"]);

/**
 * Extended JSON of the common types — ObjectId, Int32, Int64 within 2^53 (as the library reads them,
 * then `numbersToJs`), Double, Date, and relaxed numbers — read in place from what JSON.parse made:
 * a few times faster than the library's reader, which revives every value through a callback.
 * Documents whose `$` keys are no type's (a query's operators) are read here too. Anything else
 * (another wrapper, a type's key among others, a string the library reads its own way, a bare
 * integer it keeps as a Long) throws `notCommon`, and the whole text goes to the library
 * (test/data/ejson-text.test.ts compares the two on generated documents, queries and clients' values).
 */
function commonTypes(value: unknown): unknown {
  if (value === null || typeof value !== "object") {
    // A bare number: the library's Int32, Double or Int64, which `numbersToJs` makes this number
    // again, except an integer past 2^53 within Int64's range (a Long).
    if (
      typeof value === "number" &&
      Number.isInteger(value) &&
      !Number.isSafeInteger(value) &&
      Math.abs(value) <= 2 ** 63
    )
      throw notCommon;
    return value;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = commonTypes(value[i]);
    return value;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  const first = keys[0];
  if (first !== undefined && first.charCodeAt(0) === 36 /* $ */ && typeKeys.has(first)) {
    if (keys.length !== 1) throw notCommon;
    const inner = record[first];
    switch (first) {
      case "$oid":
        if (typeof inner !== "string" || !objectIdHex.test(inner)) throw notCommon;
        return ObjectId.createFromHexString(inner);
      case "$numberInt": {
        // (Past Int32's range the library wraps it around.)
        const n = typeof inner === "string" && decimalInteger.test(inner) ? Number(inner) : Number.NaN;
        if (!(n >= -(2 ** 31) && n < 2 ** 31)) throw notCommon;
        return n || 0;
      }
      case "$numberLong":
        if (typeof inner !== "string" || !longText.test(inner)) throw notCommon;
        return Number(inner);
      case "$numberDouble":
        if (typeof inner !== "string" || !decimalNumber.test(inner)) throw notCommon;
        return Number(inner);
      case "$date": {
        const ms = (inner as Record<string, unknown> | null)?.$numberLong;
        if (typeof ms !== "string" || !longText.test(ms) || Object.keys(inner as object).length !== 1) throw notCommon;
        return new Date(Number(ms));
      }
      default:
        throw notCommon;
    }
  }
  for (const key of keys) {
    if (key.charCodeAt(0) === 36 && typeKeys.has(key)) throw notCommon;
    record[key] = commonTypes(record[key]);
  }
  // A wide object's keys, listed once here rather than at every walk of it (wide-keys.ts).
  keepKeys(record, keys);
  return value;
}

const regexValueMark = "\u0001regularExpression";
const regexOperatorMark = "\u0001$regex";
const optionsOperatorMark = "\u0001$options";

/**
 * The bson library reads any object with a `$regex` key as a regular-expression value and drops
 * its other keys, so `{$regex: "^a", $nin: ["ab"]}` would lose its `$nin`, and it refuses options
 * MongoDB would answer with its own error. Before it reads them: a regular-expression value
 * (`{$regularExpression: {pattern, options}}`, or `{$regex: "…", $options: "…"}` alone) is marked to
 * become a BSONRegExp with its options as sent (the query engine checks them); a `$regex` among
 * other keys is a query operator, kept as `$regex` / `$options` keys.
 */
function markRegexes(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(markRegexes);
  if (node === null || typeof node !== "object") return node;
  const obj = node as Document;
  const spec = obj.$regularExpression;
  if (isDocument(spec) && typeof spec.pattern === "string" && typeof (spec.options ?? "") === "string")
    return { [regexValueMark]: [spec.pattern, spec.options ?? ""] };
  const keys = Object.keys(obj);
  if (obj.$regex !== undefined && obj.$regex !== null) {
    const options = obj.$options ?? "";
    if (
      typeof obj.$regex === "string" &&
      typeof options === "string" &&
      keys.every((k) => k === "$regex" || k === "$options")
    )
      return { [regexValueMark]: [obj.$regex, options] };
  }
  const out: Document = {};
  for (const key of keys) {
    const mark = key === "$regex" ? regexOperatorMark : key === "$options" ? optionsOperatorMark : key;
    out[mark] = markRegexes(obj[key]);
  }
  return out;
}

function regexValue(pattern: string, options: string): BSONRegExp {
  try {
    return new BSONRegExp(pattern, options);
  } catch {
    // Options or a pattern bson refuses: kept as sent, for the query engine's MongoDB error.
    const value = new BSONRegExp("", "");
    value.pattern = pattern;
    value.options = [...options].sort().join("");
    return value;
  }
}

function restoreRegexes(node: unknown): unknown {
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) node[i] = restoreRegexes(node[i]);
    return node;
  }
  if (node === null || typeof node !== "object" || !isPlain(node)) return node;
  const obj = node as Document;
  const mark = obj[regexValueMark];
  if (Array.isArray(mark)) return regexValue(mark[0] as string, mark[1] as string);
  const out: Document = {};
  for (const key of Object.keys(obj)) {
    const name = key === regexOperatorMark ? "$regex" : key === optionsOperatorMark ? "$options" : key;
    out[name] = restoreRegexes(obj[key]);
  }
  return out;
}

/** BSON-typed JS values to canonical Extended JSON text (what the service answers). */
export function toEJSONText(value: unknown): string {
  if (value === undefined) return '{"$undefined":true}';
  return canonicalEJSONText(value);
}

/**
 * Canonical Extended JSON as a JSON value (for replies that Fastify writes, and saved states): the
 * text this server writes, parsed — integers past 2^53 with their exact digits, where the library's
 * own tree has JavaScript's shortest (another Int64 read back: a saved state restored held another
 * value) and 2^63 as an Int64 past the range.
 */
export function toEJSON(value: unknown): unknown {
  if (value === undefined) return { $undefined: true };
  const text = toEJSONText(value);
  return text === undefined ? undefined : JSON.parse(text);
}

function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * A document with its `_id` first, as MongoDB writes every document (update_stage.cpp,
 * upsert_stage.cpp, insert's fixDocumentForInsert): the same object when it already is.
 */
export function idFirst(doc: Record<string, unknown>): Record<string, unknown> {
  if (!Object.hasOwn(doc, "_id") || keysOf(doc)[0] === "_id") return doc;
  const { _id, ...rest } = doc;
  return { _id, ...rest };
}

/**
 * MongoDB's refusal of an `_id` no document may have (its insert's and upsert's checks), or null.
 * (An undefined `_id`, which MongoDB refuses too, does not survive the arguments' Extended JSON.)
 */
export function idRefusal(doc: Record<string, unknown>): string | null {
  if (!Object.hasOwn(doc, "_id")) return null;
  const id = doc._id;
  if (Array.isArray(id)) return "can't use an array for _id";
  if (id instanceof BSONRegExp || id instanceof RegExp) return "can't use a regex for _id";
  const dollar = dollarFieldIn(id);
  return dollar === undefined
    ? null
    : `_id fields may not contain '$'-prefixed fields: ${dollar} is not valid for storage.`;
}

/**
 * The first `$`-prefixed field name in a document value, at any depth (MongoDB's
 * storageValidEmbedded, which an `_id` must pass: `{_id: {$ne: null}}` is no id a query can name
 * as itself). A DBRef's `$ref`/`$id`/`$db` reach here as the library's DBRef, not plain fields.
 */
function dollarFieldIn(value: unknown): string | undefined {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const node = pending.pop();
    if (Array.isArray(node)) for (const item of node) pending.push(item);
    else if (node !== null && typeof node === "object" && isPlain(node))
      for (const key of keysOf(node)) {
        if (key.startsWith("$")) return key;
        pending.push((node as Record<string, unknown>)[key]);
      }
  }
  return undefined;
}

/**
 * A deep copy of plain objects and arrays; BSON values are immutable and shared, Dates copied.
 * (structuredClone would turn ObjectIds into plain objects.)
 */
export function cloneValue<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(cloneValue) as T;
  if (value instanceof Date) return new Date(value.getTime()) as T;
  if (!isPlain(value)) return value;
  const out: Document = {};
  for (const k of keysOf(value)) out[k] = cloneValue((value as Document)[k]);
  return out as T;
}

/**
 * A stable key for an `_id` value (ObjectId, string, number, document…), as one flat string. (A
 * `+` or template of 13 characters or more makes a rope — and bson's hex of an ObjectId is one of
 * seven pieces —, so each key the in-memory store kept was ~8 heap objects: 800,000 more for the
 * benchmark's 100,000 notes, for every major collection to mark. `join` copies into one string.)
 */
export function idKey(id: unknown): string {
  if (id instanceof ObjectId) return ["o:", id.toHexString()].join("");
  if (typeof id === "string") return ["s:", id].join("");
  if (typeof id === "number") return `n:${id}`;
  // Numbers of the other types are keyed by value, as MongoDB's `_id` index compares them.
  if (id instanceof Long && !(id instanceof Timestamp)) return integerKey(BigInt(id.toString()));
  if (id instanceof Decimal128) return decimalKey(id.toString());
  return ["e:", toEJSONText(id)].join("");
}

/** An integer's key: a double's (`n:` and its JS text) where a double is exactly it, else `n:` and its digits. */
function integerKey(value: bigint): string {
  const double = Number(value);
  return Number.isFinite(double) && BigInt(double) === value ? `n:${double}` : `n:${value}`;
}

/**
 * A Decimal128's key: the key of the double or integer it is exactly (5.00 is 5, 1.5 is 1.5),
 * else `d:` and its digits and exponent, trailing zeros dropped (0.10 is 0.1, which no double is).
 */
function decimalKey(text: string): string {
  const parts = /^(-?)(\d+)(?:\.(\d+))?(?:E([+-]\d+))?$/.exec(text);
  // NaN and the infinities: a double's.
  if (parts === null) return `n:${Number(text)}`;
  const [, sign, whole, fraction = "", exponentText = "0"] = parts;
  let digits = BigInt(whole! + fraction);
  let exponent = Number(exponentText) - fraction.length;
  if (digits === 0n) return "n:0";
  while (digits % 10n === 0n) {
    digits /= 10n;
    exponent++;
  }
  const signed = sign === "-" ? -digits : digits;
  if (exponent >= 0) return integerKey(signed * 10n ** BigInt(exponent));
  // A fraction: the double nearest to it, if that double is exactly it (digits / 10^k = m · 2^e).
  const double = Number(`${signed}e${exponent}`);
  const [mantissa, power] = binaryParts(double);
  if (power < 0 && signed * 2n ** BigInt(-power) === mantissa * 10n ** BigInt(-exponent)) return `n:${double}`;
  return `d:${signed}e${exponent}`;
}

/** A finite double as m · 2^e, m an integer. */
function binaryParts(double: number): [bigint, number] {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, double);
  const high = view.getUint32(0);
  const biased = (high >>> 20) & 0x7ff;
  let mantissa = (BigInt(high & 0xfffff) << 32n) | BigInt(view.getUint32(4));
  if (biased !== 0) mantissa |= 1n << 52n;
  const power = (biased === 0 ? 1 : biased) - 1075;
  return [double < 0 ? -mantissa : mantissa, power];
}

/** A value as one string, equal for equal values of one type (compares `_id`s; messages show values with shell-text.ts). */
export function idRepr(id: unknown): string {
  if (id instanceof ObjectId) return `ObjectId('${id.toHexString()}')`;
  return JSON.stringify(toEJSON(id));
}

export function isDocument(value: unknown): value is Document {
  return value !== null && typeof value === "object" && !Array.isArray(value) && isPlain(value);
}

/** A change to one document, as change streams describe it. */
export interface ChangeEvent {
  database: string;
  collection: string;
  /**
   * A document's change, or a collection's end: `drop`, or `rename` (by `$out`, of its temporary
   * collection over the target, named by `to`), after which the streams of either collection end
   * (change-events.ts' `invalidates`).
   */
  operationType: "insert" | "update" | "replace" | "delete" | "drop" | "rename";
  /** The changed document's `_id` (a collection's own events have none). */
  documentKey?: { _id: unknown };
  /** A rename's new namespace (MongoDB's `to`). */
  to?: { db: string; coll: string };
  /**
   * A multi-document transaction's change: its number in its session (an Int64 in the event), and
   * the session's id.
   */
  txnNumber?: number;
  lsid?: { id: Binary; uid: Binary };
  fullDocument?: Document;
  updateDescription?: { updatedFields: Document; removedFields: string[]; truncatedArrays: unknown[] };
  /** The document before a delete (never sent; lets rules decide who may see the event). */
  before?: Document;
  /** The store's id of the event kept for the app's database triggers (never sent; DocumentStore.keepEvents). */
  durableId?: string;
  /**
   * When the store committed it (change-events.ts' `stampEvents`): its cluster time and resume
   * token, the same on every stream and trigger that sees it, and its wall time.
   */
  stamp?: ChangeStamp;
}

/** A committed change's cluster time (seconds and increment), wall time and resume token data. */
export interface ChangeStamp {
  t: number;
  i: number;
  wallTime: Date;
  token: string;
}
