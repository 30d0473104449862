/**
 * MongoDB's accumulators (`$group`, `$bucket`, `$bucketAuto`, windows) and their expression forms
 * (`{$sum: "$prices"}` in a `$project`), as MongoDB 8.0's accumulator classes compute them
 * (docs/decisions/0045-group-accumulators.md). mingo's answered otherwise: `$sum` of 0.1, 0.2 and
 * 0.3 was 0.6000000000000001 (MongoDB adds doubles as a double-double: 0.6), `$stdDevSamp` of
 * one value NaN (null), Decimal128s were left out of `$stdDevPop`, `$mergeObjects` refused a null
 * (left out), `$max: "$missing"` in a `$project` was refused (null), `$minN`/`$firstN`/`$top`
 * took their arguments loosely and missing values as the wrong thing.
 *
 * Each accumulator here takes mingo's arguments (the group's documents, the argument expression,
 * the options) and evaluates the argument once per document; `parseAccumulator` checks a field's
 * specification as MongoDB parses it, before any document is read.
 */
import { evalExpr } from "mingo/core";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { bsonTypeAlias, compareBson, equalityKey } from "./bson-order.ts";
import { isConstantExpression } from "./constant-expression.ts";
import { add, type Dec, divide, fromDecimal128, fromDoubleExact, fromNumber, toDecimal128 } from "./decimal.ts";
import { type Document, isDocument } from "./documents.ts";
import { bigOf, doubleOf, fromBigInt, int64Max, int64Min, isDecimal, isLong, isNumeric } from "./numeric-operators.ts";
import { bsonElementText, shellText, valueText } from "./shell-text.ts";
import { compareKeys, sortKeyOf } from "./sort-keys.ts";
import { checkSortSpec } from "./stage-specs.ts";
import { keysOf } from "./wide-keys.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

const nullish = (value: unknown) => value === null || value === undefined;

// ---------------------------------------------------------------------------------------------
// Evaluation

/** mingo's options of a computation (its ComputeOptions, which the package does not export). */
interface ComputeOptions {
  /** The options proper (shared by every computation made from them). */
  readonly options: Record<string, unknown>;
  /** This computation's locals: its root, variables and `$$NOW` (`timestamp`). */
  readonly local: Record<string, unknown>;
  update(locals: Record<string, unknown>): ComputeOptions;
}
/** Its class: made from options and locals, or from options or another instance (`init`, copying its locals). */
type ComputeOptionsClass = {
  new (options: unknown, locals: Record<string, unknown>): ComputeOptions;
  init(options: unknown): ComputeOptions;
};

/** The class of the options a stage was handed, when they are an instance of it. */
export function computeOptionsClass(options: unknown): ComputeOptionsClass | null {
  const made = (options as { constructor?: Partial<ComputeOptionsClass> } | null)?.constructor;
  return typeof made?.init === "function" ? (made as ComputeOptionsClass) : null;
}

/** Each document's value of `expr`, evaluated with the document as its root (undefined: missing). */
export function valuesOf(collection: readonly unknown[], expr: unknown, options: unknown): unknown[] {
  const computed = computeOptionsClass(options)?.init(options);
  const values: unknown[] = new Array(collection.length);
  for (let i = 0; i < collection.length; i++) {
    const root = collection[i];
    values[i] = evalExpr(root, expr, (computed ? computed.update({ root }) : options) as never) as unknown;
  }
  return values;
}

/**
 * A value an expression built, as MongoDB's expressions build it: a document's fields that
 * evaluated to nothing left out (`{k: "$missing"}` is `{}`), an array's elements null. Values the
 * store holds are frozen and hold no such field: they are answered as they are.
 */
