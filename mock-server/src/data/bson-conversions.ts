/**
 * `$convert` and its shorthands (`$toString`, `$toDouble`, `$toInt`, `$toLong`, `$toDecimal`,
 * `$toObjectId`, `$toDate`, `$toBool`) as MongoDB 8.0's ExpressionConvert converts (decisions
 * 0040 and 0047): its table of which type converts to which, its parsing of numeric strings
 * (NumberParser: base 10 for integers, `strtod` for doubles, no whitespace, no hexadecimal),
 * its narrowing checks and its texts, `onError` catching conversion failures only and `onNull`
 * taking null and missing input. mingo's answered otherwise: `$toInt: "-0"` was -0.0 and
 * `$toDouble: " 5"` was 5 (MongoDB: 0, and refused), `$toInt` of a date was its milliseconds
 * (MongoDB: no such conversion), `$toString: 1234.5678` kept every digit (MongoDB: "1234.57"),
 * `$convert` with `to: null` was refused (MongoDB: null), and every refusal was in mingo's words.
 */
import { type Binary, ObjectId, type Timestamp } from "bson";
import { evalExpr } from "mingo/core";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { bsonTypeAlias, typeAliases, typeNumbers } from "./bson-order.ts";
import { dateOfString, formatDateUtc } from "./date-operators.ts";
import {
  type Dec,
  fromDecimal128,
  fromNumber,
  isZero,
  parseDecimal,
  toDecimal128,
  toDouble,
  truncatedInteger,
} from "./decimal.ts";
import { isDocument } from "./documents.ts";
import { bigOf, decOf, doubleOf, fromBigInt, int64Max, int64Min, isDecimal, isLong } from "./numeric-operators.ts";
import { gText } from "./shell-text.ts";
import { keysOf } from "./wide-keys.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

/** A conversion that failed (MongoDB's ConversionFailure): the one kind `onError` catches. */
class ConversionError extends Error {}

const failure = (message: string) => new ConversionError(message);
const suffix = "in $convert with no onError value";
const unsupported = (value: unknown, target: string) =>
  failure(`Unsupported conversion from ${bsonTypeAlias(value)} to ${target} ${suffix}`);
const overflow = (shown: string) => failure(`Conversion would overflow target type ${suffix}: ${shown}`);

const int32Min = -(2n ** 31n);
const int32Max = 2n ** 31n - 1n;

// ---------------------------------------------------------------------------------------------
// Targets

/** The type a `to` names, as MongoDB's computeTargetType reads it (its refusals are no conversion failures). */
function targetOf(to: unknown): string {
  const type = isDocument(to) ? to.type : to;
  if (typeof type === "string") {
    if (type === "missing") return type;
    if (!(type in typeNumbers) || type === "number") throw errors.mongo(`Unknown type name: ${type}`);
    return type;
  }
  if (typeof type === "number" || isLong(type) || isDecimal(type)) {
    const n = doubleOf(type);
    if (!Number.isInteger(n)) throw errors.mongo("In $convert, numeric 'to' argument is not an integer");
    if (n === 0) return "missing";
    const name = typeAliases.get(n);
    if (name === undefined)
      throw errors.mongo(`In $convert, numeric value for 'to' does not correspond to a BSON type: ${n}`);
    return name;
  }
  throw errors.mongo(`$convert's 'to' argument must be a string or number, but is ${bsonTypeAlias(type)}`);
}

// ---------------------------------------------------------------------------------------------
// Strings to numbers (MongoDB's NumberParser)

function checkHexadecimal(text: string): void {
  if (text.startsWith("0x")) throw failure(`Illegal hexadecimal input ${suffix}: ${text}`);
}

const parseFailure = (text: string, reason: string) => failure(`Failed to parse number '${text}' ${suffix}: ${reason}`);

/** Base 10, one leading sign, nothing else (`_parseNumber` of an integer). */
function parseInteger(text: string, min: bigint, max: bigint): bigint {
  checkHexadecimal(text);
  const sign = text[0] === "-" || text[0] === "+" ? text[0] : "";
  const digits = text.slice(sign.length);
  if (digits === "") throw parseFailure(text, "No digits");
  if (!/^[0-9]+$/.test(digits)) throw parseFailure(text, "Did not consume whole string.");
  const magnitude = BigInt(digits);
  const value = sign === "-" ? -magnitude : magnitude;
  if (magnitude > 2n ** 64n - 1n || value < min || value > max) throw parseFailure(text, "Overflow");
  return value;
}

/** What C's `strtod` reads at the start of a string (its length; 0 for nothing). */
const strtodPrefix =
  /^[+-]?(?:inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)/i;

