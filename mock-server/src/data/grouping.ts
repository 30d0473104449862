/**
 * Groups and sets by MongoDB's equality (bson-order.ts `equalityKey`): `$group`, the
 * accumulators `$push` and `$addToSet`, and the set expressions (`$setUnion` … `$setIsSubset`,
 * `$in`, `$indexOfArray`), and `$lookup`'s join of fields. mingo hashed values by their JavaScript form: 5 and a
 * Decimal128 5.0 made two groups, `{x: 1, y: 2}` and `{y: 2, x: 1}` one (MongoDB: one, and two);
 * and its `$push`/`$addToSet` took a missing value as null, which MongoDB leaves out.
 */
import { evalExpr } from "mingo/core";
import { Lazy } from "mingo/lazy";
import * as pipelineOperators from "mingo/operators/pipeline";
import { resolve } from "mingo/util";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { bsonTypeAlias, equalityKey } from "./bson-order.ts";
import { type Document, isDocument } from "./documents.ts";
import { checkBounds } from "./string-operators.ts";
import { keysOf } from "./wide-keys.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

/** mingo's options of a computation (its ComputeOptions, which the package does not export). */
interface ComputeOptions {
  update(locals: Record<string, unknown>): ComputeOptions;
}
type ComputeOptionsClass = { init(options: unknown): ComputeOptions };

/** The class of the options a stage was handed, when they are an instance of it. */
export function computeOptionsClass(options: unknown): ComputeOptionsClass | null {
  const made = (options as { constructor?: Partial<ComputeOptionsClass> } | null)?.constructor;
  return typeof made?.init === "function" ? (made as ComputeOptionsClass) : null;
}

/** Each document's value of `expr` (evaluated with the document as its root), missing ones left out. */
function present(collection: unknown[], expr: unknown, options: unknown): unknown[] {
  const computed = computeOptionsClass(options)?.init(options);
  const values: unknown[] = [];
  for (const root of collection) {
    const value = evalExpr(root, expr, (computed ? computed.update({ root }) : options) as never) as unknown;
    if (value !== undefined) values.push(value);
  }
  return values;
}

/** `$push`: a group's values, missing ones left out (an expression's list as it is). */
const pushAccumulator: AnyFn = (collection, expr, options) =>
  expr === null || expr === undefined ? collection : present(collection, expr, options);

/** `$addToSet`: a group's distinct values by MongoDB's equality, the first of each kept, in order. */
const addToSetAccumulator: AnyFn = (collection, expr, options) => {
  const seen = new Set<string>();
  const out: unknown[] = [];
  for (const value of pushAccumulator(collection, expr, options) as unknown[]) {
    const key = equalityKey(value);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(value);
  }
  return out;
};

export const groupingAccumulators: Record<string, AnyFn> = { $push: pushAccumulator, $addToSet: addToSetAccumulator };

const mingoGroup = (pipelineOperators as unknown as Record<string, AnyFn>).$group!;

/**
 * `$group`: documents whose `_id` values MongoDB holds equal in one group (a missing `_id` as
 * null), the group's `_id` the first document's value; groups in the order they were first met.
 */
export const groupStage: AnyFn = (collection, expr, options) => {
  if (!isDocument(expr) || !("_id" in expr)) throw errors.mongo("a group specification must include an _id");
  const make = computeOptionsClass(options);
  if (!make) return mingoGroup(collection, expr, options);
  const fields = keysOf(expr).filter((key) => key !== "_id");
  return (collection as { transform(f: (docs: unknown[]) => unknown): unknown }).transform((docs) => {
    const groups = new Map<string, { id: unknown; docs: unknown[] }>();
    for (const doc of docs) {
      const id = evalExpr(doc, expr._id, options as never) as unknown;
      const key = equalityKey(id);
      const group = groups.get(key);
      if (group) group.docs.push(doc);
      else groups.set(key, { id: id === undefined ? null : id, docs: [doc] });
    }
    const out: Document[] = [];
    for (const { id, docs: members } of groups.values()) {
      const result: Document = { _id: id };
      for (const field of fields)
        result[field] = evalExpr(members, expr[field], make.init(options).update({ root: null, groupId: id }) as never);
      out.push(result);
    }
    return Lazy(out);
  });
};

// ---------------------------------------------------------------------------------------------
// Set expressions

/** The arrays a set operator takes, or null when one is null or missing (MongoDB answers null). */
function arraysOf(name: string, obj: unknown, expr: unknown, options: unknown, count?: number): unknown[][] | null {
  const args = evalExpr(obj, expr, options as never) as unknown;
  const list = Array.isArray(expr) ? (args as unknown[]) : [args];
  if (count !== undefined && list.length !== count)
    throw errors.mongo(`Expression ${name} takes exactly ${count} arguments. ${list.length} were passed in.`);
  if (list.some((arg) => arg === null || arg === undefined)) return null;
  for (const arg of list)
    if (!Array.isArray(arg))
      throw errors.mongo(`All operands of ${name} must be arrays. One argument is of type: ${bsonTypeAlias(arg)}`);
  return list as unknown[][];
}

const keySet = (values: unknown[]): Set<string> => new Set(values.map(equalityKey));