export function dropMissing(value: unknown): unknown {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const element = value[i];
      const fixed = element === undefined ? null : dropMissing(element);
      if (fixed !== element) {
        out ??= value.slice(0, i);
      }
      if (out) out.push(fixed);
    }
    return out ?? value;
  }
  if (!isDocument(value)) return value;
  let out: Document | undefined;
  const keys = keysOf(value);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const member = value[key];
    const fixed = member === undefined ? undefined : dropMissing(member);
    if (fixed !== member || member === undefined) {
      if (!out) {
        out = {};
        for (let j = 0; j < i; j++) out[keys[j]!] = value[keys[j]!];
      }
    }
    if (out && fixed !== undefined) out[key] = fixed;
  }
  return out ?? value;
}

// ---------------------------------------------------------------------------------------------
// Sums

const safeInteger = (value: unknown): value is number => typeof value === "number" && Number.isSafeInteger(value);

/**
 * A sum of numbers as MongoDB's `$sum` and `$avg` keep it: every number but Decimal128s in its
 * DoubleDoubleSummation (a double and the error of its roundings: 0.1 + 0.2 + 0.3 is 0.6), the
 * ints and longs also exactly, Decimal128s apart in decimal.
 */
export class Summation {
  count = 0;
  private integer = 0n;
  private integersOnly = true;
  private sumPart = 0;
  private addend = 0;
  private special = 0;
  private decimal: Dec | null = null;

  /** Adds a value if it is a number (anything else is left out, as MongoDB leaves it). */
  add(value: unknown): void {
    if (safeInteger(value)) {
      this.count++;
      this.integer += BigInt(value);
      this.addDouble(value);
    } else if (typeof value === "number") {
      this.count++;
      this.integersOnly = false;
      this.addDouble(value);
    } else if (isLong(value)) {
      this.count++;
      const big = bigOf(value);
      this.integer += big;
      // MongoDB's addLong: the multiple of 2^32 and the rest, each an exact double.
      const high = (big / 2n ** 32n) * 2n ** 32n;
      this.addDouble(Number(big - high));
      this.addDouble(Number(high));
    } else if (isDecimal(value)) {
      this.count++;
      const dec = fromDecimal128(value as never);
      this.decimal = this.decimal === null ? dec : add(this.decimal, dec);
    }
  }

  /** MongoDB's DoubleDoubleSummation::addDouble: Dekker's fast two-sum into the addend, Knuth's two-sum into the sum. */
  private addDouble(value: number): void {
    this.special += value;
    let x = value;
    const s1 = x + this.addend;
    const t1 = this.addend - (s1 - x);
    x = s1;
    this.addend = t1;
    const s2 = this.sumPart + x;
    const aPrime = s2 - x;
    const bPrime = s2 - aPrime;
    const t2 = this.sumPart - aPrime + (x - bPrime);
    this.sumPart = s2;
    this.addend += t2;
  }

  private double(): number {
    return Number.isNaN(this.sumPart) ? this.special : this.sumPart;
  }

  private fitsLong(): boolean {
    return this.integersOnly && this.integer >= int64Min && this.integer <= int64Max;
  }

  /** The sum of the numbers but Decimal128s, as a decimal (MongoDB's getDecimal, at full precision). */
  private nonDecimal(): Dec {
    if (this.fitsLong()) return fromNumber(this.integer);
    if (!Number.isFinite(this.sumPart)) return fromDoubleExact(this.special);
    return add(fromDoubleExact(this.sumPart), fromDoubleExact(this.addend));
  }

  /** `$sum`'s result: an int or long while the integers' sum fits, else a double; a Decimal128 with one. */
  sum(): unknown {
    if (this.decimal !== null) return toDecimal128(add(this.decimal, this.nonDecimal()));
    return this.fitsLong() ? fromBigInt(this.integer) : this.double();
  }

  /** `$avg`'s result: a double (a Decimal128 with one), null without numbers. */
  average(): unknown {
    if (this.count === 0) return null;
    if (this.decimal !== null)
      return toDecimal128(divide(add(this.decimal, this.nonDecimal()), fromNumber(this.count)));
    return this.double() / this.count;
  }
}

