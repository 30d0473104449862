/**
 * Operators mingo lacks or answers otherwise than MongoDB, put right: `$indexOfCP`, `$bsonSize`,
 * `$binarySize`, `$tsSecond` and `$tsIncrement` (unknown to mingo), `$slice`, `$range`, `$first`
 * and `$last` of an array with MongoDB's checks and texts, `$getField` of a name holding a dot
 * (mingo walked it as a path), `$meta` (mingo: "accumulator '$meta' is not registered"), `$sample`
 * (mingo drew with replacement: 10 of 4 documents, some twice; MongoDB draws distinct ones),
 * `$replaceRoot`/`$replaceWith` (MongoDB's refusal of a value that is no document). (`$redact`:
 * redact-stage.ts.)
 */
import { Aggregator } from "mingo/aggregator";
import { evalExpr } from "mingo/core";
import { Lazy } from "mingo/lazy";
import * as expressionOperators from "mingo/operators/expression";
import * as pipelineOperators from "mingo/operators/pipeline";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { accumulators, computeOptionsClass, dropMissing } from "./accumulators.ts";
import { bsonTypeAlias } from "./bson-order.ts";
import { bsonSize, utf8Length } from "./bson-size.ts";
import { isDocument } from "./documents.ts";
import { doubleOf, isNumeric } from "./numeric-operators.ts";
import { precheck, steps } from "./query-limits.ts";
import { gText, valueText } from "./shell-text.ts";
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

/** The arguments of an operator taking between `least` and `most` of them, evaluated. */
function argumentList(
  name: string,
  obj: unknown,
  expr: unknown,
  options: unknown,
  least: number,
  most: number,
): unknown[] {
  const count = Array.isArray(expr) ? expr.length : 1;
  if (count < least || count > most)
    throw errors.mongo(
      `Expression ${name} takes at least ${least} arguments, and at most ${most}, but ${count} were passed in.`,
    );
  return Array.isArray(expr) ? expr.map((arg) => evaluate(obj, arg, options)) : [evaluate(obj, expr, options)];
}

/** A number as MongoDB's messages write a coerced double (six significant digits). */
const doubleText = (value: unknown) => gText(doubleOf(value));

/** Whether a number is whole and within 32 bits (MongoDB's `Value::integral`). */
function integral(value: unknown): boolean {
  if (!isNumeric(value)) return false;
  const x = doubleOf(value);
  return Number.isInteger(x) && x >= -(2 ** 31) && x < 2 ** 31;
}

/** `$slice`: `[array, n]` or `[array, position, n]`, as MongoDB's ExpressionSlice checks them. */
const slice: AnyFn = (obj, expr, options) => {
  const [array, second, third] = argumentList("$slice", obj, expr, options, 2, 3);
  const three = Array.isArray(expr) && expr.length === 3;
  if (array === null || array === undefined) return null;
  if (!Array.isArray(array))
    throw errors.mongo(`First argument to $slice must be an array, but is of type: ${bsonTypeAlias(array)}`);
  if (second === null || second === undefined) return null;
  if (!isNumeric(second))
    throw errors.mongo(`Second argument to $slice must be a numeric value, but is of type: ${bsonTypeAlias(second)}`);
  if (!integral(second))
    throw errors.mongo(`Second argument to $slice can't be represented as a 32-bit integer: ${doubleText(second)}`);
  const size = array.length;
  const at = doubleOf(second);
  if (!three) return at >= 0 ? array.slice(0, Math.min(at, size)) : array.slice(Math.max(0, size + at));
  if (third === null || third === undefined) return null;
  if (!isNumeric(third))
    throw errors.mongo(`Third argument to $slice must be numeric, but is of type: ${bsonTypeAlias(third)}`);
  if (!integral(third))
    throw errors.mongo(`Third argument to $slice can't be represented as a 32-bit integer: ${doubleText(third)}`);
  const count = doubleOf(third);
  if (count <= 0) throw errors.mongo(`Third argument to $slice must be positive: ${count}`);
  const start = at >= 0 ? Math.min(at, size) : Math.max(0, size + at);
  return array.slice(start, Math.min(start + count, size));
};

