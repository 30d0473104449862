/**
 * Guards around the mingo operators whose work grows faster than what they build, or that work on
 * values nobody sized: comparisons (mingo sorts copies of arrays to compare them), sets and group
 * keys (hashing, and a hash map whose crafted collisions make it quadratic), sorts, joins. Each
 * guard evaluates the operator's inputs first, checks their logical size (query-limits.ts
 * `checkValue`) and weighs the work before it starts (`heavy`): on the main thread that moves a
 * large one to a worker; in a worker it counts towards the deadline, and the worker's hard timeout
 * ends whatever a weight missed. See docs/decisions/0019-evaluation-off-the-main-thread.md.
 */
import { evalExpr } from "mingo/core";
import { Lazy } from "mingo/lazy";
import * as accumulatorOperators from "mingo/operators/accumulator";
import { resolve } from "mingo/util";
import { type Document, isDocument } from "./documents.ts";
import { checkValue, countCompositeKey, heavy } from "./query-limits.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;
export type OperatorMap = Record<string, AnyFn>;

const literal = (value: unknown) => ({ $literal: value });

/** Elements a value of this logical size holds, about (8 bytes each at the least). */
const elementsOf = (bytes: number) => Math.ceil(bytes / 8);

const isComposite = (value: unknown) => value !== null && typeof value === "object" && !(value instanceof Date);

/** n·log₂n: a sort of n elements (or a comparison that sorts copies of arrays of n). */
export const sortWork = (n: number) => (n < 2 ? n : n * Math.log2(n));

/**
 * Work of hashing `values` into a set: linear in their size, quadratic in how many are documents or
 * arrays (mingo's hash map compares every colliding key, and keys can be crafted to collide).
 */
function setWork(values: unknown[], bytes: number): number {
  let composite = 0;
  for (const v of values) if (isComposite(v)) composite++;
  return elementsOf(bytes) + composite * composite;
}

/** The operator's arguments evaluated, sized and weighed, then handed to it as literals. */
function evaluated(name: string, fn: AnyFn, work: (args: unknown[], bytes: number) => number): AnyFn {
  return (obj: unknown, expr: unknown, options: unknown) => {
    if (!Array.isArray(expr)) {
      const value = evalExpr(obj, expr, options as never) as unknown;
      const bytes = checkValue(value, name);
      heavy(work(Array.isArray(value) ? value : [value], bytes), name);
      return fn(obj, literal(value), options);
    }
    const args = evalExpr(obj, expr, options as never) as unknown[];
    let bytes = 0;
    for (const arg of args) bytes += checkValue(arg, name);
    heavy(work(args, bytes), name);
    return fn(obj, args.map(literal), options);
  };
}

/**
 * An operator taking named arguments (`{input, …}`), its input evaluated, sized and weighed. Given
 * a group's documents (`$group` finds `$firstN` and the like among the expressions first), it is
 * the accumulator: each document's input is its own, weighed by the group's size.
 */
function evaluatedInput(name: string, fn: AnyFn, work: (input: unknown[], bytes: number) => number): AnyFn {
  return (obj: unknown, expr: unknown, options: unknown) => {
    if (!isDocument(expr) || !("input" in expr)) return fn(obj, expr, options);
    if (Array.isArray(obj)) {
      heavy(work(obj, 0), name);
      return fn(obj, expr, options);
    }
    const input = evalExpr(obj, expr.input, options as never) as unknown;
    const bytes = checkValue(input, name);
    heavy(work(Array.isArray(input) ? input : [], bytes), name);
    return fn(obj, { ...expr, input: literal(input) }, options);
  };
}

const comparison = (_: unknown[], bytes: number) => sortWork(elementsOf(bytes));
const equality = (_: unknown[], bytes: number) => elementsOf(bytes);
const set = (args: unknown[], bytes: number) =>
  setWork(
    args.flatMap((a) => (Array.isArray(a) ? a : [a])),
    bytes,
  );

/** Expression operators wrapped with the guard that fits their work. */
export function guardExpressionOperators(ops: OperatorMap): OperatorMap {
  const out = { ...ops };
  const wrap = (names: string[], work: (args: unknown[], bytes: number) => number) => {
    for (const name of names) if (ops[name]) out[name] = evaluated(name, ops[name], work);
  };
  wrap(["$cmp", "$gt", "$gte", "$lt", "$lte", "$max", "$min"], comparison);
  wrap(["$eq", "$ne", "$in", "$indexOfArray", "$toHashedIndexKey"], equality);
  wrap(["$setUnion", "$setIntersection", "$setDifference", "$setEquals", "$setIsSubset"], set);
  for (const name of ["$sortArray", "$maxN", "$minN", "$median", "$percentile"]) {
    if (ops[name])
      out[name] = evaluatedInput(name, ops[name], (input, bytes) => sortWork(input.length) + elementsOf(bytes));
  }
  for (const name of ["$firstN", "$lastN"]) {
    if (ops[name]) out[name] = evaluatedInput(name, ops[name], (_, bytes) => elementsOf(bytes));
  }
  return out;
}