function strtodValue(token: string): number {
  const lower = token.toLowerCase();
  const negative = lower.startsWith("-");
  const unsigned = lower.replace(/^[+-]/, "");
  if (unsigned.startsWith("inf")) return negative ? -Infinity : Infinity;
  if (unsigned.startsWith("nan")) return Number.NaN;
  if (unsigned.startsWith("0x")) {
    const [mantissa, exponent = "0"] = unsigned.slice(2).split("p");
    const [whole = "", fraction = ""] = mantissa!.split(".");
    const value =
      (Number.parseInt(whole || "0", 16) + (fraction ? Number.parseInt(fraction, 16) / 16 ** fraction.length : 0)) *
      2 ** Number(exponent);
    return negative ? -value : value;
  }
  return Number(token);
}

/** `_parseNumber` of a double: `strtod`, no leading whitespace, the whole string, in range. */
function parseDouble(text: string): number {
  checkHexadecimal(text);
  if (text === "") throw parseFailure(text, "Empty string");
  if (/^[ \t\n\v\f\r]/.test(text)) throw parseFailure(text, "Leading whitespace");
  const match = strtodPrefix.exec(text);
  if (!match) throw parseFailure(text, "Did not consume any digits");
  const value = strtodValue(match[0]);
  const digits = match[0].replace(/^[+-]/, "");
  const zero = /^(?:0x)?[0.]*(?:[eEpP].*)?$/i.test(digits);
  if (!Number.isNaN(value) && !/inf/i.test(digits) && (!Number.isFinite(value) || (value === 0 && !zero)))
    throw parseFailure(text, "Out of range");
  if (value !== 0 && Math.abs(value) < 2 ** -1022 && Number.isFinite(value)) throw parseFailure(text, "Out of range");
  if (match[0].length < text.length) throw parseFailure(text, "Did not consume whole string.");
  return value;
}

const decimalForm = /^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|nan|inf|infinity)$/i;

/** A decimal string as Decimal128 reads one (34 digits, the rest cut off). */
function parseDecimalText(text: string): Dec {
  checkHexadecimal(text);
  if (text === "") throw parseFailure(text, "Empty string");
  if (!decimalForm.test(text)) throw parseFailure(text, "Failed to parse string to decimal");
  const parsed = parseDecimal(text);
  if (parsed === null) throw parseFailure(text, "Failed to parse string to decimal");
  if (parsed.kind === "infinite" && !/inf/i.test(text))
    throw parseFailure(text, "Conversion from string to decimal would overflow");
  return parsed;
}

// ---------------------------------------------------------------------------------------------
// Numbers to integers

type Width = "int" | "long";

const bounds = (width: Width): [bigint, bigint] => (width === "int" ? [int32Min, int32Max] : [int64Min, int64Max]);

/** A double narrowed to an int or a long: NaN and infinities refused, the range checked before truncating. */
function fromDouble(value: number, width: Width): bigint {
  if (Number.isNaN(value)) throw failure(`Attempt to convert NaN value to integer type ${suffix}`);
  if (!Number.isFinite(value)) throw failure(`Attempt to convert infinity value to integer type ${suffix}`);
  const inRange =
    width === "int" ? value >= -(2 ** 31) && value <= 2 ** 31 - 1 : value >= -(2 ** 63) && value < 2 ** 63;
  if (!inRange) throw overflow(gText(value));
  return BigInt(Math.trunc(value));
}

/** A Decimal128 narrowed toward zero. */
function fromDecimal(value: unknown, width: Width): bigint {
  const dec = fromDecimal128(value as never);
  if (dec.kind === "nan") throw failure(`Attempt to convert NaN value to integer type ${suffix}`);
  if (dec.kind === "infinite") throw failure(`Attempt to convert infinity value to integer type ${suffix}`);
  const whole = truncatedInteger(dec);
  const [low, high] = bounds(width);
  if (whole === null || whole < low || whole > high) throw overflow(String(value));
  return whole;
}

/** A number as an int or a long (MongoDB's rules by the input's type). */
function toInteger(value: unknown, width: Width): bigint {
  if (isDecimal(value)) return fromDecimal(value, width);
  if (
    isLong(value) ||
    (typeof value === "number" && Number.isInteger(value) && value >= -(2 ** 63) && value < 2 ** 63)
  ) {
    const big = bigOf(value);
    const [low, high] = bounds(width);
    // MongoDB writes no value after the colon here.
    if (big < low || big > high) throw overflow("");
    return big;
  }
  return fromDouble(value as number, width);
}

