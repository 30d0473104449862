/**
 * Arithmetic of MongoDB's numbers beyond JavaScript's: Decimal128 (money) and Int64 values past
 * 2^53 (kept as Long). mingo knows only JavaScript numbers: `$sum` of Decimal128 prices left them
 * out, `$add` refused them, and `$inc`/`$mul` of a Decimal128 field changed nothing. Here, as
 * MongoDB types its results: any Decimal128 operand makes a Decimal128 (decimal.ts), integers stay
 * exact 64-bit integers (past 64 bits, a double), anything else is a double. Values of
 * JavaScript's types alone go to mingo's operators as before. (Conversions: bson-conversions.ts.)
 */
import { Long } from "bson";
import { evalExpr } from "mingo/core";
import * as accumulatorOperators from "mingo/operators/accumulator";
import * as expressionOperators from "mingo/operators/expression";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import type { Outcome } from "./bson-operators.ts";
import { bsonTypeAlias, bsonTypeNumber } from "./bson-order.ts";
import {
  add,
  type Dec,
  divide,
  fromDecimal128,
  fromDoubleExact,
  fromNumber,
  isZero,
  multiply,
  negate,
  quantize,
  type RoundingMode,
  remainder,
  subtract,
  toDecimal128,
  toDouble,
  truncatedInteger,
} from "./decimal.ts";
import type { Document } from "./documents.ts";
import { gText, shellText } from "./shell-text.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

const mingoExpression = expressionOperators as unknown as Record<string, AnyFn>;
const _mingoAccumulator = accumulatorOperators as unknown as Record<string, AnyFn>;

const bsonType = (value: unknown): unknown =>
  value !== null && typeof value === "object" ? (value as { _bsontype?: unknown })._bsontype : undefined;
export const isDecimal = (value: unknown): boolean => bsonType(value) === "Decimal128";
export const isLong = (value: unknown): value is Long => bsonType(value) === "Long";
/** A number mingo does not know: a Decimal128 or a Long. */
export const isBsonNumber = (value: unknown): boolean => isDecimal(value) || isLong(value);
export const isNumeric = (value: unknown): boolean => typeof value === "number" || isBsonNumber(value);

export const int64Min = -(2n ** 63n);
export const int64Max = 2n ** 63n - 1n;

