/**
 * Values as MongoDB's server writes them into its error messages (BSON's `toString`): `5`,
 * `"text"`, `{ a: [ 1, 2 ] }`, `ObjectId('…')`. A JavaScript number is shown as the type it is
 * stored as: an integer as an int, any other as a double.
 */
import { isDocument } from "./documents.ts";
import { keysOf } from "./wide-keys.ts";

/** Past this many characters a message's value is cut (MongoDB's messages stay short too). */
const maxLength = 1_000;

function typeOf(value: object): string | undefined {
  return (value as { _bsontype?: string })._bsontype;
}

function text(value: unknown, depth: number): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") {
    if (Number.isInteger(value) && !Object.is(value, -0)) return String(value);
    if (Number.isNaN(value)) return "nan.0";
    if (!Number.isFinite(value)) return value > 0 ? "inf.0" : "-inf.0";
    return Object.is(value, -0) ? "-0.0" : String(value);
  }
  if (typeof value === "boolean") return String(value);
  if (value instanceof Date) return `new Date(${value.getTime()})`;
  if (value instanceof RegExp) return `/${value.source}/${value.flags}`;
  if (depth > 20) return "...";
  if (Array.isArray(value)) return value.length === 0 ? "[]" : `[ ${value.map((v) => text(v, depth + 1)).join(", ")} ]`;
  if (isDocument(value)) {
    const keys = keysOf(value);
    return keys.length === 0 ? "{}" : `{ ${keys.map((k) => `${k}: ${text(value[k], depth + 1)}`).join(", ")} }`;
  }
  const bsonType = typeOf(value as object);
  const shown = value as {
    toHexString?: () => string;
    toString(): string;
    t?: number;
    i?: number;
    pattern?: string;
    options?: string;
  };
  switch (bsonType) {
    case "ObjectId":
    case "ObjectID":
      return `ObjectId('${shown.toHexString!()}')`;
    case "Long":
      return shown.toString();
    case "Int32":
    case "Double":
      return String((value as { value: number }).value);
    case "Decimal128":
      return `NumberDecimal("${shown.toString()}")`;
    case "Timestamp": {
      const { t, i } = (value as { toExtendedJSON(): { $timestamp: { t: number; i: number } } }).toExtendedJSON()
        .$timestamp;
      return `Timestamp(${t}, ${i})`;
    }
    case "BSONRegExp":
      return `/${shown.pattern}/${shown.options}`;
    case "MinKey":
      return "MinKey";
    case "MaxKey":
      return "MaxKey";
    case "Binary": {
      const binary = value as { sub_type: number; toString(encoding: string): string };
      return `BinData(${binary.sub_type}, ${binary.toString("hex").toUpperCase()})`;
    }
    default:
      return String(value);
  }
}

/** `value` as MongoDB shows a value in a message. */
export function shellText(value: unknown): string {
  const out = text(value, 0);
  return out.length > maxLength ? `${out.slice(0, maxLength)}...` : out;
}

/**
 * `value` as MongoDB's `Value::toString` writes it into a message: like `shellText` without the
 * spaces inside brackets (`{a: 1, b: "x"}`, `[1, 2]`), a missing value as `MISSING`.
 */
export function valueText(value: unknown): string {
  if (value === undefined) return "MISSING";
  const compact = (v: unknown, depth: number): string => {
    if (depth > 20) return "...";
    if (Array.isArray(v)) return `[${v.map((e) => compact(e, depth + 1)).join(", ")}]`;
    if (isDocument(v))
      return `{${keysOf(v)
        .map((k) => `${k}: ${compact(v[k], depth + 1)}`)
        .join(", ")}}`;
    return text(v, depth);
  };
  const out = compact(value, 0);
  return out.length > maxLength ? `${out.slice(0, maxLength)}...` : out;
}

/**
 * A BSON element as MongoDB's messages show one (BSONElement::toString): `$limit: 1.5`, a string
 * quoted, a double without a point as `1e+30.0`.
 */
export function bsonElementText(name: string, value: unknown): string {
  const double = typeof value === "number" && (!Number.isInteger(value) || Math.abs(value) >= 2 ** 63);
  return `${name}: ${double ? niceDoubleText(value) : shellText(value)}`;
}

/** A field and its value as MongoDB shows an element in a message: `{a: 5}`. */
export function elementText(name: string, value: unknown): string {
  return `{${name}: ${shellText(value)}}`;
}

/** A number as C's `%g` writes it (six significant digits), as MongoDB's messages show doubles. */
export function gText(n: number, precision = 6): string {
  if (!Number.isFinite(n)) return Number.isNaN(n) ? "nan" : n > 0 ? "inf" : "-inf";
  if (n === 0) return Object.is(n, -0) ? "-0" : "0";
  const [mantissa, exp] = n.toExponential(precision - 1).split("e");
  const exponent = Number(exp);
  if (exponent < -4 || exponent >= precision) {
    const digits = mantissa!.replace(/\.?0+$/, "");
    return `${digits}e${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  return n
    .toFixed(precision - 1 - exponent)
    .replace(/(\.\d*?)0+$/, "$1")
    .replace(/\.$/, "");
}

/** A double as MongoDB's BSON element text writes it (`%.16g`, `.0` added when it shows no point: `1e+30.0`). */
export function niceDoubleText(n: number): string {
  const text = gText(n, 16);
  return /[.EN]/.test(text) ? text : `${text}.0`;
}