/** A group key (`$group`'s `_id`, `$bucket`'s `groupBy`, a window's `partitionBy`), sized before it is hashed. */
export const groupKeyOperator = "$mockGroupKey";

export function groupKey(obj: unknown, expr: unknown, options: unknown): unknown {
  const key = evalExpr(obj, expr, options as never) as unknown;
  sizeGroupKey(key);
  return key;
}

/** A group key sized and weighed before it is hashed (the `$group` stage's own keys too). */
export function sizeGroupKey(key: unknown): void {
  if (!isComposite(key)) return;
  const bytes = checkValue(key, "$group");
  // A key compared with every colliding one before it: counted as if all collided.
  heavy(countCompositeKey() + elementsOf(bytes), "$group");
}

/**
 * Accumulators: `{$op: expr}` evaluated per document here, the values sized and weighed, then given
 * to the accumulator as documents of one field (it evaluates `"$v"` on each). The others are
 * weighed by their group's size (those that sort it, `$topN`, `$percentile`…, by n·log n).
 */
export function guardAccumulators(ops: OperatorMap): OperatorMap {
  const out: OperatorMap = {};
  // mingo's own $push (a missing value as null, as $first and $last want it): the engine's leaves
  // missing values out, and its $push and $addToSet (accumulators.ts) are weighed by the group's size.
  const push = (accumulatorOperators as unknown as OperatorMap).$push!;
  const simple = new Set(["$max", "$min", "$first", "$last", "$mergeObjects"]);
  const sorting = new Set([
    "$max",
    "$min",
    "$top",
    "$topN",
    "$bottom",
    "$bottomN",
    "$maxN",
    "$minN",
    "$median",
    "$percentile",
  ]);
  for (const [name, fn] of Object.entries(ops)) {
    const work = (n: number) => (sorting.has(name) ? sortWork(n) : n);
    out[name] = (collection: unknown[], expr: unknown, options: unknown) => {
      if (!simple.has(name) || expr === null || expr === undefined) {
        heavy(work(collection.length), name);
        return fn(collection, expr, options);
      }
      // mingo's own $push: each document's value, evaluated with the document as its root.
      const values = push(collection, expr, options) as unknown[];
      const bytes = checkValue(values, name);
      heavy(name === "$addToSet" ? setWork(values, bytes) : work(values.length) + elementsOf(bytes), name);
      return fn(
        values.map((v) => ({ v })),
        "$v",
        options,
      );
    };
  }
  return out;
}

interface LazyLike {
  collect(): unknown[];
}

/** The documents a stage sorts by `spec`: weighed by their number and by the keys' size and kind. */
export function weighSort(docs: unknown[], spec: unknown, operator: string): void {
  if (!isDocument(spec)) return;
  let composite = 0;
  let keyBytes = 0;
  for (const field of Object.keys(spec)) {
    for (const doc of docs) {
      const key = resolve(doc as Document, field);
      if (isComposite(key)) {
        composite++;
        keyBytes += checkValue(key, operator);
      }
    }
  }
  // Composite keys are hashed into groups first (quadratic when they collide), then compared by
  // sorting copies of arrays.
  heavy(sortWork(docs.length) + composite * composite + sortWork(elementsOf(keyBytes)), operator);
}

/** References to values in a stage's specification (`"$field"`, `"$$var"`, operators): its fan-out. */
function references(spec: unknown, limit = 1_000_000): number {
  if (typeof spec === "string") return spec.startsWith("$") ? 1 : 0;
  if (spec === null || typeof spec !== "object") return 0;
  let n = 0;
  if (Array.isArray(spec)) {
    for (const item of spec) {
      n += references(item, limit);
      if (n > limit) break;
    }
    return n;
  }
  for (const key of Object.keys(spec)) {
    if (key.startsWith("$")) n++;
    n += references((spec as Document)[key], limit);
    if (n > limit) break;
  }
  return n;
}

/**
 * Stages that build documents out of their input (`$project`, `$addFields`, …) walk what they
 * build (mingo copies or filters the whole result), and `$facet` copies its input for each facet:
 * each document is weighed by its size times the references the stage makes to it.
 */
const fanningOut = ["$project", "$addFields", "$set", "$replaceRoot", "$replaceWith", "$facet", "$redact"];

