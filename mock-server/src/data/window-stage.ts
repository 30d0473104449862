/**
 * `$setWindowFields` ordered by MongoDB's sort (sort-keys.ts) rather than mingo's comparison of
 * BSON values, which ranked a Decimal128 price of 9 after 100. Each document gets its place in
 * MongoDB's order (equal keys sharing one) in a field of its own, mingo's stage sorts and ranks by
 * that, and the field is taken out again. Windows over the sort's values (`range`, a time `unit`,
 * `$derivative`, `$integral`, `$linearFill`) need the values themselves and stay mingo's stage,
 * a range window's values read at their path into a field of their own (`rangeWindows`), and
 * `$linearFill` ours (below).
 */
import { evalExpr } from "mingo/core";
import { Lazy } from "mingo/lazy";
import * as pipelineOperators from "mingo/operators/pipeline";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { computeOptionsClass, valuesOf } from "./accumulators.ts";
import { withValueAt } from "./add-fields.ts";
import { isNaNValue } from "./bson-operators.ts";
import { bsonTypeAlias, compareBson, equalityKey } from "./bson-order.ts";
import { type Unit, unitMs } from "./date-operators.ts";
import { type Document, isDocument } from "./documents.ts";
import { checkFill } from "./fill-spec.ts";
import { doubleOf, isNumeric } from "./numeric-operators.ts";
import { step } from "./query-limits.ts";
import { compareKeys, sortKeyOf } from "./sort-keys.ts";
import { keysOf } from "./wide-keys.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

const mingoWindows = (pipelineOperators as unknown as Record<string, AnyFn>).$setWindowFields!;

/** The field holding a document's place (a request's field names cannot hold its control character). */
const placeField = "\u0001place";

const byValue = new Set(["$derivative", "$integral", "$linearFill"]);

/** Whether an output reads the sort's values (not only its order). */
function readsValues(output: unknown): boolean {
  if (!isDocument(output)) return true;
  return keysOf(output).some((field) => {
    const spec = output[field];
    if (!isDocument(spec)) return true;
    const window = spec.window;
    if (isDocument(window) && ("range" in window || "unit" in window)) return true;
    return keysOf(spec).some((op) => byValue.has(op));
  });
}

/** The field holding a document's partition key (as `placeField`, a name no request can hold). */
const partitionField = "\u0001partition";

/** A value without the stage's own fields (`hidden`) in any document copied into it (`$push: "$$ROOT"`). */
function withoutPlace(value: unknown, hidden: readonly string[] = [placeField]): unknown {
  if (Array.isArray(value)) return value.map((element) => withoutPlace(element, hidden));
  if (!isDocument(value)) return value;
  if (!hidden.some((field) => field in value) && !keysOf(value).some((k) => typeof value[k] === "object")) return value;
  const out: Document = {};
  for (const key of keysOf(value)) if (!hidden.includes(key)) out[key] = withoutPlace(value[key], hidden);
  return out;
}

/**
 * `$setWindowFields`, its dotted outputs (`"a.b"`) computed under names of their own and then set
 * at their paths, copying what changes (mingo's set nothing into the stored, frozen documents).
 */
export const windowStage: AnyFn = (collection, given, options) => {
  const expr = isDocument(given) ? withPlainBounds(given, options) : given;
  if (!isDocument(expr) || expr.partitionBy === undefined) return dottedWindows(collection, expr, options);
  return partitioned(collection, expr, options);
};

/**
 * The stage with its outputs' windows as mingo reads them: an empty `window` (MongoDB's default
 * bounds) left out, and each bound a plain number — a constant expression evaluated, a Long or a
 * Decimal128 as a double (mingo took those for "unbounded"). window-spec.ts checked them.
 */
function withPlainBounds(expr: Document, options: unknown): Document {
  if (!isDocument(expr.output)) return expr;
  const output: Document = {};
  for (const field of keysOf(expr.output)) {
    const spec = withPlainSmoothing(expr.output[field]);
    const window = isDocument(spec) ? spec.window : undefined;
    if (!isDocument(spec) || !isDocument(window)) {
      output[field] = spec;
      continue;
    }
    const { window: _, ...rest } = spec;
    if (keysOf(window).length === 0) {
      output[field] = rest;
      continue;
    }
    const plain: Document = { ...window };
    for (const kind of ["documents", "range"])
      if (Array.isArray(window[kind]))
        plain[kind] = (window[kind] as unknown[]).map((value) => {
          const number = isDocument(value) ? evalExpr({}, value, options as never) : value;
          return isNumeric(number) ? doubleOf(number) : number;
        });
    output[field] = { ...rest, window: plain };
  }
  return { ...expr, output };
}