const sumOf = (values: readonly unknown[]): unknown => {
  const sum = new Summation();
  for (const value of values) sum.add(value);
  return sum.sum();
};

const averageOf = (values: readonly unknown[]): unknown => {
  const sum = new Summation();
  for (const value of values) sum.add(value);
  return sum.average();
};

/** `$stdDevPop` / `$stdDevSamp`: Welford's running variance of the numbers as doubles; null without enough. */
function deviationOf(values: readonly unknown[], sample: boolean): number | null {
  let count = 0;
  let mean = 0;
  let m2 = 0;
  for (const value of values) {
    if (!isNumeric(value)) continue;
    const x = doubleOf(value);
    count++;
    const delta = x - mean;
    if (delta !== 0) {
      mean += delta / count;
      m2 += delta * (x - mean);
    }
  }
  const adjusted = sample ? count - 1 : count;
  return adjusted <= 0 ? null : Math.sqrt(m2 / adjusted);
}

// ---------------------------------------------------------------------------------------------
// Values kept

/** `$max` / `$min`: in MongoDB's order, null and missing values left out; null without others. */
function extremeOf(values: readonly unknown[], direction: 1 | -1): unknown {
  let best: unknown;
  for (const value of values) {
    if (nullish(value)) continue;
    if (best === undefined || compareBson(value, best) * direction > 0) best = value;
  }
  return best ?? null;
}

/** `$addToSet`: distinct values by MongoDB's equality, missing ones left out, the first of each kept. */
function setOf(values: readonly unknown[]): unknown[] {
  const seen = new Set<string>();
  const out: unknown[] = [];
  for (const value of values) {
    if (value === undefined) continue;
    const fixed = dropMissing(value);
    const key = equalityKey(fixed);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(fixed);
  }
  return out;
}

/** `$mergeObjects`: the documents' fields, later ones overwriting earlier ones; null and missing left out. */
function mergedOf(values: readonly unknown[]): Document {
  const out: Document = {};
  for (const value of values) {
    if (nullish(value)) continue;
    if (!isDocument(value))
      throw errors.mongo(
        `$mergeObjects requires object inputs, but input ${valueText(value)} is of type ${bsonTypeAlias(value)}`,
      );
    for (const key of keysOf(value)) {
      const member = value[key];
      if (member !== undefined) out[key] = member;
    }
  }
  return out;
}

/** The value at MongoDB's rank for `p` among sorted numbers (its discrete percentile; t-digest's answer for small inputs). */
function percentileOf(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  if (p >= 1) return sorted[sorted.length - 1]!;
  if (p <= 0) return sorted[0]!;
  return sorted[Math.max(0, Math.ceil(sorted.length * p) - 1)]!;
}

/** The numbers among `values` as doubles, NaN left out, in ascending order. */
function sortedNumbers(values: readonly unknown[]): number[] {
  const numbers: number[] = [];
  for (const value of values) {
    if (!isNumeric(value)) continue;
    const x = doubleOf(value);
    if (!Number.isNaN(x)) numbers.push(x);
  }
  return numbers.sort((a, b) => a - b);
}

// ---------------------------------------------------------------------------------------------
// Specifications

const nFamily = new Set(["$firstN", "$lastN", "$minN", "$maxN"]);
const sortedFamily = new Set(["$top", "$bottom", "$topN", "$bottomN"]);
const quantiles = new Set(["$median", "$percentile"]);

/** `{n, input}` of `$firstN` … `$maxN`, checked as MongoDB's AccumulatorN parses it. */
function nArguments(name: string, spec: unknown): { n: unknown; input: unknown } {
  if (!isDocument(spec)) throw errors.mongo(`specification must be an object; found ${bsonElementText(name, spec)}`);
  for (const key of keysOf(spec))
    if (key !== "n" && key !== "input") throw errors.mongo(`Unknown argument for 'n' operator: ${key}`);
  if (!("n" in spec)) throw errors.mongo("Missing value for 'n'");
  if (!("input" in spec)) throw errors.mongo("Missing value for 'input'");
  return { n: spec.n, input: spec.input };
}