/** `$range`, MongoDB's checks in its order; the result's size is checked before it is built (a bomb never allocates). */
const range: AnyFn = (obj, expr, options) => {
  const [start, end, by] = argumentList("$range", obj, expr, options, 2, 3);
  const check = (value: unknown, what: string, article: string) => {
    if (!isNumeric(value))
      throw errors.mongo(`$range requires a numeric ${what} value, found value of type: ${bsonTypeAlias(value)}`);
    if (!integral(value))
      throw errors.mongo(
        `$range requires ${article} ${what} value that can be represented as a 32-bit integer, found value: ${valueText(value)}`,
      );
    return doubleOf(value);
  };
  const from = check(start, "starting", "a");
  const to = check(end, "ending", "an");
  const step = Array.isArray(expr) && expr.length === 3 ? check(by, "step", "a") : 1;
  if (step === 0) throw errors.mongo("$range requires a non-zero step value");
  const count = Math.max(0, Math.ceil((to - from) / step));
  precheck(count * 8, "$range");
  steps(count >> 4);
  const out = new Array<number>(count);
  for (let i = 0; i < count; i++) out[i] = from + i * step;
  return out;
};

/** `$first` / `$last` of an array (the accumulators are accumulators.ts's): null for null, nothing for []. */
const end =
  (name: "$first" | "$last"): AnyFn =>
  (obj, expr, options) => {
    // mingo's own stages evaluate an accumulator's object over a group's documents.
    if (Array.isArray(obj)) return accumulators[name]!(obj, expr, options);
    const [array] = argumentList(name, obj, expr, options, 1, 1);
    if (array === null || array === undefined) return null;
    if (!Array.isArray(array))
      throw errors.mongo(`${name}'s argument must be an array, but is ${bsonTypeAlias(array)}`);
    return name === "$first" ? array[0] : array[array.length - 1];
  };

/**
 * `$getField`: the field of that very name (a dot or a `$` in it included) of `input` (the current
 * document by default): nothing when `input` is missing or no document, null when it is null.
 */
const getField: AnyFn = (obj, expr, options) => {
  const named = isDocument(expr) && ("field" in expr || "input" in expr);
  const fieldExpr = named ? (expr as Record<string, unknown>).field : expr;
  if (named) {
    for (const key of Object.keys(expr as object))
      if (key !== "field" && key !== "input") throw errors.mongo(`$getField found an unknown argument: ${key}`);
    if (!("field" in (expr as object))) throw errors.mongo("$getField requires 'field' to be specified");
  }
  if (typeof fieldExpr === "string" && fieldExpr.startsWith("$"))
    throw errors.mongo("$getField requires 'field' to evaluate to a constant, but got a non-constant argument");
  const field = evaluate(obj, fieldExpr, options);
  if (typeof field !== "string")
    throw errors.mongo(`$getField requires 'field' to evaluate to type String, but got ${bsonTypeAlias(field)}`);
  const input =
    named && "input" in (expr as object) ? evaluate(obj, (expr as Record<string, unknown>).input, options) : obj;
  if (input === null) return null;
  if (!isDocument(input)) return undefined;
  return Object.hasOwn(input, field) ? input[field] : undefined;
};

/** `$meta`: no text search and no Atlas Search run here, so no metadata is ever available. */
const metaNames = new Set([
  "textScore",
  "randVal",
  "searchScore",
  "searchHighlights",
  "geoNearDistance",
  "geoNearPoint",
  "recordId",
  "indexKey",
  "sortKey",
  "searchScoreDetails",
  "searchSequenceToken",
  "vectorSearchScore",
  "score",
  "scoreDetails",
]);
const meta: AnyFn = (_obj, expr) => {
  if (typeof expr !== "string" || !metaNames.has(expr))
    throw errors.mongo(`Unsupported argument to $meta: ${String(expr)}`);
  if (expr === "textScore") throw errors.mongo("query requires text score metadata, but it is not available");
  throw errors.mongo(`$meta '${expr}' is not supported by this server`);
};