/**
 * An `$expMovingAvg`'s `N` or `alpha` written as a Long or a Decimal128, as a number: mingo
 * refused them ("found alpha: [object Object]"). (MongoDB computes in Decimal128; over doubles
 * its answer is a double, as here.)
 */
function withPlainSmoothing(spec: unknown): unknown {
  if (!isDocument(spec) || !isDocument(spec.$expMovingAvg)) return spec;
  const smoothing: Document = { ...spec.$expMovingAvg };
  for (const key of ["N", "alpha"]) if (isNumeric(smoothing[key])) smoothing[key] = doubleOf(smoothing[key]);
  return { ...spec, $expMovingAvg: smoothing };
}

/** The field holding a document's sort value for range windows (a name no request can hold). */
const valueField = "\u0001value";

/** Which range windows the outputs have: by numbers, by time (a `unit`). */
function rangeKinds(output: unknown): { numbers: boolean; times: boolean } {
  const kinds = { numbers: false, times: false };
  if (!isDocument(output)) return kinds;
  for (const field of keysOf(output)) {
    const window = isDocument(output[field]) ? (output[field] as Document).window : undefined;
    if (!isDocument(window) || !("range" in window)) continue;
    if ("unit" in window) kinds.times = true;
    else kinds.numbers = true;
  }
  return kinds;
}

/**
 * Range windows over the sort field's value, as MongoDB reads it: at its path (`"a.b"`; mingo read
 * a top-level field of that name, so every window was empty), a Long or a Decimal128 as a number
 * (mingo's arithmetic skipped them), and refused when it is not what the window needs (MongoDB's
 * run-time texts). The value is set in a field of its own, which the stage sorts by and reads.
 */
function rangeWindows(
  collection: unknown,
  expr: Document,
  options: unknown,
  kinds: { numbers: boolean; times: boolean },
) {
  const [field] = keysOf(expr.sortBy as Document);
  const direction = (expr.sortBy as Document)[field!];
  return (collection as { transform(f: (docs: unknown[]) => unknown): unknown }).transform((docs) => {
    const values = valuesOf(docs, `$${field}`, options);
    const valued = (docs as Document[]).map((doc, i) => {
      step();
      const value = values[i];
      if (kinds.numbers) {
        if (value instanceof Date)
          throw errors.mongo("Invalid range: For windows that involve date or time ranges, a unit must be provided.");
        if (!isNumeric(value))
          throw errors.mongo(
            `Invalid range: Expected the sortBy field to be a number, but it was ${bsonTypeAlias(value)}`,
          );
      }
      if (kinds.times && !(value instanceof Date))
        throw errors.mongo(`Invalid range: Expected the sortBy field to be a Date, but it was ${bsonTypeAlias(value)}`);
      return { ...doc, [valueField]: isNumeric(value) ? doubleOf(value) : value };
    });
    const windowed = mingoWindows(Lazy(valued), { ...expr, sortBy: { [valueField]: direction } }, options) as {
      collect(): unknown[];
    };
    return Lazy(windowed.collect().map((doc) => withoutPlace(doc, [valueField])));
  });
}

/**
 * `$setWindowFields` with `partitionBy`, as MongoDB desugars it: partitions by their key's value
 * (1, a Long 1 and a Decimal128 1.0 one partition; null and missing one), answered in the order of
 * their keys (MongoDB sorts by the key, then `sortBy`); a key that is an array is refused. mingo's
 * grouped keys by type and answered partitions in the order it first met them.
 */