/** The distinct values of `values` (the first of each), those `keep` allows. */
function distinct(values: unknown[], keep: (key: string) => boolean = () => true): unknown[] {
  const seen = new Set<string>();
  const out: unknown[] = [];
  for (const value of values) {
    const key = equalityKey(value);
    if (seen.has(key) || !keep(key)) continue;
    seen.add(key);
    out.push(value);
  }
  return out;
}

export const setOperators: Record<string, AnyFn> = {
  $setUnion: (obj, expr, options) => {
    const arrays = arraysOf("$setUnion", obj, expr, options);
    return arrays && distinct(arrays.flat());
  },
  $setIntersection: (obj, expr, options) => {
    const arrays = arraysOf("$setIntersection", obj, expr, options);
    if (!arrays) return null;
    if (arrays.length === 0) return [];
    const others = arrays.slice(1).map(keySet);
    return distinct(arrays[0]!, (key) => others.every((set) => set.has(key)));
  },
  $setDifference: (obj, expr, options) => {
    const arrays = arraysOf("$setDifference", obj, expr, options, 2);
    if (!arrays) return null;
    const removed = keySet(arrays[1]!);
    return distinct(arrays[0]!, (key) => !removed.has(key));
  },
  $setEquals: (obj, expr, options) => {
    const arrays = arraysOf("$setEquals", obj, expr, options);
    if (!arrays || arrays.length < 2) throw errors.mongo("$setEquals needs at least two arguments");
    const [first, ...rest] = arrays.map(keySet);
    return rest.every((set) => set.size === first!.size && [...set].every((key) => first!.has(key)));
  },
  $setIsSubset: (obj, expr, options) => {
    const arrays = arraysOf("$setIsSubset", obj, expr, options, 2);
    if (!arrays) throw errors.mongo("both operands of $setIsSubset must be arrays");
    const whole = keySet(arrays[1]!);
    return arrays[0]!.every((value) => whole.has(equalityKey(value)));
  },
  $indexOfArray: (obj, expr, options) => {
    const count = Array.isArray(expr) ? expr.length : 1;
    if (count < 2 || count > 4)
      throw errors.mongo(
        `Expression $indexOfArray takes at least 2 arguments, and at most 4, but ${count} were passed in.`,
      );
    const [array, search, start = 0, end] = evalExpr(obj, expr, options as never) as unknown[];
    if (array === null || array === undefined) return null;
    if (!Array.isArray(array))
      throw errors.mongo(`$indexOfArray requires an array as a first argument, found: ${bsonTypeAlias(array)}`);
    checkBounds("$indexOfArray", start, end);
    const key = equalityKey(search);
    const last = Math.min(end === undefined ? array.length : (end as number), array.length);
    for (let i = start as number; i < last; i++) if (equalityKey(array[i]) === key) return i;
    return -1;
  },
  $in: (obj, expr, options) => {
    if (!Array.isArray(expr) || expr.length !== 2)
      throw errors.mongo(
        `Expression $in takes exactly 2 arguments. ${Array.isArray(expr) ? expr.length : 1} were passed in.`,
      );
    const [value, array] = evalExpr(obj, expr, options as never) as [unknown, unknown];
    if (!Array.isArray(array))
      throw errors.mongo(`$in requires an array as a second argument, found: ${bsonTypeAlias(array)}`);
    const key = equalityKey(value);
    return array.some((element) => equalityKey(element) === key);
  },
};

// ---------------------------------------------------------------------------------------------
// Joins

/** Each value a field holds for matching: an array's elements, or the value; missing as null. */
function matchValues(doc: unknown, field: string): unknown[] {
  const found = resolve(doc as Document, field) ?? null;
  return Array.isArray(found) ? found : [found];
}

/**
 * `$lookup` of `localField` and `foreignField` (without a pipeline) by MongoDB's equality: a
 * document joins the `from` documents one of whose field values equals one of its own (a missing
 * field as null), in the collection's order. mingo hashed the values (a Decimal128 5.0 missed a 5).
 * With a pipeline, mingo's.
 */
export function lookupByEquality(mingoLookup: AnyFn): AnyFn {
  return (collection, expr, options) => {
    if (
      !isDocument(expr) ||
      "pipeline" in expr ||
      typeof expr.from !== "string" ||
      typeof expr.localField !== "string" ||
      typeof expr.foreignField !== "string" ||
      typeof expr.as !== "string"
    )
      return mingoLookup(collection, expr, options);
    const resolver = (options as { collectionResolver?: (name: string) => unknown }).collectionResolver;
    const joined = resolver?.(expr.from);
    if (!Array.isArray(joined)) return mingoLookup(collection, expr, options);
    const { localField, foreignField, as } = expr;
    const byValue = new Map<string, number[]>();
    joined.forEach((doc, place) => {
      for (const value of matchValues(doc, foreignField)) {
        const key = equalityKey(value);
        const places = byValue.get(key);
        if (places) places.push(place);
        else byValue.set(key, [place]);
      }
    });
    return (collection as { map(f: (doc: unknown) => unknown): unknown }).map((doc) => {
      const places = new Set<number>();
      for (const value of matchValues(doc, localField))
        for (const place of byValue.get(equalityKey(value)) ?? []) places.add(place);
      const matches = [...places].sort((a, b) => a - b).map((place) => joined[place]);
      return { ...(doc as Document), [as]: matches };
    });
  };
}