/**
 * The operators of one argument MongoDB parses with a fixed arity: an array is the list of
 * arguments (`{$sqrt: [4]}` is `{$sqrt: 4}`, `{$reverseArray: [[1, 2]]}` reverses `[1, 2]`), of
 * exactly one. mingo took the array as the argument's value.
 */
const oneArgument = [
  "$exp",
  "$ln",
  "$log10",
  "$sqrt",
  "$strLenBytes",
  "$strLenCP",
  "$reverseArray",
  "$objectToArray",
  "$bsonSize",
  "$binarySize",
  "$size",
  "$isArray",
  "$degreesToRadians",
  "$radiansToDegrees",
  "$sin",
  "$cos",
  "$tan",
  "$asin",
  "$acos",
  "$atan",
  "$sinh",
  "$cosh",
  "$tanh",
  "$asinh",
  "$acosh",
  "$atanh",
];

/** `operators` with those of one argument taking it as a list of one too. */
export function withArgumentLists(operators: Record<string, AnyFn>): Record<string, AnyFn> {
  const out = { ...operators };
  for (const name of oneArgument) {
    const operator = operators[name];
    if (!operator) continue;
    out[name] = (obj, expr, options) => {
      if (!Array.isArray(expr)) return operator(obj, expr, options);
      if (expr.length !== 1)
        throw errors.mongo(`Expression ${name} takes exactly 1 arguments. ${expr.length} were passed in.`);
      return operator(obj, expr[0], options);
    };
  }
  return out;
}

export const fixedExpressionOperators: Record<string, AnyFn> = {
  $slice: slice,
  $range: range,
  $first: end("$first"),
  $last: end("$last"),
  $getField: getField,
  $meta: meta,
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

/**
 * `$facet`, as mingo's, but its sub-pipelines keep the options' time and variables: mingo made
 * their options anew from the plain options (to copy their input), so each read `$$NOW` at its
 * own first use instead of the statement's (the app's clock's: docs/decisions/0063), and lost the
 * variables of an enclosing `$lookup`'s `let`.
 */
const facet: AnyFn = (collection: LazyLike, expr: Record<string, unknown[]>, options) => {
  const Made = computeOptionsClass(options);
  if (Made === null) return mingoPipeline.$facet!(collection, expr, options);
  const { options: plain, local } = Made.init(options);
  // (1: mingo's ProcessingMode.CLONE_INPUT, which its $facet asks of its sub-pipelines.)
  const kept = new Made(
    { ...plain, processingMode: ((plain.processingMode as number) ?? 0) | 1 },
    { timestamp: local.timestamp, variables: local.variables },
  );
  return collection.transform((docs) => {
    const out: Record<string, unknown> = {};
    for (const name of Object.keys(expr))
      out[name] = new Aggregator(expr[name] as never, kept as never).run(docs as never);
    return Lazy([out]);
  });
};

export const fixedPipelineOperators: Record<string, AnyFn> = {
  $facet: facet,
  // MongoDB's `$count` is a `$group` of every document (then a `$project`): over none, no document.
  $count: (collection, expr, options) =>
    (mingoPipeline.$count!(collection, expr, options) as LazyLike).filter(
      (doc) => (doc as Record<string, unknown>)[expr as string] !== 0,
    ),
  $sample: sample,
  $replaceRoot: replacing("'newRoot' expression ", (expr) => (isDocument(expr) ? expr.newRoot : undefined)),
  $replaceWith: replacing("'replacement document' ", (expr) => expr),
};