const partitioned: AnyFn = (collection, expr, options) => {
  const make = computeOptionsClass(options);
  return (collection as { transform(f: (docs: unknown[]) => unknown): unknown }).transform((input) => {
    const values = new Map<string, unknown>();
    const keyed = (input as Document[]).map((doc) => {
      step();
      const local = make ? make.init(options).update({ root: doc }) : options;
      const value = evalExpr(doc, expr.partitionBy, local as never) ?? null;
      if (Array.isArray(value))
        throw errors.mongo("An expression used to partition cannot evaluate to value of type array");
      const key = equalityKey(value);
      if (!values.has(key)) values.set(key, value);
      return { ...doc, [partitionField]: key };
    });
    const windowed = (
      dottedWindows(Lazy(keyed), { ...expr, partitionBy: `$${partitionField}` }, options) as { collect(): Document[] }
    ).collect();
    // (A stable sort: each partition keeps its documents' order.)
    const ordered = windowed
      .map((doc, place) => ({ doc, place, value: values.get(doc[partitionField] as string) }))
      .sort((a, b) => compareBson(a.value, b.value) || a.place - b.place);
    return Lazy(ordered.map(({ doc }) => withoutPlace(doc, [partitionField])));
  });
};

const dottedWindows: AnyFn = (collection, expr, options) => {
  const dotted =
    isDocument(expr) && isDocument(expr.output) ? keysOf(expr.output).filter((key) => key.includes(".")) : [];
  if (dotted.length === 0) return orderedWindows(collection, expr, options);
  const spec = expr as Document;
  const names = new Map(dotted.map((path, i) => [path, `\u0001output${i}`]));
  const output: Document = {};
  for (const key of keysOf(spec.output as Document)) output[names.get(key) ?? key] = (spec.output as Document)[key];
  return (
    orderedWindows(collection, { ...spec, output }, options) as { map(f: (doc: Document) => unknown): unknown }
  ).map((doc) => {
    let out: Document = doc;
    for (const [path, name] of names) {
      const { [name]: value, ...rest } = out;
      out = value === undefined ? rest : (withValueAt(rest, path.split("."), value) as Document);
    }
    return out;
  });
};

const orderedWindows: AnyFn = (collection, expr, options) => {
  if (!isDocument(expr) || !isDocument(expr.sortBy) || keysOf(expr.sortBy).length === 0)
    return mingoWindows(collection, expr, options);
  if (readsValues(expr.output)) {
    const kinds = rangeKinds(expr.output);
    if ((kinds.numbers || kinds.times) && keysOf(expr.sortBy).length === 1)
      return rangeWindows(collection, expr, options, kinds);
    return mingoWindows(collection, expr, options);
  }
  const fields = keysOf(expr.sortBy);
  const paths = fields.map((field) => field.split("."));
  const directions = fields.map((field) => ((expr.sortBy as Document)[field] === -1 ? -1 : 1)) as (1 | -1)[];
  return (collection as { transform(f: (docs: unknown[]) => unknown): unknown }).transform((docs) => {
    const keys = docs.map((doc) => sortKeyOf(doc, paths, directions));
    const order = docs.map((_, i) => i).sort((a, b) => compareKeys(keys[a]!, keys[b]!, directions) || a - b);
    const places: number[] = new Array(docs.length);
    let place = 0;
    order.forEach((index, n) => {
      step();
      if (n > 0 && compareKeys(keys[order[n - 1]!]!, keys[index]!, directions) !== 0) place++;
      places[index] = place;
    });
    const placed = docs.map((doc, i) => ({ ...(doc as Document), [placeField]: places[i] }));
    const windowed = mingoWindows(Lazy(placed), { ...expr, sortBy: { [placeField]: 1 } }, options) as {
      collect(): unknown[];
    };
    return Lazy(windowed.collect().map((doc) => withoutPlace(doc)));
  });
};

/** Each partition's filled values, by its documents (a window operator runs once per document). */
const linearFills = new WeakMap<unknown[], Map<string, unknown[]>>();

/**
 * `$linearFill`: a null or missing value between two numbers of the partition, in the sort's
 * order, interpolated on the sort field's value (a number or a date); one before the first number
 * or after the last stays null. mingo's read the number before the first one of a partition
 * (a partition starting with nulls answered a JavaScript TypeError).
 */
