/**
 * Operators mingo lacks or answers otherwise than MongoDB, put right: `$indexOfCP`, `$bsonSize`,
 * `$binarySize`, `$tsSecond` and `$tsIncrement` (unknown to mingo), `$redact` (a pruned document left as an empty one).
 */
import { evalExpr } from "mingo/core";
import * as expressionOperators from "mingo/operators/expression";
import * as pipelineOperators from "mingo/operators/pipeline";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { bsonTypeAlias } from "./bson-order.ts";
import { bsonSize, utf8Length } from "./bson-size.ts";
import { isDocument } from "./documents.ts";
import { checkBounds } from "./string-operators.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

const _mingoExpression = expressionOperators as unknown as Record<string, AnyFn>;
const mingoPipeline = pipelineOperators as unknown as Record<string, AnyFn>;

const evaluate = (obj: unknown, expr: unknown, options: unknown): unknown => evalExpr(obj, expr, options as never);

/** The code point index of `search` in `text` from `start` to `end` (code points), or -1. */
const indexOfCP: AnyFn = (obj, expr, options) => {
  if (!Array.isArray(expr) || expr.length < 2 || expr.length > 4)
    throw errors.mongo(
      `Expression $indexOfCP takes at least 2 arguments, and at most 4, but ${Array.isArray(expr) ? expr.length : 1} were passed in.`,
    );
  const [text, search, start = 0, end] = evaluate(obj, expr, options) as unknown[];
  if (text === null || text === undefined) return null;
  if (typeof text !== "string")
    throw errors.mongo(`$indexOfCP requires a string as the first argument, found: ${bsonTypeAlias(text)}`);
  if (typeof search !== "string")
    throw errors.mongo(`$indexOfCP requires a string as the second argument, found: ${bsonTypeAlias(search)}`);
  checkBounds("$indexOfCP", start, end);
  const points = Array.from(text);
  const wanted = Array.from(search);
  const last = Math.min(end === undefined ? points.length : (end as number), points.length);
  for (let i = start as number; i + wanted.length <= last; i++) {
    let found = true;
    for (let j = 0; j < wanted.length && found; j++) found = points[i + j] === wanted[j];
    if (found) return i;
  }
  return -1;
};

const bsonSizeOf: AnyFn = (obj, expr, options) => {
  const value = evaluate(obj, expr, options);
  if (value === null || value === undefined) return null;
  if (!isDocument(value)) throw errors.mongo(`$bsonSize requires a document input, found: ${bsonTypeAlias(value)}`);
  return bsonSize(value, new WeakMap());
};

const binarySize: AnyFn = (obj, expr, options) => {
  const value = evaluate(obj, expr, options);
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return utf8Length(value);
  if (value instanceof Uint8Array) return value.length;
  if ((value as { _bsontype?: unknown } | null)?._bsontype === "Binary")
    return (value as { position: number }).position;
  throw errors.mongo(`$binarySize requires a string or BinData argument, found: ${bsonTypeAlias(value)}`);
};

/** `$tsSecond` / `$tsIncrement`: a Timestamp's seconds or increment (a long), null for null or missing. */
function timestampPart(name: "$tsSecond" | "$tsIncrement"): AnyFn {
  return (obj, expr, options) => {
    const value = evaluate(obj, Array.isArray(expr) && expr.length === 1 ? expr[0] : expr, options);
    if (value === null || value === undefined) return null;
    if ((value as { _bsontype?: unknown })._bsontype !== "Timestamp")
      throw errors.mongo(`${name} expects argument of type timestamp, got ${bsonTypeAlias(value)}`);
    const timestamp = value as { t: number; i: number };
    return name === "$tsSecond" ? timestamp.t : timestamp.i;
  };
}

export const fixedExpressionOperators: Record<string, AnyFn> = {
  $tsSecond: timestampPart("$tsSecond"),
  $tsIncrement: timestampPart("$tsIncrement"),
  $indexOfCP: indexOfCP,
  $bsonSize: bsonSizeOf,
  $binarySize: binarySize,
};

type LazyLike = { filter(f: (doc: unknown) => boolean): unknown; map(f: (doc: unknown) => unknown): unknown };

export const fixedPipelineOperators: Record<string, AnyFn> = {
  $redact: (collection, expr, options) =>
    (mingoPipeline.$redact!(collection, expr, options) as LazyLike).filter((doc) => doc !== undefined),
};