interface SortBy {
  paths: string[][];
  directions: (1 | -1)[];
}

/** `{sortBy, output, n?}` of `$top` … `$bottomN`, checked as MongoDB parses it. */
function sortedArguments(name: string, spec: unknown): { n: unknown; output: unknown; sortBy: SortBy } {
  if (!isDocument(spec)) throw errors.mongo(`specification must be an object; found ${bsonElementText(name, spec)}`);
  const many = name.endsWith("N");
  for (const key of keysOf(spec))
    if (key !== "output" && key !== "sortBy" && !(many && key === "n"))
      throw errors.mongo(`Unknown argument to ${name} '${key}'`);
  if (many && !("n" in spec)) throw errors.mongo("Missing value for 'n'");
  if (!("output" in spec)) throw errors.mongo("Missing value for 'output'");
  if (!("sortBy" in spec)) throw errors.mongo("Missing value for 'sortBy'");
  const sortBy = spec.sortBy;
  if (!isDocument(sortBy)) throw errors.mongo("invalid parameter: expected an object (sortBy)");
  // MongoDB's SortPattern, as the $sort stage reads one (an empty one: every document ties).
  if (keysOf(sortBy).length > 0) checkSortSpec(sortBy);
  const paths: string[][] = [];
  const directions: (1 | -1)[] = [];
  for (const field of keysOf(sortBy)) {
    const direction = sortBy[field];
    // A {$meta: …} key: no text search runs here, so no metadata to sort by.
    if (isDocument(direction)) throw errors.mongo("query requires text score metadata, but it is not available");
    paths.push(field.split("."));
    directions.push(Math.trunc(doubleOf(direction)) as 1 | -1);
  }
  return { n: many ? spec.n : 1, output: spec.output, sortBy: { paths, directions } };
}

interface Quantile {
  input: unknown;
  /** The probabilities (`$median`: 0.5 alone, answered as one value). */
  p: number[];
  single: boolean;
}

/** `{input, p, method}` of `$percentile` (`{input, method}` of `$median`), checked as MongoDB's IDL parser does. */
function quantileArguments(name: string, spec: unknown, options: unknown): Quantile {
  if (!isDocument(spec)) throw errors.mongo(`specification must be an object; found ${bsonElementText(name, spec)}`);
  const single = name === "$median";
  const fields = single ? ["input", "method"] : ["input", "p", "method"];
  for (const key of keysOf(spec))
    if (!fields.includes(key)) throw errors.mongo(`BSON field '${name}.${key}' is an unknown field.`);
  for (const field of fields)
    if (!(field in spec)) throw errors.mongo(`BSON field '${name}.${field}' is missing but a required field`);
  if (typeof spec.method !== "string")
    throw errors.mongo(
      `BSON field '${name}.method' is the wrong type '${bsonTypeAlias(spec.method)}', expected type 'string'`,
    );
  if (spec.method !== "approximate")
    throw errors.mongo("Currently only 'approximate' can be used as percentile 'method'.");
  if (single) return { input: spec.input, p: [0.5], single };
  if (!isConstantExpression(spec.p))
    throw errors.mongo(
      `The $percentile 'p' field must be an array of constant values, but found value: ${bsonElementText("p", spec.p)}.`,
    );
  const p = evalExpr({}, spec.p, options as never) as unknown;
  const prefix = "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: ";
  if (!Array.isArray(p) || p.length === 0) throw errors.mongo(`${prefix}${valueText(p)}`);
  const numbers: number[] = [];
  for (const element of p) {
    if (!isNumeric(element)) throw errors.mongo(`${prefix}${valueText(element)}`);
    const x = doubleOf(element);
    if (x < 0 || x > 1) throw errors.mongo(`${prefix}${shellText(x)}`);
    numbers.push(x);
  }
  return { input: spec.input, p: numbers, single };
}