export const linearFill: AnyFn = (_obj, collection: unknown[], expr, options) => {
  let byField = linearFills.get(collection);
  if (!byField) {
    byField = new Map();
    linearFills.set(collection, byField);
  }
  let values = byField.get(expr.field);
  if (values === undefined) {
    const sortKey = `$${keysOf(expr.parentExpr.sortBy)[0]}`;
    const xs: number[] = [];
    const ys: (number | null)[] = [];
    values = collection.map((doc) => {
      step();
      const [x, y] = evalExpr(doc, [sortKey, expr.inputExpr], options) as [unknown, unknown];
      xs.push(x instanceof Date ? x.getTime() : isNumeric(x) ? doubleOf(x) : Number.NaN);
      // (A gap is null; a value that is no number bounds the gaps beside it, filled by nothing.)
      ys.push(y === null || y === undefined ? null : isNumeric(y) ? doubleOf(y) : Number.NaN);
      return y ?? null;
    });
    let before = -1;
    for (let i = 0; i < values.length; i++) {
      if (ys[i] !== null) {
        before = i;
        continue;
      }
      let after = i + 1;
      while (after < ys.length && ys[after] === null) after++;
      if (before < 0 || after >= ys.length) continue;
      const [x1, y1, x2, y2] = [xs[before]!, ys[before]!, xs[after]!, ys[after]!];
      const filled = y1 + (xs[i]! - x1) * ((y2 - y1) / (x2 - x1));
      if (!Number.isNaN(filled)) values[i] = filled;
    }
    byField.set(expr.field, values);
  }
  const value = values[expr.documentNumber - 1];
  if (expr.documentNumber === collection.length) {
    byField.delete(expr.field);
    if (byField.size === 0) linearFills.delete(collection);
  }
  return value;
};

/**
 * `$fill` as MongoDB desugars it: the fields filled by a method through `$setWindowFields`
 * (`$locf`, `$linearFill`), then those filled with a value through `$addFields` of
 * `{$ifNull: ["$field", value]}` — the emulator's own stages, given here (mingo's `$fill` ran
 * mingo's, so a dotted field was never filled and the sort was mingo's).
 */
export function fillStage(windows: AnyFn, addFields: AnyFn): AnyFn {
  return (collection, expr, options) => {
    checkFill(expr);
    const spec = expr as Document;
    const output = spec.output as Document;
    const methods: Document = {};
    const values: Document = {};
    for (const field of keysOf(output)) {
      const fill = output[field] as Document;
      if ("value" in fill) values[field] = { $ifNull: [`$${field}`, fill.value] };
      else methods[field] = { [fill.method === "linear" ? "$linearFill" : "$locf"]: `$${field}` };
    }
    const partitionBy =
      spec.partitionBy ??
      (Array.isArray(spec.partitionByFields)
        ? Object.fromEntries((spec.partitionByFields as string[]).map((field) => [field, `$${field}`]))
        : undefined);
    let out = collection;
    if (keysOf(methods).length > 0)
      out = windows(
        out,
        {
          ...(spec.sortBy !== undefined ? { sortBy: spec.sortBy } : {}),
          ...(partitionBy !== undefined ? { partitionBy } : {}),
          output: methods,
        },
        options,
      );
    if (keysOf(values).length > 0) out = addFields(out, values, options);
    return out;
  };
}

/**
 * `$shift`: the `output` of the document `by` places away in the partition; its `default` (null
 * without one) when there is none there, or its output is missing (shift.js). mingo's answered
 * nothing for a missing output.
 */
export const shift: AnyFn = (obj, collection: unknown[], expr, options) => {
  const { output, by, default: otherwise } = expr.inputExpr as Document;
  const at = expr.documentNumber - 1 + Number(by);
  const value = at >= 0 && at < collection.length ? evalExpr(collection[at], output, options) : undefined;
  if (value !== undefined) return value;
  return otherwise === undefined ? null : (evalExpr(obj, otherwise, options) ?? null);
};

/**
 * An operator answering null over a window of fewer than `least` documents (MongoDB's for an empty
 * window), mingo's otherwise: a window operator (its documents second) or an accumulator (first).
 */
export const nullWhenEmpty =
  (operator: AnyFn, kind: "window" | "accumulator", least = 1): AnyFn =>
  (...args: unknown[]) =>
    (args[kind === "window" ? 1 : 0] as unknown[]).length < least ? null : operator(...args);

/** MongoDB's arithmetic of two values (the engine's `$subtract`, `$add`, `$multiply`, `$divide`: types kept). */
const arithmetic = (operator: string, a: unknown, b: unknown, options: unknown): unknown =>
  evalExpr({}, { [operator]: [{ $literal: a }, { $literal: b }] }, options as never);

