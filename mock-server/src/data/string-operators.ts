/**
 * String and array expressions as MongoDB evaluates them, where mingo answered otherwise:
 * `$toUpper`/`$toLower`/`$strcasecmp` fold ASCII letters only (mingo: every letter, so "é" and "É"
 * compared equal) and take null as "" ; `$indexOfBytes` counts bytes (mingo: characters);
 * `$substrBytes` refuses a range that cuts a character; `$split` refuses an empty separator (mingo
 * split into characters); `$arrayElemAt` past either end is missing (mingo: null); `$size` of no
 * array and a `$switch` without a matching branch or default are refused (mingo: null);
 * `$arrayToObject` keeps a repeated key's last value; MongoDB's texts for each refusal.
 */
import { evalExpr } from "mingo/core";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { bsonTypeAlias } from "./bson-order.ts";
import { formatDateUtc, nullish, typeOf } from "./date-operators.ts";
import { type Document, isDocument } from "./documents.ts";
import { gText } from "./shell-text.ts";
import { truthy } from "./truth.ts";
import { keysOf } from "./wide-keys.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

/** A number of any BSON type (numeric-operators.ts' `isNumeric`, which this module cannot import). */
const isNumber = (value: unknown): boolean =>
  typeof value === "number" || typeOf(value) === "Long" || typeOf(value) === "Decimal128";

const evaluate = (obj: unknown, expr: unknown, options: unknown): unknown => evalExpr(obj, expr, options as never);

/** A value as MongoDB coerces it to a string (`$toUpper`, `$strcasecmp`, `$substrBytes`). */
function coerceToString(value: unknown): string {
  if (nullish(value)) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : gText(value);
  if (typeOf(value) === "Long" || typeOf(value) === "Decimal128") return String(value);
  if (value instanceof Date) return formatDateUtc(value.getTime());
  if (typeOf(value) === "Timestamp") {
    const { t, i } = (value as { toExtendedJSON(): { $timestamp: { t: number; i: number } } }).toExtendedJSON()
      .$timestamp;
    return `Timestamp(${t}, ${i})`;
  }
  throw errors.mongo(`can't convert from BSON type ${bsonTypeAlias(value)} to String`);
}

/** An operator's one argument, given alone or as an array of one. */
function single(obj: unknown, expr: unknown, options: unknown): unknown {
  return evaluate(obj, Array.isArray(expr) && expr.length === 1 ? expr[0] : expr, options);
}

function args(name: string, obj: unknown, expr: unknown, options: unknown, min: number, max = min): unknown[] {
  const list = Array.isArray(expr) ? expr : [expr];
  if (list.length < min || list.length > max)
    throw errors.mongo(
      min === max
        ? `Expression ${name} takes exactly ${min} arguments. ${list.length} were passed in.`
        : `Expression ${name} takes at least ${min} arguments, and at most ${max}, but ${list.length} were passed in.`,
    );
  return list.map((item) => evaluate(obj, item, options));
}

const asciiUpper = (text: string) => text.replace(/[a-z]+/g, (m) => m.toUpperCase());
const asciiLower = (text: string) => text.replace(/[A-Z]+/g, (m) => m.toLowerCase());

const toUpper: AnyFn = (obj, expr, options) => asciiUpper(coerceToString(single(obj, expr, options)));
const toLower: AnyFn = (obj, expr, options) => asciiLower(coerceToString(single(obj, expr, options)));

const strcasecmp: AnyFn = (obj, expr, options) => {
  const [a, b] = args("$strcasecmp", obj, expr, options, 2);
  const order = Buffer.compare(
    Buffer.from(asciiUpper(coerceToString(a)), "utf8"),
    Buffer.from(asciiUpper(coerceToString(b)), "utf8"),
  );
  return order < 0 ? -1 : order > 0 ? 1 : 0;
};

const split: AnyFn = (obj, expr, options) => {
  const [text, separator] = args("$split", obj, expr, options, 2);
  if (nullish(text) || nullish(separator)) return null;
  if (typeof text !== "string")
    throw errors.mongo(
      `$split requires an expression that evaluates to a string as a first argument, found: ${bsonTypeAlias(text)}`,
    );
  if (typeof separator !== "string")
    throw errors.mongo(
      `$split requires an expression that evaluates to a string as a second argument, found: ${bsonTypeAlias(separator)}`,
    );
  if (separator === "") throw errors.mongo("$split requires a non-empty separator");
  return text.split(separator);
};

/**
 * `$indexOfBytes` / `$indexOfCP`'s bounds: integral and non-negative (MongoDB's texts, with the
 * missing space of the first).
 */