// ---------------------------------------------------------------------------------------------
// The conversion table

const isObjectId = (value: unknown): value is ObjectId =>
  (value as { _bsontype?: unknown } | null)?._bsontype === "ObjectId";
const isTimestamp = (value: unknown): value is Timestamp =>
  (value as { _bsontype?: unknown } | null)?._bsontype === "Timestamp";
const isBinary = (value: unknown): value is Binary => (value as { _bsontype?: unknown } | null)?._bsontype === "Binary";

/** A double as MongoDB's `$toString` writes one (C's `%g`; "Infinity", "NaN", "-0"). */
function doubleString(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "Infinity" : "-Infinity";
  if (Object.is(value, -0)) return "-0";
  return gText(value);
}

/** BinData as text in a format (`auto`: a UUID's text for subtype 4 of 16 bytes, else base64). */
function binaryString(value: Binary, format: string): string {
  const bytes = Buffer.from(value.buffer);
  const uuid = () => {
    if (value.sub_type !== 4 || bytes.length !== 16)
      throw failure(
        `Failed to convert 'BinData(${value.sub_type}, "${bytes.toString("hex").toUpperCase()}")' to string ${suffix}: BinData does not represent a valid UUID`,
      );
    const hex = bytes.toString("hex");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  };
  switch (format) {
    case "auto":
      return value.sub_type === 4 && bytes.length === 16 ? uuid() : bytes.toString("base64");
    case "base64":
      return bytes.toString("base64");
    case "base64url":
      return bytes.toString("base64url");
    case "hex":
      return bytes.toString("hex").toUpperCase();
    case "uuid":
      return uuid();
    default: {
      const text = bytes.toString("utf8");
      if (!Buffer.from(text, "utf8").equals(bytes))
        throw failure(
          `Failed to convert 'BinData(${value.sub_type}, "${bytes.toString("hex").toUpperCase()}")' to string ${suffix}: BinData does not represent a valid UTF-8 string`,
        );
      return text;
    }
  }
}

/** A date's milliseconds as MongoDB writes the date (years 0–9999 only). */
function dateString(value: Date): string {
  const year = value.getUTCFullYear();
  if (year < 0 || year > 9999)
    throw errors.mongo(
      `Could not convert date to string: date component was outside the supported range of 0-9999: ${year}`,
    );
  return formatDateUtc(value.getTime());
}

function convert(value: unknown, target: string, format: string | undefined): unknown {
  const inputType = bsonTypeAlias(value);
  switch (target) {
    case "double":
      if (inputType === "double" || inputType === "int" || inputType === "long") return doubleOf(value);
      if (inputType === "decimal") {
        const dec = fromDecimal128(value as never);
        const x = toDouble(dec);
        if (dec.kind === "finite" && (!Number.isFinite(x) || (x === 0 && !isZero(dec)))) throw overflow(String(value));
        return x;
      }
      if (typeof value === "boolean") return value ? 1 : 0;
      if (value instanceof Date) return value.getTime();
      if (typeof value === "string") return parseDouble(value);
      break;
    case "string":
      if (typeof value === "string") return value;
      if (inputType === "double") return doubleString(value as number);
      if (inputType === "int" || inputType === "long") return String(bigOf(value));
      if (inputType === "decimal") return String(value);
      if (typeof value === "boolean") return String(value);
      if (value instanceof Date) return dateString(value);
      if (isObjectId(value)) return value.toHexString();
      if (isBinary(value)) {
        if (format === undefined)
          throw errors.mongo("Format must be speficied when converting from 'binData' to 'string'");
        return binaryString(value, format);
      }
      break;
    case "bool":
      if (typeof value === "boolean") return value;
      if (inputType === "decimal") {
        const dec = fromDecimal128(value as never);
        return dec.kind !== "finite" || !isZero(dec);
      }
      if (typeof value === "number") return value !== 0;
      if (isLong(value)) return bigOf(value) !== 0n;
      // Every other value (a string, "" included, a date, a document…) is true.
      return true;
    case "date":
      if (value instanceof Date) return value;
      if (inputType === "long") return new Date(Number(bigOf(value)));
      if (inputType === "double") return new Date(Number(fromDouble(value as number, "long")));
      if (inputType === "decimal") return new Date(Number(fromDecimal(value, "long")));
      if (typeof value === "string") {
        const ms = dateOfString(value);
        if (typeof ms === "string") throw failure(ms);
        return new Date(ms);
      }
      if (isObjectId(value)) return value.getTimestamp();
      if (isTimestamp(value)) return new Date(value.t * 1000);
      break;
    case "int":
    case "long":
      if (typeof value === "boolean") return value ? 1 : 0;
      if (inputType === "int" || inputType === "long" || inputType === "double" || inputType === "decimal")
        return fromBigInt(toInteger(value, target));
      if (typeof value === "string") {
        const [low, high] = bounds(target);
        return fromBigInt(parseInteger(value, low, high));
      }
      if (target === "long" && value instanceof Date) return value.getTime();
      break;
    case "decimal":
      if (inputType === "decimal") return value;
      if (inputType === "int" || inputType === "long" || inputType === "double") return toDecimal128(decOf(value));
      if (typeof value === "boolean") return toDecimal128(fromNumber(value ? 1 : 0));
      if (value instanceof Date) return toDecimal128(fromNumber(value.getTime()));
      if (typeof value === "string") return toDecimal128(parseDecimalText(value));
      break;
    case "objectId":
      if (isObjectId(value)) return value;
      if (typeof value === "string") {
        const bad = /[^0-9a-fA-F]/.exec(value);
        if (Buffer.byteLength(value) !== 24)
          throw failure(
            `Failed to parse objectId '${value}' ${suffix}: Invalid string length for parsing to OID, expected 24 but found ${Buffer.byteLength(value)}`,
          );
        if (bad)
          throw failure(
            `Failed to parse objectId '${value}' ${suffix}: Invalid character found in hex string: ${bad[0]}`,
          );
        return new ObjectId(value.toLowerCase());
      }
      break;
  }
  throw unsupported(value, target);
}