/** Every accumulator MongoDB 8.0 knows. */
const accumulatorNames = new Set([
  "$sum",
  "$avg",
  "$first",
  "$last",
  "$max",
  "$min",
  "$push",
  "$addToSet",
  "$mergeObjects",
  "$stdDevPop",
  "$stdDevSamp",
  "$count",
  "$accumulator",
  ...nFamily,
  ...sortedFamily,
  ...quantiles,
]);

/**
 * A `$group` output field's specification checked as MongoDB parses it, in its order: an
 * accumulator object, a plain field name, one accumulator, not an array, a known one, then its
 * own arguments. Answers the accumulator's name and argument.
 */
export function parseAccumulator(field: string, spec: unknown, options: unknown): { name: string; argument: unknown } {
  const keys = isDocument(spec) ? keysOf(spec) : [];
  if (!isDocument(spec) || keys.length === 0 || !keys[0]!.startsWith("$"))
    throw errors.mongo(`The field '${field}' must be an accumulator object`);
  if (field.includes(".")) throw errors.mongo(`The field name '${field}' cannot contain '.'`);
  if (field.startsWith("$")) throw errors.mongo(`The field name '${field}' cannot be an operator name`);
  if (keys.length > 1) throw errors.mongo(`The field '${field}' must specify one accumulator`);
  const name = keys[0]!;
  const argument = spec[name];
  if (Array.isArray(argument)) throw errors.mongo(`The ${name} accumulator is a unary operator`);
  if (!accumulatorNames.has(name)) throw errors.mongo(`unknown group operator '${name}'`);
  if (name === "$count" && !(isDocument(argument) && keysOf(argument).length === 0))
    throw errors.mongo("$count takes no arguments, i.e. $count:{}");
  if (name === "$accumulator") throw errors.mongo("$accumulator is not allowed in this context");
  if (nFamily.has(name)) nArguments(name, argument);
  if (sortedFamily.has(name)) sortedArguments(name, argument);
  if (quantiles.has(name)) quantileArguments(name, argument, options);
  return { name, argument };
}

// ---------------------------------------------------------------------------------------------
// `n`

/** `n` checked as MongoDB's AccumulatorN::validateN checks it. */
function countOf(n: unknown): number {
  if (!isNumeric(n)) throw errors.mongo(`Value for 'n' must be of integral type, but found ${valueText(n)}`);
  const integral = isLong(n) || isDecimal(n) ? Number.isInteger(doubleOf(n)) : Number.isInteger(n);
  if (!integral) throw errors.mongo(`Value for 'n' must be of integral type, but found ${valueText(n)}`);
  const count = doubleOf(n);
  if (count <= 0) throw errors.mongo(`'n' must be greater than 0, found ${valueText(n)}`);
  return count;
}

/**
 * A group's `n`: evaluated against its `_id` when that is a document (so `n` may name the key's
 * fields), else against an empty document, as MongoDB evaluates an accumulator's initializer.
 */
function groupN(expr: unknown, options: unknown): number {
  const groupId = (options as { local?: { groupId?: unknown } } | null)?.local?.groupId;
  const idDoc = isDocument(groupId) ? groupId : {};
  const keyed = computeOptionsClass(options)?.init(options).update({ root: idDoc }) ?? options;
  return countOf(evalExpr(idDoc, expr, keyed as never));
}

// ---------------------------------------------------------------------------------------------
// The accumulators (mingo's signature: the group's documents, the argument, the options)

/** The first `n` of `values` in order (`$firstN`; missing values as null). */
const firstN = (values: readonly unknown[], n: number) => values.slice(0, n).map((v) => (v === undefined ? null : v));
const lastN = (values: readonly unknown[], n: number) =>
  values.slice(Math.max(0, values.length - n)).map((v) => (v === undefined ? null : v));
