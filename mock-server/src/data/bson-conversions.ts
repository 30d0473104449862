/**
 * Conversions of the BSON values mingo does not know (`$toString`, `$toDouble`, `$toInt`,
 * `$toLong`, `$toDecimal`, `$toObjectId`, `$toDate`, `$toBool`, `$convert`): from a Decimal128, a
 * Long, an ObjectId or a Timestamp, and to a Decimal128 or an ObjectId, as MongoDB converts them. mingo refused
 * `$toString` of an ObjectId (the commonest conversion an app writes), had no `$toObjectId`, and
 * answered a double for `$toDecimal`. Every other conversion is mingo's.
 */
import { ObjectId, type Timestamp } from "bson";
import { evalExpr } from "mingo/core";
import * as expressionOperators from "mingo/operators/expression";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { bsonTypeAlias } from "./bson-order.ts";
import { fromNumber, isZero, parseDecimal, toDecimal128, truncatedInteger } from "./decimal.ts";
import { isDocument } from "./documents.ts";
import {
  argumentsOf,
  bigOf,
  decOf,
  doubleOf,
  fromBigInt,
  int64Max,
  int64Min,
  isBsonNumber,
  isDecimal,
  isLong,
  isNumeric,
} from "./numeric-operators.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

const mingoExpression = expressionOperators as unknown as Record<string, AnyFn>;

/** MongoDB's `$convert` targets by number and name. */
const targets: Record<string, string> = {
  1: "double",
  2: "string",
  7: "objectId",
  8: "bool",
  9: "date",
  16: "int",
  18: "long",
  19: "decimal",
  double: "double",
  string: "string",
  objectId: "objectId",
  bool: "bool",
  date: "date",
  int: "int",
  long: "long",
  decimal: "decimal",
};

class ConversionError extends Error {}

const isObjectId = (value: unknown): value is ObjectId =>
  value !== null && typeof value === "object" && (value as { _bsontype?: unknown })._bsontype === "ObjectId";

/** Whether a conversion is ours rather than mingo's. */
const isTimestamp = (value: unknown): value is Timestamp =>
  value !== null && typeof value === "object" && (value as { _bsontype?: unknown })._bsontype === "Timestamp";

const ours = (value: unknown, target: string | undefined): boolean =>
  target !== undefined &&
  (target === "decimal" || target === "objectId" || isBsonNumber(value) || isObjectId(value) || isTimestamp(value));

const unsupported = (value: unknown, target: string) =>
  new ConversionError(
    `Unsupported conversion from ${bsonTypeAlias(value)} to ${target} in $convert with no onError value`,
  );

function toDecimal(value: unknown): unknown {
  if (isDecimal(value)) return value;
  if (isNumeric(value)) return toDecimal128(decOf(value));
  if (typeof value === "boolean") return toDecimal128(fromNumber(value ? 1 : 0));
  if (value instanceof Date) return toDecimal128(fromNumber(value.getTime()));
  if (typeof value === "string") {
    const parsed = value.trim() === value && value !== "" ? parseDecimal(value) : null;
    if (parsed === null)
      throw new ConversionError(`Failed to parse number '${value}' in $convert with no onError value`);
    return toDecimal128(parsed);
  }
  throw unsupported(value, "decimal");
}

function toObjectId(value: unknown): ObjectId {
  if (isObjectId(value)) return value;
  if (typeof value !== "string") throw unsupported(value, "objectId");
  if (!/^[0-9a-fA-F]{24}$/.test(value))
    throw new ConversionError(
      `Failed to parse objectId '${value}' in $convert with no onError value: ` +
        (value.length === 24
          ? "Invalid character found in hex string"
          : `Invalid string length for parsing to OID, expected 24 but found ${value.length}`),
    );
  return new ObjectId(value);
}

/** A Decimal128, a Long or an ObjectId converted, or a value to a Decimal128 or an ObjectId. */
function convert(value: unknown, target: string): unknown {
  if (target === "decimal") return toDecimal(value);
  if (target === "objectId") return toObjectId(value);
  if (isTimestamp(value)) {
    // Its seconds as a date; no other conversion takes one.
    if (target === "date") return new Date(value.t * 1000);
    throw unsupported(value, target);
  }
  if (isObjectId(value)) {
    if (target === "string") return value.toHexString();
    if (target === "date") return value.getTimestamp();
    if (target === "bool") return true;
    throw unsupported(value, target);
  }
  switch (target) {
    case "string":
      return String(value);
    case "double":
      return doubleOf(value);
    case "bool":
      return isDecimal(value) ? !isZero(decOf(value)) : bigOf(value) !== 0n;
    case "date":
      return new Date(doubleOf(value));
    case "int":
    case "long": {
      const whole = isLong(value) ? bigOf(value) : truncatedInteger(decOf(value));
      const [low, high] = target === "int" ? [-(2n ** 31n), 2n ** 31n - 1n] : [int64Min, int64Max];
      if (whole === null || whole < low || whole > high)
        throw new ConversionError(
          `Conversion would overflow target type in $convert with no onError value: ${String(value)}`,
        );
      return fromBigInt(whole);
    }
  }
  throw unsupported(value, target);
}

function conversion(name: string, target: string): AnyFn {
  return (obj, expr, options) => {
    const [value] = argumentsOf(name, obj, expr, options, 1);
    if (value === null || value === undefined) return null;
    if (!ours(value, target)) return mingoExpression[name]!(obj, { $literal: value }, options);
    try {
      return convert(value, target);
    } catch (error) {
      if (error instanceof ConversionError) throw errors.mongo(error.message);
      throw error;
    }
  };
}

const convertExpression: AnyFn = (obj, expr, options) => {
  if (!isDocument(expr) || !("input" in expr) || !("to" in expr)) return mingoExpression.$convert!(obj, expr, options);
  const input = evalExpr(obj, expr.input, options as never) as unknown;
  const to = evalExpr(obj, expr.to, options as never) as unknown;
  const target = targets[String(to)];
  if (input === null || input === undefined || !ours(input, target))
    return mingoExpression.$convert!(obj, { ...expr, input: { $literal: input }, to: { $literal: to } }, options);
  try {
    return convert(input, target!);
  } catch (error) {
    if (!(error instanceof ConversionError)) throw error;
    if (!("onError" in expr)) throw errors.mongo(error.message);
    return evalExpr(obj, expr.onError, options as never);
  }
};

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