/** Pipeline stages that sort, group, join, search or fan out, weighed before they start. */
export function guardPipelineOperators(ops: OperatorMap): OperatorMap {
  const out = { ...ops };
  for (const name of fanningOut) {
    const fn = ops[name];
    if (!fn) continue;
    out[name] = (collection: { map(f: (doc: unknown) => unknown): unknown }, expr: unknown, options: unknown) => {
      const fanOut = references(expr);
      return fn(
        collection.map((doc) => {
          heavy(fanOut * (elementsOf(checkValue(doc, name)) + 8), name);
          return doc;
        }),
        expr,
        options,
      );
    };
  }
  const materialized =
    (name: string, weigh: (docs: unknown[], expr: Document, options: unknown) => void) =>
    (collection: LazyLike, expr: unknown, options: unknown) => {
      const docs = collection.collect();
      if (isDocument(expr)) weigh(docs, expr, options);
      return ops[name]!(Lazy(docs), expr, options);
    };
  out.$sort = materialized("$sort", (docs, spec) => weighSort(docs, spec, "$sort"));
  out.$bucketAuto = materialized("$bucketAuto", (docs) => heavy(sortWork(docs.length), "$bucketAuto"));
  out.$setWindowFields = materialized("$setWindowFields", (docs, spec) => {
    if (spec.sortBy !== undefined) weighSort(docs, spec.sortBy, "$setWindowFields");
  });
  const resolver = (options: unknown) =>
    (options as { collectionResolver?: (name: string) => unknown[] }).collectionResolver;
  out.$lookup = (collection: LazyLike, expr: unknown, options: unknown) => {
    if (isDocument(expr) && typeof expr.from === "string" && typeof expr.foreignField === "string") {
      const from = resolver(options)?.(expr.from) ?? [];
      let composite = 0;
      for (const doc of from) if (isComposite(resolve(doc as Document, expr.foreignField))) composite++;
      heavy(from.length + composite * composite, "$lookup");
    }
    return ops.$lookup!(collection, expr, options);
  };
  out.$graphLookup = materialized("$graphLookup", (docs, expr, options) => {
    const from = typeof expr.from === "string" ? (resolver(options)?.(expr.from) ?? []) : [];
    const depth = typeof expr.maxDepth === "number" ? Math.min(expr.maxDepth + 1, from.length) : from.length;
    // Each document searches the collection once per level.
    heavy(docs.length * from.length * Math.max(1, depth), "$graphLookup");
  });
  // Group keys are sized (and counted) before they are hashed.
  const keyed = (name: string, field: string) => (collection: LazyLike, expr: unknown, options: unknown) =>
    ops[name]!(
      collection,
      isDocument(expr) && field in expr ? { ...expr, [field]: { [groupKeyOperator]: expr[field] } } : expr,
      options,
    );
  out.$group = keyed("$group", "_id");
  out.$bucket = keyed("$bucket", "groupBy");
  const setWindowFields = out.$setWindowFields;
  out.$setWindowFields = (collection: LazyLike, expr: unknown, options: unknown) =>
    setWindowFields(
      collection,
      isDocument(expr) && "partitionBy" in expr
        ? { ...expr, partitionBy: { [groupKeyOperator]: expr.partitionBy } }
        : expr,
      options,
    );
  out.$sortByCount = (collection: LazyLike, expr: unknown, options: unknown) =>
    ops.$sortByCount!(collection, { [groupKeyOperator]: expr }, options);
  return out;
}

/**
 * Query operators whose literal makes each document's test large: a list of documents or arrays
 * (`$in`, `$nin`, `$all`: hashed or compared element by element), or an array or document compared
 * (`$eq`, `$gt`, …: mingo sorts copies of arrays to compare them). Decided once, when the query
 * is compiled: such a query runs in a worker.
 */
export function guardQueryOperators(ops: OperatorMap): OperatorMap {
  const out = { ...ops };
  const many = (value: unknown) =>
    Array.isArray(value) ? value.filter(isComposite).length * Math.max(1, value.length) : 0;
  for (const name of ["$in", "$nin", "$all"]) {
    const fn = ops[name]!;
    out[name] = (selector: string, value: unknown, options: unknown) => {
      const composite = many(value);
      if (composite > 0 || (name === "$all" && Array.isArray(value))) {
        const bytes = checkValue(value, name);
        heavy(composite * 64 + (name === "$all" ? (value as unknown[]).length * 64 : 0) + elementsOf(bytes), name);
      }
      return fn(selector, value, options);
    };
  }
  for (const name of ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]) {
    const fn = ops[name]!;
    out[name] = (selector: string, value: unknown, options: unknown) => {
      if (isComposite(value)) heavy(sortWork(elementsOf(checkValue(value, name))) * 64, name);
      return fn(selector, value, options);
    };
  }
  return out;
}