/** `$minN` / `$maxN`: the n least (greatest) non-null values, least (greatest) first; ties keep the earlier. */
function extremesN(values: readonly unknown[], n: number, direction: 1 | -1): unknown[] {
  const kept = values.filter((v) => !nullish(v));
  const order = kept.map((_, i) => i).sort((a, b) => compareBson(kept[b], kept[a]) * direction || a - b);
  return order.slice(0, n).map((i) => kept[i]);
}

/**
 * `$topN` / `$bottomN` over a group's documents: the outputs of the first (last) n by `sortBy`, in
 * its order; among equal keys the documents met first are kept and keep their order.
 */
function sortedOutputs(
  collection: readonly unknown[],
  args: { output: unknown; sortBy: SortBy },
  n: number,
  bottom: boolean,
  options: unknown,
): unknown[] {
  const { paths, directions } = args.sortBy;
  const keys = collection.map((doc) => sortKeyOf(doc, paths, directions));
  const ascending = (a: number, b: number) => compareKeys(keys[a]!, keys[b]!, directions);
  const places = collection.map((_, i) => i);
  const chosen = bottom
    ? places
        .sort((a, b) => -ascending(a, b) || a - b)
        .slice(0, n)
        .sort((a, b) => ascending(a, b) || a - b)
    : places.sort((a, b) => ascending(a, b) || a - b).slice(0, n);
  const outputs = valuesOf(
    chosen.map((i) => collection[i]),
    args.output,
    options,
  );
  return outputs.map((value) => (value === undefined ? null : value));
}

const nAccumulator =
  (name: string, take: (values: readonly unknown[], n: number) => unknown[]): AnyFn =>
  (collection, expr, options) => {
    const { n, input } = nArguments(name, expr);
    const count = groupN(n, options);
    return take(valuesOf(collection, input, options), count);
  };

const sortedAccumulator =
  (name: string, bottom: boolean, single: boolean): AnyFn =>
  (collection, expr, options) => {
    const args = sortedArguments(name, expr);
    const outputs = sortedOutputs(collection, args, single ? 1 : groupN(args.n, options), bottom, options);
    return single ? (outputs[0] ?? null) : outputs;
  };

const quantileAccumulator =
  (name: string): AnyFn =>
  (collection, expr, options) => {
    const { input, p, single } = quantileArguments(name, expr, options);
    const sorted = sortedNumbers(valuesOf(collection, input, options));
    const answers = p.map((q) => percentileOf(sorted, q));
    return single ? answers[0] : answers;
  };

const over =
  (fn: (values: unknown[]) => unknown): AnyFn =>
  (collection, expr, options) =>
    fn(valuesOf(collection, expr, options));

/** The first (last) document's value, missing as null. */
const end =
  (last: boolean): AnyFn =>
  (collection: unknown[], expr, options) =>
    collection.length === 0
      ? null
      : (valuesOf(last ? collection.slice(-1) : collection.slice(0, 1), expr, options)[0] ?? null);

/** The accumulators, for the engine's table. */
export const accumulators: Record<string, AnyFn> = {
  $sum: over(sumOf),
  $avg: over(averageOf),
  $first: end(false),
  $last: end(true),
  $max: over((values) => extremeOf(values, 1)),
  $min: over((values) => extremeOf(values, -1)),
  $push: over((values) => values.filter((v) => v !== undefined)),
  $addToSet: over(setOf),
  $mergeObjects: over(mergedOf),
  $stdDevPop: over((values) => deviationOf(values, false)),
  $stdDevSamp: over((values) => deviationOf(values, true)),
  $count: (collection: unknown[]) => collection.length,
  $firstN: nAccumulator("$firstN", firstN),
  $lastN: nAccumulator("$lastN", lastN),
  $minN: nAccumulator("$minN", (values, n) => extremesN(values, n, -1)),
  $maxN: nAccumulator("$maxN", (values, n) => extremesN(values, n, 1)),
  $top: sortedAccumulator("$top", false, true),
  $bottom: sortedAccumulator("$bottom", true, true),
  $topN: sortedAccumulator("$topN", false, false),
  $bottomN: sortedAccumulator("$bottomN", true, false),
  $median: quantileAccumulator("$median"),
  $percentile: quantileAccumulator("$percentile"),
};