/**
 * `$derivative`, as MongoDB's WindowFunctionExecDerivative: the input's rise over the sort value's
 * run between the window's first and last documents (null for an empty window, or a run of 0: a
 * window of one), with a `unit` per that unit of time between dates. A unit needs dates, no unit
 * needs numbers, and the input at either end must be there. mingo computed over a date without a
 * unit, a number with one, and skipped a null input.
 */
export const derivative: AnyFn = (_obj, collection: unknown[], expr, options) => {
  if (collection.length === 0) return null;
  const { input, unit } = expr.inputExpr as { input: unknown; unit?: string };
  const sortKey = `$${keysOf(expr.parentExpr.sortBy)[0]}`;
  const [left, right] = [collection[0], collection.at(-1)];
  const leftTime = evalExpr(left, sortKey, options) as unknown;
  const rightTime = evalExpr(right, sortKey, options) as unknown;
  if (unit !== undefined) {
    if (!(leftTime instanceof Date && rightTime instanceof Date))
      throw errors.mongo("$derivative with 'unit' expects the sortBy field to be a Date");
  } else {
    if (leftTime instanceof Date || rightTime instanceof Date)
      throw errors.mongo("$derivative where the sortBy is a Date requires an 'unit'");
    if (!isNumeric(leftTime) || !isNumeric(rightTime))
      throw errors.mongo("$derivative (with no 'unit') expects the sortBy field to be numeric");
  }
  const run = arithmetic("$subtract", rightTime, leftTime, options);
  const rise = arithmetic(
    "$subtract",
    evalExpr(right, input, options) as unknown,
    evalExpr(left, input, options) as unknown,
    options,
  );
  if (rise === null || rise === undefined) throw errors.mongo("$derivative input must not be null or missing");
  let result: unknown;
  try {
    result = arithmetic("$divide", rise, run, options);
  } catch (error) {
    // A run of 0 (a window of one document) is no error: null.
    if ((error as Error).message === "can't $divide by zero") return null;
    throw error;
  }
  return unit === undefined ? result : arithmetic("$multiply", result, unitMs[unit as Unit], options);
};

const integralType =
  "The input value of $integral window function must be a vector of 2 value, the first value must be numeric or date type and the second must be numeric.";

/**
 * `$integral`, as MongoDB's WindowFunctionIntegral: the trapezoids' area under the input between
 * consecutive documents of the window (null for an empty one, 0 for one document, NaN with a NaN),
 * with a `unit` in that unit of time between dates. Each document's input must be a number and its
 * sort value a date with a unit, a number without. mingo took a null input, or a date without a
 * unit, as numbers.
 */
export const integral: AnyFn = (_obj, collection: unknown[], expr, options) => {
  if (collection.length === 0) return null;
  const { input, unit } = expr.inputExpr as { input: unknown; unit?: string };
  const sortKey = `$${keysOf(expr.parentExpr.sortBy)[0]}`;
  let total: unknown = 0;
  let nan = false;
  let previous: [unknown, unknown] | undefined;
  for (const doc of collection) {
    step();
    const x = evalExpr(doc, sortKey, options) as unknown;
    const y = evalExpr(doc, input, options) as unknown;
    if (!isNumeric(y) || !(isNumeric(x) || x instanceof Date)) throw errors.mongo(integralType);
    if (unit !== undefined && !(x instanceof Date))
      throw errors.mongo("$integral with 'unit' expects the sortBy field to be a Date");
    if (unit === undefined && !isNumeric(x))
      throw errors.mongo("$integral (with no 'unit') expects the sortBy field to be numeric");
    // (Past a NaN the answer is NaN: the rest is only checked.)
    if (isNaNValue(x) || isNaNValue(y)) nan = true;
    else if (previous && !nan) {
      const [x1, y1] = previous;
      const area = arithmetic(
        "$divide",
        arithmetic("$multiply", arithmetic("$add", y, y1, options), arithmetic("$subtract", x, x1, options), options),
        2,
        options,
      );
      total = arithmetic("$add", total, area, options);
    }
    previous = [x, y];
  }
  if (nan) return Number.NaN;
  return unit === undefined ? total : arithmetic("$divide", total, unitMs[unit as Unit], options);
};
