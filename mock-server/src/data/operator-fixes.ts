/**
 * Operators mingo lacks or answers otherwise than MongoDB, put right: `$indexOfCP`, `$bsonSize`,
 * `$binarySize`, `$tsSecond` and `$tsIncrement` (unknown to mingo), `$redact` (a pruned document
 * left as an empty one), `$sample` (mingo drew with replacement: 10 of 4 documents, some twice;
 * MongoDB draws distinct ones), `$replaceRoot`/`$replaceWith` (MongoDB's refusal of a value that is
 * no document).
 */
import { evalExpr } from "mingo/core";
import { Lazy } from "mingo/lazy";
import * as expressionOperators from "mingo/operators/expression";
import * as pipelineOperators from "mingo/operators/pipeline";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { dropMissing } from "./accumulators.ts";
import { bsonTypeAlias } from "./bson-order.ts";
import { bsonSize, utf8Length } from "./bson-size.ts";
import { isDocument } from "./documents.ts";
import { valueText } from "./shell-text.ts";
import { sampleSize } from "./stage-specs.ts";
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

type LazyLike = {
  filter(f: (doc: unknown) => boolean): unknown;
  map(f: (doc: unknown) => unknown): unknown;
  transform(f: (docs: unknown[]) => unknown): unknown;
};

/** `size` distinct documents drawn at random (all of them, in random order, when there are fewer). */
const sample: AnyFn = (collection: LazyLike, expr) => {
  const size = sampleSize(expr);
  return collection.transform((docs) => {
    const pool = docs.slice();
    const count = Math.min(size, pool.length);
    // The first `count` places of a Fisher–Yates shuffle.
    for (let i = 0; i < count; i++) {
      const j = i + Math.floor(Math.random() * (pool.length - i));
      [pool[i], pool[j]] = [pool[j], pool[i]];
    }
    return Lazy(pool.slice(0, count));
  });
};

/** `$replaceRoot` / `$replaceWith`: each document replaced by what `root` evaluates to, a document. */
function replacing(what: string, rootOf: (expr: unknown) => unknown): AnyFn {
  return (collection: LazyLike, expr, options) => {
    const root = rootOf(expr);
    return collection.map((doc) => {
      const value = evaluate(doc, root, options);
      if (!isDocument(value))
        throw errors.mongo(
          `${what} must evaluate to an object, but resulting value was: ${valueText(value)}. ` +
            `Type of resulting value: '${bsonTypeAlias(value)}'. Input document: ${valueText(doc)}`,
        );
      return dropMissing(value);
    });
  };
}

export const fixedPipelineOperators: Record<string, AnyFn> = {
  $redact: (collection, expr, options) =>
    (mingoPipeline.$redact!(collection, expr, options) as LazyLike).filter((doc) => doc !== undefined),
  $sample: sample,
  $replaceRoot: replacing("'newRoot' expression ", (expr) => (isDocument(expr) ? expr.newRoot : undefined)),
  $replaceWith: replacing("'replacement document' ", (expr) => expr),
};