// ---------------------------------------------------------------------------------------------
// Expression forms

/**
 * The values an accumulator's expression form takes, as MongoDB's ExpressionFromAccumulator
 * takes them: one argument that is an array gives its elements, otherwise each argument is one
 * value (arrays among several left whole).
 */
function expressionValues(obj: unknown, expr: unknown, options: unknown): unknown[] {
  if (Array.isArray(expr) && expr.length !== 1) return expr.map((arg) => evalExpr(obj, arg, options as never));
  const value = evalExpr(obj, Array.isArray(expr) ? expr[0] : expr, options as never) as unknown;
  return Array.isArray(value) ? value : [value];
}

/**
 * An expression form, or its accumulator where mingo evaluates an accumulator's object over a
 * group's documents (its own stages, `$sortByCount`'s group, do: an expression's root is never an
 * array).
 */
const expressionOf =
  (name: string, fn: AnyFn): AnyFn =>
  (obj, expr, options) =>
    Array.isArray(obj) ? accumulators[name]!(obj, expr, options) : fn(obj, expr, options);

const fromValues = (name: string, fn: (values: unknown[]) => unknown): AnyFn =>
  expressionOf(name, (obj, expr, options) => fn(expressionValues(obj, expr, options)));

/** `{$firstN: {n, input}}` and the like over an array: `n` of the current document, `input` an array. */
const nExpression = (name: string, take: (values: readonly unknown[], n: number) => unknown[]): AnyFn =>
  expressionOf(name, (obj, expr, options) => {
    const { n, input } = nArguments(name, expr);
    const count = countOf(evalExpr(obj, n, options as never));
    const values = evalExpr(obj, input, options as never) as unknown;
    if (!Array.isArray(values)) throw errors.mongo("Input must be an array");
    return take(values, count);
  });

/** `{$percentile: …}` / `{$median: …}` of one value or of an array's numbers. */
const quantileExpression = (name: string): AnyFn =>
  expressionOf(name, (obj, expr, options) => {
    const { input, p, single } = quantileArguments(name, expr, options);
    const value = evalExpr(obj, input, options as never) as unknown;
    const sorted = Array.isArray(value) ? sortedNumbers(value) : sortedNumbers([value]);
    const answers = p.map((q) => percentileOf(sorted, q));
    return single ? answers[0] : answers;
  });

/** The expression forms, for the engine's expression table. */
export const accumulatorExpressions: Record<string, AnyFn> = {
  $sum: fromValues("$sum", sumOf),
  $avg: fromValues("$avg", averageOf),
  $max: fromValues("$max", (values) => extremeOf(values, 1)),
  $min: fromValues("$min", (values) => extremeOf(values, -1)),
  $stdDevPop: fromValues("$stdDevPop", (values) => deviationOf(values, false)),
  $stdDevSamp: fromValues("$stdDevSamp", (values) => deviationOf(values, true)),
  $mergeObjects: fromValues("$mergeObjects", mergedOf),
  $firstN: nExpression("$firstN", firstN),
  $lastN: nExpression("$lastN", lastN),
  $minN: nExpression("$minN", (values, n) => extremesN(values, n, -1)),
  $maxN: nExpression("$maxN", (values, n) => extremesN(values, n, 1)),
  $median: quantileExpression("$median"),
  $percentile: quantileExpression("$percentile"),
};