/** A 64-bit integer result as documents hold one: a number while exact, else a Long; past 64 bits, a double. */
export function fromBigInt(value: bigint): number | Long {
  if (value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(value);
  if (value >= int64Min && value <= int64Max) return Long.fromBigInt(value);
  return Number(value);
}

export const bigOf = (value: unknown): bigint => (isLong(value) ? BigInt(String(value)) : BigInt(value as number));
export const decOf = (value: unknown): Dec =>
  isDecimal(value) ? fromDecimal128(value as never) : fromNumber(isLong(value) ? bigOf(value) : (value as number));
export const doubleOf = (value: unknown): number =>
  isDecimal(value)
    ? toDouble(fromDecimal128(value as never))
    : isLong(value)
      ? Number(bigOf(value))
      : (value as number);
/**
 * An int or a long as documents hold them (a number's type is the one it is written back as:
 * 2^63, past Int64's range, is a double).
 */
export const isInteger = (value: unknown): boolean =>
  isLong(value) || (Number.isInteger(value) && (value as number) >= -(2 ** 63) && (value as number) < 2 ** 63);

type Combine = "add" | "multiply";

/** The sum or product of numbers, typed as MongoDB types it. */
function combine(values: unknown[], how: Combine): unknown {
  if (values.some(isDecimal)) {
    let total: Dec = fromNumber(how === "add" ? 0 : 1);
    for (const value of values) total = how === "add" ? add(total, decOf(value)) : multiply(total, decOf(value));
    return toDecimal128(total);
  }
  if (values.every(isInteger)) {
    // Exact while within 64 bits; past them MongoDB's result is a double, and so is the rest of
    // the fold (a long list of large factors never grows a huge integer).
    let total = how === "add" ? 0n : 1n;
    for (let i = 0; i < values.length; i++) {
      total = how === "add" ? total + bigOf(values[i]) : total * bigOf(values[i]);
      if (total < int64Min || total > int64Max) {
        let rest = Number(total);
        for (const value of values.slice(i + 1)) rest = how === "add" ? rest + doubleOf(value) : rest * doubleOf(value);
        return rest;
      }
    }
    return fromBigInt(total);
  }

  let total = how === "add" ? 0 : 1;
  for (const value of values) total = how === "add" ? total + doubleOf(value) : total * doubleOf(value);
  return total;
}

/** Each argument as a literal, for mingo's operator to take as evaluated. */
const literals = (values: unknown[]): unknown[] => values.map((value) => ({ $literal: value }));

export function argumentsOf(name: string, obj: unknown, expr: unknown, options: unknown, count?: number): unknown[] {
  const values = evalExpr(obj, expr, options as never) as unknown;
  const list = Array.isArray(expr) ? (values as unknown[]) : [values];
  if (count !== undefined && list.length !== count)
    throw errors.mongo(`Expression ${name} takes exactly ${count} arguments. ${list.length} were passed in.`);
  return list;
}

// ---------------------------------------------------------------------------------------------
// Arithmetic expressions

/** `$add` / `$multiply`: with a date (`$add`, `dateSum`), or numbers of JavaScript's types alone, mingo's. */
function nAry(name: "$add" | "$multiply", how: Combine): AnyFn {
  return (obj, expr, options) => {
    const values = argumentsOf(name, obj, expr, options);
    if (name === "$add") {
      // Left to right, as MongoDB adds: a null or missing value answers null, a value of another
      // type or a second date is refused.
      let dates = 0;
      for (const value of values) {
        if (value === null || value === undefined) return null;
        if (value instanceof Date) {
          if (++dates > 1) throw errors.mongo("only one date allowed in an $add expression");
        } else if (!isNumeric(value))
          throw errors.mongo(`$add only supports numeric or date types, not ${bsonTypeAlias(value)}`);
      }
      if (dates === 1) return dateSum(values);
    }
    if (!values.some(isBsonNumber)) return mingoExpression[name]!(obj, literals(values), options);
    if (values.some((value) => value === null || value === undefined)) return null;
    const other = values.find((value) => !isNumeric(value));
    if (other !== undefined)
      throw errors.mongo(
        `${name} only supports numeric${name === "$add" ? " or date" : ""} types, not ${bsonTypeAlias(other)}`,
      );
    return combine(values, how);
  };
}

/**
 * A number as the whole milliseconds MongoDB adds to a date: a double rounded half away from zero
 * (`llround`), a Decimal128 half to even; a NaN, an infinity or a value past 64 bits is MongoDB's
 * "date overflow".
 */
function dateMilliseconds(value: unknown): bigint {
  if (isLong(value)) return bigOf(value);
  if (isDecimal(value)) {
    const whole = truncatedInteger(quantize(decOf(value), 0, "halfEven"));
    if (whole === null || whole < int64Min || whole > int64Max) throw errors.mongo("date overflow");
    return whole;
  }
  const n = value as number;
  // (2^63 itself is out: it is the double that int64's largest value rounds to.)
  if (!(n >= -(2 ** 63) && n < 2 ** 63)) throw errors.mongo("date overflow");
  return BigInt(n < 0 ? -Math.round(-n) : Math.round(n));
}

/**
 * A date moved by `ms` (its milliseconds, `ms` added exactly): MongoDB's "date overflow" past
 * 64 bits, and past the ±8.64e15 ms a JavaScript date holds (MongoDB's dates reach further).
 */
function dateAt(ms: bigint): Date {
  if (ms < -8_640_000_000_000_000n || ms > 8_640_000_000_000_000n) throw errors.mongo("date overflow");
  return new Date(Number(ms));
}

/**
 * `$add` of a date and numbers, as MongoDB 8.0 adds them (`AddState`): the numbers before the date
 * summed as their types add, that sum and each number after the date rounded to whole
 * milliseconds and added exactly, as 64-bit integers (so Int64 amounts past 2^53 keep every digit).
 */
function dateSum(values: unknown[]): Date {
  const at = values.findIndex((value) => value instanceof Date);
  let ms = dateMilliseconds(combine(values.slice(0, at), "add")) + BigInt((values[at] as Date).getTime());
  for (const value of values.slice(at + 1)) {
    ms += dateMilliseconds(value);
    if (ms < int64Min || ms > int64Max) throw errors.mongo("date overflow");
  }
  return dateAt(ms);
}

/** `$subtract`, as MongoDB 8.0's `evaluateSubtract`: numbers typed as they subtract, then dates. */
const subtractExpression: AnyFn = (obj, expr, options) => {
  const [a, b] = argumentsOf("$subtract", obj, expr, options, 2);
  if (isNumeric(a) && isNumeric(b)) {
    if (typeof a === "number" && typeof b === "number") return a - b;
    if (isDecimal(a) || isDecimal(b)) return toDecimal128(subtract(decOf(a), decOf(b)));
    if (isInteger(a) && isInteger(b)) return fromBigInt(bigOf(a) - bigOf(b));
    return doubleOf(a) - doubleOf(b);
  }
  if (a === null || a === undefined || b === null || b === undefined) return null;
  if (a instanceof Date) {
    // Two dates: the milliseconds between them, a long.
    if (b instanceof Date) return Long.fromNumber(a.getTime() - b.getTime());
    if (isNumeric(b)) return dateAt(BigInt(a.getTime()) - dateMilliseconds(b));
  }
  throw errors.mongo(`can't $subtract ${bsonTypeAlias(b)} from ${bsonTypeAlias(a)}`);
};

/**
 * A two-operand expression of numbers: mingo's when neither operand is a Decimal128 or a Long,
 * null when one is null or missing, MongoDB's refusal of one that is no number, else `compute`.
 */
function binary(name: "$divide" | "$mod", compute: (a: unknown, b: unknown) => unknown): AnyFn {
  return (obj, expr, options) => {
    const [a, b] = argumentsOf(name, obj, expr, options, 2);
    if (isNumeric(a) && isNumeric(b)) return compute(a, b);
    if (a === null || a === undefined || b === null || b === undefined) return null;
    throw errors.mongo(`${name} only supports numeric types, not ${bsonTypeAlias(a)} and ${bsonTypeAlias(b)}`);
  };
}

const divideExpression = binary("$divide", (a, b) => {
  if (isDecimal(a) || isDecimal(b)) {
    if (isZero(decOf(b))) throw errors.mongo("can't $divide by zero");
    return toDecimal128(divide(decOf(a), decOf(b)));
  }
  if (doubleOf(b) === 0) throw errors.mongo("can't $divide by zero");
  return doubleOf(a) / doubleOf(b);
});

/** `$mod`: the remainder with the dividend's sign, a Decimal128's exactly. */
const modExpression = binary("$mod", (a, b) => {
  if (isDecimal(a) || isDecimal(b)) {
    const divisor = decOf(b);
    if (isZero(divisor)) throw errors.mongo("can't $mod by zero");
    return toDecimal128(remainder(decOf(a), divisor));
  }
  if (doubleOf(b) === 0) throw errors.mongo("can't $mod by zero");
  if (isInteger(a) && isInteger(b)) return fromBigInt(bigOf(a) % bigOf(b));
  return doubleOf(a) % doubleOf(b);
});

/** `$abs`, `$ceil`, `$floor`: a Decimal128 stays one, a Long stays whole. */
function unary(name: "$abs" | "$ceil" | "$floor"): AnyFn {
  return (obj, expr, options) => {
    const [value] = argumentsOf(name, obj, expr, options, 1);
    if (!isBsonNumber(value)) return mingoExpression[name]!(obj, { $literal: value }, options);
    if (isLong(value)) return name === "$abs" ? fromBigInt(bigOf(value) < 0n ? -bigOf(value) : bigOf(value)) : value;
    const dec = decOf(value);
    if (name === "$abs") return toDecimal128(dec.kind !== "nan" && dec.negative ? negate(dec) : dec);
    return toDecimal128(quantize(dec, 0, name === "$ceil" ? "ceil" : "floor"));
  };
}

/**
 * `$round` / `$trunc` to a number of places (negative: tens, hundreds…), as MongoDB's
 * evaluateRoundOrTrunc: a double through its exact decimal value (2.675 is 2.67499…, so 2.67; mingo
 * rounded 783 to the hundreds as 700), ints and longs exactly, Decimal128s in decimal; null for
 * null, and MongoDB's refusals.
 */
function rounding(name: "$round" | "$trunc", mode: RoundingMode): AnyFn {
  return (obj, expr, options) => {
    const values = argumentsOf(name, obj, expr, options);
    if (values.length < 1 || values.length > 2)
      throw errors.mongo(
        `Expression ${name} takes at least 1 arguments, and at most 2, but ${values.length} were passed in.`,
      );
    const [value, place] = values;
    if (value === null || value === undefined) return null;
    if (!isNumeric(value)) throw errors.mongo(`${name} only supports numeric types, not ${bsonTypeAlias(value)}`);
    let places = 0;
    if (values.length > 1) {
      if (place === null || place === undefined) return null;
      if (!isNumeric(place) || !Number.isInteger(doubleOf(place)) || Math.abs(doubleOf(place)) >= 2 ** 31)
        throw errors.mongo(`precision argument to  ${name} must be a integral value`);
      places = doubleOf(place);
      if (places < -20 || places > 100)
        throw errors.mongo(`cannot apply ${name} with precision value ${places} value must be in [-20, 100]`);
    }
    if (isDecimal(value)) {
      const dec = decOf(value);
      return dec.kind === "infinite" ? value : toDecimal128(quantize(dec, places, mode));
    }
    if (typeof value === "number" && !Number.isSafeInteger(value)) {
      if (!Number.isFinite(value)) return value;
      return toDouble(quantize(fromDoubleExact(value), places, mode));
    }
    if (places >= 0) return value;
    const rounded = quantize(fromNumber(bigOf(value)), places, mode);
    return fromBigInt(truncatedInteger(rounded) ?? bigOf(value));
  };
}

/** A one-argument function of a number refused outside its domain with MongoDB's words; mingo's otherwise. */
function domain(name: string, refuse: (n: number) => string | null): AnyFn {
  return (obj, expr, options) => {
    const value = evalExpr(obj, Array.isArray(expr) && expr.length === 1 ? expr[0] : expr, options as never);
    if (typeof value === "number" && !Number.isNaN(value)) {
      const refusal = refuse(value);
      if (refusal !== null) throw errors.mongo(refusal);
    }
    return mingoExpression[name]!(obj, expr, options);
  };
}

/** `$log`'s argument and base, refused outside their domains with MongoDB's words. */
const logExpression: AnyFn = (obj, expr, options) => {
  const [value, base] = argumentsOf("$log", obj, expr, options, 2);
  if (typeof value === "number" && !(value > 0) && !Number.isNaN(value))
    throw errors.mongo(`$log's argument must be a positive number, but is ${gText(value)}`);
  if (typeof base === "number" && (!(base > 0) || base === 1) && !Number.isNaN(base))
    throw errors.mongo(`$log's base must be a positive number not equal to 1, but is ${gText(base)}`);
  return mingoExpression.$log!(obj, literals([value, base]), options);
};

/** `$pow`: 0 to a negative exponent is refused as MongoDB refuses it. */
const powExpression: AnyFn = (obj, expr, options) => {
  const [base, exponent] = argumentsOf("$pow", obj, expr, options, 2);
  if (typeof base === "number" && base === 0 && typeof exponent === "number" && exponent < 0)
    throw errors.mongo("$pow cannot take a base of 0 and a negative exponent");
  return mingoExpression.$pow!(obj, literals([base, exponent]), options);
};

const positive = (name: string) => (n: number) =>
  n > 0 ? null : `${name}'s argument must be a positive number, but is ${gText(n)}`;

export const numericExpressionOperators: Record<string, AnyFn> = {
  $sqrt: domain("$sqrt", (n) => (n >= 0 ? null : "$sqrt's argument must be greater than or equal to 0")),
  $ln: domain("$ln", positive("$ln")),
  $log10: domain("$log10", positive("$log10")),
  $log: logExpression,
  $pow: powExpression,
  $add: nAry("$add", "add"),
  $multiply: nAry("$multiply", "multiply"),
  $subtract: subtractExpression,
  $divide: divideExpression,
  $mod: modExpression,
  $abs: unary("$abs"),
  $ceil: unary("$ceil"),
  $floor: unary("$floor"),
  $round: rounding("$round", "halfEven"),
  $trunc: rounding("$trunc", "truncate"),
};

// ---------------------------------------------------------------------------------------------
// Accumulators

// ---------------------------------------------------------------------------------------------
// Update operators

/**
 * `$inc` / `$mul` at one path: the sum or product typed as MongoDB types it (a Decimal128 or Long
 * on either side kept exact), a missing field the operand (`$mul`: a zero of its type), a field
 * that holds no number MongoDB's error.
 */
export function arithmeticUpdate(
  doc: Document,
  name: string,
  path: string,
  current: unknown,
  operand: unknown,
): Outcome {
  if (current !== undefined && !isNumeric(current))
    throw errors.mongo(
      `Cannot apply ${name} to a value of non-numeric type. {_id: ${shellText(doc._id)}} has the field ` +
        `'${path.split(".").pop()}' of non-numeric type ${bsonTypeAlias(current)}`,
    );
  const how = name === "$inc" ? "add" : "multiply";
  if (current !== undefined && (isLong(current) || isLong(operand)) && isInteger(current) && isInteger(operand)) {
    const exact = how === "add" ? bigOf(current) + bigOf(operand) : bigOf(current) * bigOf(operand);
    if (exact < int64Min || exact > int64Max)
      throw errors.mongo(
        `Failed to apply ${name} operations to current value (${debugText(current)}) for document {_id: ${shellText(doc._id)}}`,
      );
  }
  const result =
    current === undefined
      ? how === "add"
        ? operand
        : combine([operand, 0], "multiply")
      : combine([current, operand], how);
  return current !== undefined && bsonTypeNumber(result) === bsonTypeNumber(current) && sameNumber(result, current)
    ? "unchanged"
    : { set: result };
}

/** A number as MongoDB's messages show one with its type: `(NumberLong)9223372036854775807`. */
function debugText(value: unknown): string {
  if (isLong(value)) return `(NumberLong)${value}`;
  if (isDecimal(value)) return `(NumberDecimal)${value}`;
  const n = value as number;
  if (!Number.isInteger(n)) return `(NumberDouble)${n}`;
  return Math.abs(n) < 2 ** 31 ? `(NumberInt)${n}` : `(NumberLong)${n}`;
}

/**
 * Whether two numbers of one type are the same value (NaN the same as NaN, -0 not 0). An integral
 * number past 2^53 and an Int64 are one type here, as they are written alike (decision 0040: the
 * PostgreSQL store reads back as an Int64 the double the memory store holds).
 */
function sameNumber(a: unknown, b: unknown): boolean {
  const long = isLong(a) ? a : isLong(b) ? b : undefined;
  const number = typeof a === "number" ? a : typeof b === "number" ? b : undefined;
  if (long !== undefined && number !== undefined) return Number.isInteger(number) && BigInt(number) === bigOf(long);
  return typeof a === "number" ? Object.is(a, b) : String(a) === String(b);
}