export function checkBounds(name: string, start: unknown, end: unknown): void {
  for (const [bound, which] of [
    [start, "starting"],
    [end, "ending"],
  ] as const) {
    if (bound === undefined) continue;
    const n = typeof bound === "number" ? bound : isNumber(bound) ? Number(String(bound)) : Number.NaN;
    if (!Number.isInteger(n))
      throw errors.mongo(
        `${name}requires an integral ${which} index, found a value of type: ${bsonTypeAlias(bound)}, with value: ${
          typeof bound === "number" ? gText(bound) : String(bound)
        }`,
      );
    if (n < 0) throw errors.mongo(`${name} requires a nonnegative ${which} index, found: ${n}`);
  }
}

const indexOfBytes: AnyFn = (obj, expr, options) => {
  const [text, search, start, end] = args("$indexOfBytes", obj, expr, options, 2, 4);
  if (nullish(text)) return null;
  if (typeof text !== "string")
    throw errors.mongo(`$indexOfBytes requires a string as the first argument, found: ${bsonTypeAlias(text)}`);
  if (typeof search !== "string")
    throw errors.mongo(`$indexOfBytes requires a string as the second argument, found: ${bsonTypeAlias(search)}`);
  checkBounds("$indexOfBytes", start, end);
  const bytes = Buffer.from(text, "utf8");
  const from = start === undefined ? 0 : Number(String(start));
  const to = Math.min(end === undefined ? bytes.length : Number(String(end)), bytes.length);
  if (from > bytes.length || to < from) return -1;
  return bytes.subarray(0, to).indexOf(Buffer.from(search, "utf8"), from);
};

const continuation = (byte: number | undefined) => byte !== undefined && (byte & 0xc0) === 0x80;

const substrBytes: AnyFn = (obj, expr, options) => {
  const [value, start, length] = args("$substrBytes", obj, expr, options, 3);
  const bytes = Buffer.from(coerceToString(value), "utf8");
  if (!isNumber(start))
    throw errors.mongo(`$substrBytes:  starting index must be a numeric type (is BSON type ${bsonTypeAlias(start)})`);
  if (!isNumber(length))
    throw errors.mongo(`$substrBytes:  length must be a numeric type (is BSON type ${bsonTypeAlias(length)})`);
  const from = Math.trunc(Number(String(start)));
  const count = Math.trunc(Number(String(length)));
  if (from < 0) throw errors.mongo(`$substrBytes:  starting index must be non-negative (got: ${from})`);
  if (from >= bytes.length) return "";
  if (continuation(bytes[from]))
    throw errors.mongo("$substrBytes:  Invalid range, starting index is a UTF-8 continuation byte.");
  const to = count < 0 ? bytes.length : Math.min(from + count, bytes.length);
  if (to < bytes.length && continuation(bytes[to]))
    throw errors.mongo("$substrBytes:  Invalid range, ending index is in the middle of a UTF-8 character.");
  return bytes.subarray(from, to).toString("utf8");
};

/** A `$substrCP` index or length: a number, whole and within 32 bits (MongoDB's checks and texts). */
function codePointBound(value: unknown, what: "starting index" | "length"): number {
  if (!isNumber(value))
    throw errors.mongo(`$substrCP: ${what} must be a numeric type (is BSON type ${bsonTypeAlias(value)})`);
  const n = Number(String(value));
  if (!Number.isInteger(n) || n < -(2 ** 31) || n >= 2 ** 31)
    throw errors.mongo(
      `$substrCP: ${what} cannot be represented as a 32-bit integral value: ${typeof value === "number" ? gText(value) : String(value)}`,
    );
  return n;
}

/** `$substrCP`: code points of a string; a negative start or length is refused, as MongoDB does. */
const substrCP: AnyFn = (obj, expr, options) => {
  const [value, start, length] = args("$substrCP", obj, expr, options, 3);
  const from = codePointBound(start, "starting index");
  const count = codePointBound(length, "length");
  if (count < 0) throw errors.mongo("$substrCP: length must be a nonnegative integer.");
  if (from < 0) throw errors.mongo("$substrCP: the starting index must be nonnegative integer.");
  return [...coerceToString(value)].slice(from, from + count).join("");
};

const concat: AnyFn = (obj, expr, options) => {
  const values = (Array.isArray(expr) ? expr : [expr]).map((item) => evaluate(obj, item, options));
  let out = "";
  for (const value of values) {
    if (nullish(value)) return null;
    if (typeof value !== "string") throw errors.mongo(`$concat only supports strings, not ${bsonTypeAlias(value)}`);
    out += value;
  }
  return out;
};

/** An array's element by index (negative from the end); missing past either end. */
function elementAt(name: string, array: unknown, index: unknown): unknown {
  if (!Array.isArray(array))
    throw errors.mongo(`${name}'s first argument must be an array, but is ${bsonTypeAlias(array)}`);
  if (!isNumber(index))
    throw errors.mongo(`${name}'s second argument must be a numeric value, but is ${bsonTypeAlias(index)}`);
  const n = Number(String(index));
  if (!Number.isInteger(n) || n < -(2 ** 31) || n >= 2 ** 31)
    throw errors.mongo(
      `${name}'s second argument must be representable as a 32-bit integer: ${typeof index === "number" ? gText(index) : String(index)}`,
    );
  const at = n < 0 ? array.length + n : n;
  return at < 0 || at >= array.length ? undefined : array[at];
}

