/**
 * Sets by MongoDB's equality (bson-order.ts `equalityKey`): the set expressions (`$setUnion` …
 * `$setIsSubset`, `$in`, `$indexOfArray`) and `$lookup`'s join of fields. mingo hashed values by
 * their JavaScript form: 5 and a Decimal128 5.0 were two values, `{x: 1, y: 2}` and `{y: 2, x: 1}`
 * one (MongoDB: one, and two). (`$group` and its accumulators: group-stage.ts, accumulators.ts.)
 */
import { Aggregator } from "mingo/aggregator";
import { evalExpr } from "mingo/core";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { computeOptionsClass } from "./accumulators.ts";
import { bsonTypeAlias, equalityKey } from "./bson-order.ts";
import { type Document, isDocument } from "./documents.ts";
import { ownField } from "./own-fields.ts";
import { isRegexValue } from "./regex.ts";
import { checkBounds } from "./string-operators.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

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

/**
 * The values a path reaches in a document, walked through documents and arrays of documents (a
 * number names an array's element; arrays directly in arrays are not walked into). `$lookup`'s
 * local values (`local`: MongoDB's `extractAllElementsAlongPath`) take a last array's elements — an
 * element that is an array stays whole; a foreign document's (`foreign`: every value a query's
 * equality may find there, a superset to index by) also the last array whole, and at a number both
 * the element and the elements' fields of that name. Where the path reaches nothing, or (foreign) a
 * null, null: a missing field or an empty array joins null and missing fields
 * (lookup_array_semantics.js).
 */
function pathValues(doc: unknown, field: string, side: "local" | "foreign"): unknown[] {
  const out: unknown[] = [];
  const parts = field.split(".");
  const walk = (value: unknown, i: number): void => {
    if (i === parts.length) {
      if (value === undefined) return;
      if (!Array.isArray(value) || side === "foreign") out.push(value);
      if (Array.isArray(value)) for (const element of value) out.push(element);
      return;
    }
    const part = parts[i]!;
    if (Array.isArray(value)) {
      const index = /^\d+$/.test(part);
      if (index) walk(value[Number(part)], i + 1);
      if (!index || side === "foreign")
        for (const element of value) if (isDocument(element)) walk(ownField(element, part), i + 1);
    } else if (isDocument(value)) walk(ownField(value, part), i + 1);
  };
  walk(doc, 0);
  if (out.length === 0 || (side === "foreign" && out.includes(null))) out.push(null);
  return out;
}

/**
 * `$lookup` of `localField` and `foreignField` as MongoDB joins them: a document joins the `from`
 * documents its `foreignField` matches as a query's `{$in: [its local values]}` would (pathValues),
 * in the collection's order — an array there matches as a whole or by an element, a dotted path
 * through arrays by each element's value. mingo hashed the values (a Decimal128 5.0 missed a 5) and
 * took a dotted path's array of values as one. With a pipeline too (MongoDB 5.0's concise form),
 * the pipeline runs over those documents, with the `let` variables; mingo ran it over the whole
 * collection. A pipeline alone is mingo's.
 */
export function lookupByEquality(
  mingoLookup: AnyFn,
  compile: (query: Document) => { test(doc: unknown): boolean },
): AnyFn {
  return (collection, expr, options) => {
    if (
      !isDocument(expr) ||
      typeof expr.from !== "string" ||
      typeof expr.localField !== "string" ||
      typeof expr.foreignField !== "string" ||
      typeof expr.as !== "string" ||
      ("pipeline" in expr && !Array.isArray(expr.pipeline))
    )
      return mingoLookup(collection, expr, options);
    const resolver = (options as { collectionResolver?: (name: string) => unknown }).collectionResolver;
    const joined = resolver?.(expr.from);
    if (!Array.isArray(joined)) return mingoLookup(collection, expr, options);
    const { localField, foreignField, as } = expr;
    const pipeline = (expr.pipeline ?? []) as Document[];
    const make = computeOptionsClass(options);
    const aggregator = pipeline.length > 0 ? new Aggregator(pipeline, options as never) : null;
    // The foreign documents by the values they may match (a candidate is then matched exactly).
    const byValue = new Map<string, number[]>();
    joined.forEach((doc, place) => {
      for (const key of new Set(pathValues(doc, foreignField, "foreign").map(equalityKey))) {
        const places = byValue.get(key);
        if (places) places.push(place);
        else byValue.set(key, [place]);
      }
    });
    return (collection as { map(f: (doc: unknown) => unknown): unknown }).map((doc) => {
      const values = pathValues(doc, localField, "local");
      const query = compile({ [foreignField]: { $in: values } });
      // (A pattern matches by more than equality: every document is a candidate then.)
      const candidates = values.some(isRegexValue)
        ? joined.map((_, place) => place)
        : [...new Set(values.flatMap((value) => byValue.get(equalityKey(value)) ?? []))];
      const matches = candidates
        .filter((place) => query.test(joined[place]))
        .sort((a, b) => a - b)
        .map((place) => joined[place]);
      if (aggregator === null) return { ...(doc as Document), [as]: matches };
      const variables = expr.let === undefined ? {} : evalExpr(doc, expr.let, options as never);
      const local = make ? make.init(options).update({ root: null, variables }) : options;
      return { ...(doc as Document), [as]: aggregator.run(matches, local as never) };
    });
  };
}
