/**
 * Documents as the emulator keeps them: JS values with BSON types (ObjectId, Date, Long, Binary,
 * Decimal128…), read from and written as Extended JSON. Numbers are kept as JS numbers (EJSON's
 * relaxed reading), so MongoDB query semantics (mingo) compare them naturally.
 */
import { Double, EJSON, Int32, Long, ObjectId } from "bson";

export type Document = Record<string, unknown>;

/** Int32 and Double as JS numbers; Int64 too when it fits (2^53), else kept as a Long. */
function numbersToJs(value: unknown): unknown {
  if (value instanceof Int32 || value instanceof Double) return value.valueOf();
  if (value instanceof Long)
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
 * stays an exact Long.
 */
export function fromEJSON(value: unknown): unknown {
  return numbersToJs(EJSON.deserialize(value as Document, { relaxed: false }));
}

/** BSON-typed JS values to canonical Extended JSON text (what the service answers). */
export function toEJSONText(value: unknown): string {
  if (value === undefined) return '{"$undefined":true}';
  return EJSON.stringify(value as Document, { relaxed: false });
}

export function toEJSON(value: unknown): unknown {
  if (value === undefined) return { $undefined: true };
  return EJSON.serialize(value as Document, { relaxed: false });
}

function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
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
  for (const [k, v] of Object.entries(value)) out[k] = cloneValue(v);
  return out as T;
}

/** A stable key for an `_id` value (ObjectId, string, number, document…). */
export function idKey(id: unknown): string {
  if (id instanceof ObjectId) return `o:${id.toHexString()}`;
  if (typeof id === "string") return `s:${id}`;
  if (typeof id === "number") return `n:${id}`;
  return `e:${toEJSONText(id)}`;
}

/** How MongoDB shows an `_id` in a duplicate-key message. */
export function idRepr(id: unknown): string {
  if (id instanceof ObjectId) return `ObjectId('${id.toHexString()}')`;
  return JSON.stringify(toEJSON(id));
}

export function isDocument(value: unknown): value is Document {
  return value !== null && typeof value === "object" && !Array.isArray(value) && isPlain(value);
}