const arrayElemAt: AnyFn = (obj, expr, options) => {
  const [array, index] = args("$arrayElemAt", obj, expr, options, 2);
  if (nullish(array) || nullish(index)) return null;
  return elementAt("$arrayElemAt", array, index);
};

const size: AnyFn = (obj, expr, options) => {
  const array = single(obj, expr, options);
  if (!Array.isArray(array))
    throw errors.mongo(`The argument to $size must be an array, but was of type: ${bsonTypeAlias(array)}`);
  return array.length;
};

const switchOperator: AnyFn = (obj, expr, options) => {
  if (!isDocument(expr)) throw errors.mongo(`$switch requires an object as an argument, found: ${bsonTypeAlias(expr)}`);
  for (const key of keysOf(expr))
    if (key !== "branches" && key !== "default") throw errors.mongo(`$switch found an unknown argument: ${key}`);
  const branches = expr.branches;
  if (!Array.isArray(branches))
    throw errors.mongo(`$switch expected an array for 'branches', found: ${bsonTypeAlias(branches)}`);
  if (branches.length === 0) throw errors.mongo("$switch requires at least one branch.");
  for (const branch of branches) {
    if (!isDocument(branch))
      throw errors.mongo(`$switch expected each branch to be an object, found: ${bsonTypeAlias(branch)}`);
    for (const key of keysOf(branch))
      if (key !== "case" && key !== "then") throw errors.mongo(`$switch found an unknown argument to a branch: ${key}`);
    if (!("case" in branch)) throw errors.mongo("$switch requires each branch have a 'case' expression");
    if (!("then" in branch)) throw errors.mongo("$switch requires each branch have a 'then' expression.");
  }
  for (const branch of branches as Document[])
    if (truthy(evaluate(obj, branch.case, options))) return evaluate(obj, branch.then, options);
  if (!("default" in expr))
    throw errors.mongo("$switch could not find a matching branch for an input, and no default was specified.");
  return evaluate(obj, expr.default, options);
};

const arrayToObject: AnyFn = (obj, expr, options) => {
  const input = single(obj, expr, options);
  if (nullish(input)) return null;
  if (!Array.isArray(input))
    throw errors.mongo(`$arrayToObject requires an array input, found: ${bsonTypeAlias(input)}`);
  const out: Document = {};
  if (input.length === 0) return out;
  const pairs = Array.isArray(input[0]);
  if (!pairs && !isDocument(input[0]))
    throw errors.mongo(`Unrecognised input type format for $arrayToObject: ${bsonTypeAlias(input[0])}`);
  for (const element of input) {
    let key: unknown;
    let value: unknown;
    if (pairs) {
      if (!Array.isArray(element))
        throw errors.mongo(
          `$arrayToObject requires a consistent input format. Elements mustall be arrays or all be objects. Array was detected, now found: ${bsonTypeAlias(element)}`,
        );
      if (element.length !== 2)
        throw errors.mongo(`$arrayToObject requires an array of size 2 arrays,found array of size: ${element.length}`);
      [key, value] = element;
      if (typeof key !== "string")
        throw errors.mongo(
          `$arrayToObject requires an array of key-value pairs, where the key must be of type string. Found key type: ${bsonTypeAlias(key)}`,
        );
    } else {
      if (!isDocument(element))
        throw errors.mongo(
          `$arrayToObject requires a consistent input format. Elements mustall be arrays or all be objects. Object was detected, now found: ${bsonTypeAlias(element)}`,
        );
      const keys = keysOf(element);
      if (keys.length !== 2)
        throw errors.mongo(
          `$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number of keys:${keys.length}`,
        );
      if (!("k" in element && "v" in element))
        throw errors.mongo(
          `$arrayToObject requires an object with keys 'k' and 'v'. Missing either or both keys from: ${JSON.stringify(element)}`,
        );
      key = element.k;
      value = element.v;
      if (typeof key !== "string")
        throw errors.mongo(
          `$arrayToObject requires an object with keys 'k' and 'v', where the value of 'k' must be of type string. Found type: ${bsonTypeAlias(key)}`,
        );
    }
    if ((key as string).includes("\u0000")) throw errors.mongo("Key field cannot contain an embedded null byte");
    out[key as string] = value;
  }
  return out;
};

export const stringExpressionOperators: Record<string, AnyFn> = {
  $toUpper: toUpper,
  $toLower: toLower,
  $strcasecmp: strcasecmp,
  $split: split,
  $indexOfBytes: indexOfBytes,
  $substrBytes: substrBytes,
  $substrCP: substrCP,
  $substr: substrBytes,
  $concat: concat,
  $arrayElemAt: arrayElemAt,
  $size: size,
  $switch: switchOperator,
  $arrayToObject: arrayToObject,
};