/** A conversion's result, or its failure as MongoDB's refusal. */
function converted(value: unknown, target: string, format?: string): unknown {
  try {
    return convert(value, target, format);
  } catch (error) {
    if (error instanceof ConversionError) throw errors.mongo(error.message);
    throw error;
  }
}

const formats = new Set(["auto", "base64", "base64url", "hex", "utf8", "uuid"]);

const convertExpression: AnyFn = (obj, expr, options) => {
  if (!isDocument(expr))
    throw errors.mongo(`$convert expects an object of named arguments but found: ${bsonTypeAlias(expr)}`);
  for (const key of keysOf(expr))
    if (!["input", "to", "onError", "onNull", "format"].includes(key))
      throw errors.mongo(`$convert found an unknown argument: ${key}`);
  if (!("input" in expr)) throw errors.mongo("Missing 'input' parameter to $convert");
  if (!("to" in expr)) throw errors.mongo("Missing 'to' parameter to $convert");
  const evaluate = (e: unknown) => evalExpr(obj, e, options as never) as unknown;
  const to = evaluate(expr.to);
  const input = evaluate(expr.input);
  const target = to === null || to === undefined ? null : targetOf(to);
  if (input === null || input === undefined) return "onNull" in expr ? evaluate(expr.onNull) : null;
  if (target === null) return null;
  let format: string | undefined;
  if ("format" in expr) {
    const given = evaluate(expr.format);
    if (typeof given !== "string")
      throw errors.mongo(
        `$convert requires that 'format' be a string, found: ${bsonTypeAlias(given)} with value ${String(given)}`,
      );
    if (!formats.has(given)) throw errors.mongo(`Invalid 'format' argument for $convert: ${given}`);
    format = given;
  }
  try {
    return convert(input, target, format);
  } catch (error) {
    if (!(error instanceof ConversionError)) throw error;
    if (!("onError" in expr)) throw errors.mongo(error.message);
    return evaluate(expr.onError);
  }
};

/** `$toX`: `$convert` to one type without `onError` or `onNull` (`$toString` reads BinData in format `auto`). */
function conversion(name: string, target: string): AnyFn {
  return (obj, expr, options) => {
    if (Array.isArray(expr) && expr.length !== 1)
      throw errors.mongo(`${name} requires a single argument, got ${expr.length}`);
    const value = evalExpr(obj, Array.isArray(expr) ? expr[0] : expr, options as never) as unknown;
    if (value === null || value === undefined) return null;
    return converted(value, target, target === "string" ? "auto" : undefined);
  };
}

export const conversionOperators: Record<string, AnyFn> = {
  $toString: conversion("$toString", "string"),
  $toDouble: conversion("$toDouble", "double"),
  $toInt: conversion("$toInt", "int"),
  $toLong: conversion("$toLong", "long"),
  $toDecimal: conversion("$toDecimal", "decimal"),
  $toObjectId: conversion("$toObjectId", "objectId"),
  $toDate: conversion("$toDate", "date"),
  $toBool: conversion("$toBool", "bool"),
  $convert: convertExpression,
};
