/**
 * The query engine's operators that compare, sort or name the types of values, on MongoDB's order
 * of BSON values (bson-order.ts) rather than mingo's: query comparisons (`$eq` … `$lte`, `$in`,
 * `$nin`, `$all`, `$type`), sorts (`find`'s and the `$sort` stage's), aggregation comparisons
 * (`$cmp`, `$eq` … `$lte`, `$type`, `$isNumber`, `$sortArray`) and the update operators
 * `$min`/`$max`/`$push`/`$addToSet` (the accumulators are accumulators.ts's).
 * The values a query's path reaches are MongoDB's matcher's (path-walk.ts); a sort's, mingo's.
 */
import { Timestamp } from "bson";
import { evalExpr } from "mingo/core";
import { Lazy } from "mingo/lazy";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import {
  bsonTypeAlias,
  bsonTypeNumber,
  canonicalRank,
  compareBson,
  compareStringValues,
  equalityKey,
  numericTypes,
  typeAliases,
  typeNumbers,
} from "./bson-order.ts";
import { type Document, isDocument } from "./documents.ts";
import { somePathValue } from "./path-walk.ts";
import { evaluationNow } from "./query-limits.ts";
import { shellText } from "./shell-text.ts";
import { sortKeyOf } from "./sort-keys.ts";
import { keysOf } from "./wide-keys.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;
type Predicate = (doc: unknown) => boolean;

// ---------------------------------------------------------------------------------------------
// Types

/** The type numbers a `$type` operand names. */
function wantedTypes(operand: unknown): Set<number> {
  const list = Array.isArray(operand) ? operand : [operand];
  if (list.length === 0) throw errors.mongo("$type must match at least one type");
  const wanted = new Set<number>();
  for (const item of list) {
    if (typeof item === "string") {
      if (item === "number") for (const n of numericTypes) wanted.add(n);
      else if (item in typeNumbers) wanted.add(typeNumbers[item]!);
      else throw errors.mongo(`Unknown type name alias: ${item}`);
    } else if (typeof item === "number") {
      if (!typeAliases.has(item)) throw errors.mongo(`Invalid numerical type code: ${item}`);
      wanted.add(item);
    } else throw errors.mongo(`type must be represented as a number or a string, not ${bsonTypeAlias(item)}`);
  }
  return wanted;
}

// ---------------------------------------------------------------------------------------------
// Query operators

enum Op {
  Eq,
  Lt,
  Lte,
  Gt,
  Gte,
}

/**
 * One value against a query's operand. Values of different types never compare, but: missing
 * and null equal each other, MaxKey is above and MinKey below everything.
 */
function compares(value: unknown, operand: unknown, op: Op): boolean {
  if (typeof value === "string" && typeof operand === "string") return holds(compareStringValues(value, operand), op);
  if (typeof value === "number" && typeof operand === "number") {
    if (Number.isNaN(value) || Number.isNaN(operand)) return nanHolds(value, operand, op);
    return holds(compareBson(value, operand), op);
  }
  const valueRank = canonicalRank(value);
  const operandRank = canonicalRank(operand);
  if (valueRank !== operandRank) {
    if (valueRank + operandRank === 5) return op === Op.Eq || op === Op.Lte || op === Op.Gte;
    if (operandRank === 127) return op === Op.Lt || op === Op.Lte;
    if (operandRank === -1) return op === Op.Gt || op === Op.Gte;
    return false;
  }
  if (isNaNValue(value) || isNaNValue(operand)) return nanHolds(value, operand, op);
  return holds(compareBson(value, operand), op);
}

/** A NaN of any numeric type (a Decimal128's too). */
export const isNaNValue = (value: unknown): boolean =>
  typeof value === "number"
    ? Number.isNaN(value)
    : (value as { _bsontype?: string } | null)?._bsontype === "Decimal128" && String(value) === "NaN";

/**
 * A query's comparison with NaN: NaN equals NaN and otherwise compares false both ways (MongoDB's
 * matcher; a sort and the expressions' `$lt` put NaN below every other number instead).
 */
function nanHolds(value: unknown, operand: unknown, op: Op): boolean {
  return isNaNValue(value) && isNaNValue(operand) && (op === Op.Eq || op === Op.Lte || op === Op.Gte);
}

function holds(order: number, op: Op): boolean {
  switch (op) {
    case Op.Eq:
      return order === 0;
    case Op.Lt:
      return order < 0;
    case Op.Lte:
      return order <= 0;
    case Op.Gt:
      return order > 0;
    case Op.Gte:
      return order >= 0;
  }
}

/** A predicate of documents: some value `selector` reaches passes `test` (path-walk.ts). */
function reaching(selector: string, test: (v: unknown) => boolean): Predicate {
  const parts = selector.split(".");
  return (doc) => somePathValue(doc, parts, test);
}

function comparison(op: Op): AnyFn {
  return (selector: string, operand: unknown) => reaching(selector, (v) => compares(v, operand, op));
}

/** `$eq` of a selector, as the other operators build on it. */
export function equalsPredicate(selector: string, operand: unknown): Predicate {
  return reaching(selector, (v) => compares(v, operand, Op.Eq));
}

/** `$in` of values (its regular expressions are the caller's). */
export function inPredicate(selector: string, values: unknown[]): Predicate {
  return reaching(selector, (v) => values.some((operand) => compares(v, operand, Op.Eq)));
}

/** `$exists`: the path reaches a value (true), or reaches none (false). */
export function existsPredicate(selector: string, operand: unknown): Predicate {
  const reaches = reaching(selector, (v) => v !== undefined);
  return operand ? reaches : (doc) => !reaches(doc);
}

export const comparisonQueryOperators: Record<string, AnyFn> = {
  $eq: comparison(Op.Eq),
  $ne: (selector: string, operand: unknown) => {
    const equals = equalsPredicate(selector, operand);
    return (doc: unknown) => !equals(doc);
  },
  $lt: comparison(Op.Lt),
  $lte: comparison(Op.Lte),
  $gt: comparison(Op.Gt),
  $gte: comparison(Op.Gte),
};

/** `$type`: the value or an element of it (an array also as a whole) of one of the types named. */
export function typeQueryOperator(selector: string, operand: unknown): Predicate {
  const wanted = wantedTypes(operand);
  return reaching(selector, (v) => {
    const type = bsonTypeNumber(v);
    return type !== undefined && wanted.has(type);
  });
}

// ---------------------------------------------------------------------------------------------
// Sorting

/** The sort's fields and directions (-1 descending, anything else ascending, as before). */
function sortFields(sort: Document): { fields: string[]; directions: (1 | -1)[] } {
  const fields = [...keysOf(sort)];
  return { fields, directions: fields.map((field) => (sort[field] === -1 ? -1 : 1)) };
}

/**
 * `docs` in MongoDB's order for `sort`; documents with equal keys keep their order. `$natural`
 * is the order the store keeps them in (-1 reversed).
 */
export function sortDocuments<T>(docs: readonly T[], sort: Document): T[] {
  const { fields, directions } = sortFields(sort);
  if (fields[0] === "$natural") {
    if (fields.length > 1) throw errors.mongo("$natural sort cannot be set with other sort keys");
    return directions[0] === -1 ? [...docs].reverse() : [...docs];
  }
  const paths = fields.map((field) => field.split("."));
  const keys = docs.map((doc) => sortKeyOf(doc, paths, directions));
  const places = docs.map((_, i) => i);
  places.sort((a, b) => {
    for (let f = 0; f < fields.length; f++) {
      const order = compareBson(keys[a]![f], keys[b]![f]);
      if (order !== 0) return order * directions[f]!;
    }
    return a - b;
  });
  return places.map((i) => docs[i]!);
}

/** The `$sort` stage. */
export const sortStage: AnyFn = (collection, expr) => {
  if (!isDocument(expr) || keysOf(expr).length === 0) throw errors.mongo("$sort specification is invalid");
  return collection.transform((docs: unknown[]) => Lazy(sortDocuments(docs, expr)));
};

// ---------------------------------------------------------------------------------------------
// Aggregation expressions and accumulators

function twoArguments(name: string, obj: unknown, expr: unknown, options: unknown): [unknown, unknown] {
  const count = Array.isArray(expr) ? expr.length : 1;
  if (count !== 2) throw errors.mongo(`Expression ${name} takes exactly 2 arguments. ${count} were passed in.`);
  return evalExpr(obj, expr, options as never) as [unknown, unknown];
}

function expressionComparison(name: string, test: (order: number) => unknown): AnyFn {
  return (obj, expr, options) => {
    const [a, b] = twoArguments(name, obj, expr, options);
    return test(compareBson(a, b));
  };
}

/** One argument, given alone or as a list of one. */
function oneArgument(name: string, obj: unknown, expr: unknown, options: unknown): unknown {
  if (Array.isArray(expr)) {
    if (expr.length !== 1)
      throw errors.mongo(`Expression ${name} takes exactly 1 arguments. ${expr.length} were passed in.`);
    return evalExpr(obj, expr[0], options as never);
  }
  return evalExpr(obj, expr, options as never);
}

/** `$sortArray`: values by 1 or -1, documents by a sort document. */
const sortArray: AnyFn = (obj, expr, options) => {
  if (!isDocument(expr) || !("input" in expr) || !("sortBy" in expr))
    throw errors.mongo("$sortArray expects an object with 'input' and 'sortBy'");
  const input = evalExpr(obj, expr.input, options as never) as unknown;
  if (input === null || input === undefined) return null;
  if (!Array.isArray(input))
    throw errors.mongo(`$sortArray requires an array as input, found: ${bsonTypeAlias(input)}`);
  const { sortBy } = expr;
  if (isDocument(sortBy)) return sortDocuments(input, sortBy);
  if (sortBy !== 1 && sortBy !== -1) throw errors.mongo("$sortArray 'sortBy' must be 1, -1 or a sort document");
  return input.slice().sort((a, b) => compareBson(a, b) * sortBy);
};

export const comparisonExpressionOperators: Record<string, AnyFn> = {
  $cmp: expressionComparison("$cmp", (order) => order),
  $eq: expressionComparison("$eq", (order) => order === 0),
  $ne: expressionComparison("$ne", (order) => order !== 0),
  $lt: expressionComparison("$lt", (order) => order < 0),
  $lte: expressionComparison("$lte", (order) => order <= 0),
  $gt: expressionComparison("$gt", (order) => order > 0),
  $gte: expressionComparison("$gte", (order) => order >= 0),
  $type: (obj, expr, options) => bsonTypeAlias(oneArgument("$type", obj, expr, options)),
  $sortArray: sortArray,
  $isNumber: (obj, expr, options) => {
    const type = bsonTypeNumber(oneArgument("$isNumber", obj, expr, options));
    return type !== undefined && numericTypes.includes(type);
  },
};

// ---------------------------------------------------------------------------------------------
// Update operators

/** What an update operator does at one concrete path of a document (updater.ts). */
export type Outcome = { set: unknown } | "unset" | "unchanged";

/** `$min` / `$max`, in MongoDB's order (a missing field takes the operand). */
export function minMaxUpdate(name: string, current: unknown, operand: unknown): Outcome {
  const direction = name === "$max" ? 1 : -1;
  return current === undefined || compareBson(operand, current) * direction > 0 ? { set: operand } : "unchanged";
}

/**
 * The Timestamps made in each second lately, by second: apps' clocks differ (the control API
 * moves each), so one app's seconds come between another's, and each second counts on.
 */
const timestampCounts = new Map<number, number>();
/** How many seconds are remembered (the oldest goes first). */
const countedSeconds = 1_024;

/** A new Timestamp: this second (of the app's clock), and a count of the ones made within it. */
function currentTimestamp(): Timestamp {
  const second = Math.floor(evaluationNow() / 1000);
  const increment = (timestampCounts.get(second) ?? 0) + 1;
  if (increment === 1 && timestampCounts.size >= countedSeconds)
    timestampCounts.delete(timestampCounts.keys().next().value!);
  timestampCounts.set(second, increment);
  return new Timestamp({ t: second, i: increment });
}

/** `$currentDate`: a Date, or with `{$type: "timestamp"}` a Timestamp. */
export function currentDateUpdate(kind: unknown): Outcome {
  return { set: isDocument(kind) && kind.$type === "timestamp" ? currentTimestamp() : new Date(evaluationNow()) };
}

const pushModifiers = new Set(["$each", "$position", "$slice", "$sort"]);
const isInteger = (value: unknown): value is number => typeof value === "number" && Number.isInteger(value);

interface PushSpec {
  each: unknown[];
  position?: number;
  slice?: number;
  /** 1 / -1 (whole elements), or a document of fields. */
  sort?: 1 | -1 | Document;
}

/**
 * `$push`'s operand, checked as MongoDB checks it: modifiers only when it has `$each` (else the
 * value itself, whatever its fields, is pushed).
 */
function pushSpec(operand: unknown): PushSpec {
  if (!isDocument(operand) || !("$each" in operand)) return { each: [operand] };
  for (const key of keysOf(operand))
    if (!pushModifiers.has(key)) throw errors.mongo(`Unrecognized clause in $push: ${key}`);
  const { $each: each, $position: position, $slice: slice, $sort: sort } = operand;
  if (!Array.isArray(each))
    throw errors.mongo(`The argument to $each in $push must be an array but it was of type: ${bsonTypeAlias(each)}`);
  if (position !== undefined && !isInteger(position))
    throw errors.mongo(`The value for $position must be an integer value, not of type: ${bsonTypeAlias(position)}`);
  if (slice !== undefined && !isInteger(slice))
    throw errors.mongo(`The value for $slice must be an integer value but was given type: ${bsonTypeAlias(slice)}`);
  if (sort !== undefined) {
    if (typeof sort === "number") {
      if (sort !== 1 && sort !== -1) throw errors.mongo("The $sort element value must be either 1 or -1");
    } else if (isDocument(sort)) {
      if (keysOf(sort).length === 0) throw errors.mongo("The sort pattern is empty when it should be a set of fields.");
      for (const field of keysOf(sort)) {
        if (sort[field] !== 1 && sort[field] !== -1)
          throw errors.mongo("The sort element value must be either 1 or -1");
        if (field === "") throw errors.mongo("The sort field cannot be empty");
        if (field.split(".").includes(""))
          throw errors.mongo(`The sort field is a dotted field but has an empty part: ${field}`);
      }
    } else
      throw errors.mongo(
        "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields",
      );
  }
  return {
    each,
    ...(position !== undefined ? { position } : {}),
    ...(slice !== undefined ? { slice } : {}),
    ...(sort !== undefined ? { sort: sort as 1 | -1 | Document } : {}),
  };
}

/** The array `$push` makes of `current`: insert at `$position`, then `$sort`, then `$slice`. */
function pushed(current: unknown[], { each, position, slice, sort }: PushSpec): unknown[] {
  let out = [...current];
  const at = position === undefined ? out.length : position < 0 ? Math.max(0, out.length + position) : position;
  out.splice(Math.min(at, out.length), 0, ...each);
  if (isDocument(sort)) out = sortDocuments(out, sort);
  else if (sort !== undefined) {
    out = out
      .map((value, place) => ({ value, place }))
      .sort((a, b) => compareBson(a.value, b.value) * sort || a.place - b.place)
      .map(({ value }) => value);
  }
  if (slice !== undefined) out = slice >= 0 ? out.slice(0, slice) : out.slice(Math.max(0, out.length + slice));
  return out;
}

/**
 * `$push`: its modifiers applied in MongoDB's order and BSON order, a missing field made an array,
 * a field that holds no array refused. As MongoDB counts it, the document changes unless nothing
 * is pushed, nothing sorted and nothing sliced off.
 */
export function pushUpdate(doc: Document, path: string, current: unknown, operand: unknown): Outcome {
  if (current !== undefined && !Array.isArray(current))
    throw errors.mongo(
      `The field '${path.split(".").pop()}' must be an array but is of type ${bsonTypeAlias(current)} in document {_id: ${shellText(doc._id)}}`,
    );
  const spec = pushSpec(operand);
  const result = pushed(current ?? [], spec);
  const same =
    current !== undefined && spec.each.length === 0 && spec.sort === undefined && result.length === current.length;
  return same ? "unchanged" : { set: result };
}

/** Checks `$push`'s operand as MongoDB does when it parses the update. */
export function checkPush(operand: unknown): void {
  pushSpec(operand);
}

/**
 * `$addToSet`: each value (or each of `$each`) added unless the array holds one MongoDB holds equal
 * (by `equalityKey`: 5 and a Decimal128 5.0 are one, documents with their fields in other orders
 * two); a missing field made an array, a field holding no array refused.
 */
export function addToSetUpdate(_doc: Document, path: string, current: unknown, operand: unknown): Outcome {
  if (current !== undefined && !Array.isArray(current))
    throw errors.mongo(
      `Cannot apply $addToSet to non-array field. Field named '${path.split(".").pop()}' has non-array type ${bsonTypeAlias(current)}`,
    );
  const values = addToSetValues(operand);
  const out = [...(current ?? [])];
  const held = new Set(out.map(equalityKey));
  for (const value of values) {
    const key = equalityKey(value);
    if (held.has(key)) continue;
    held.add(key);
    out.push(value);
  }
  return current !== undefined && out.length === current.length ? "unchanged" : { set: out };
}

/** The values `$addToSet` adds: its operand, or the members of its `$each` (checked). */
export function addToSetValues(operand: unknown): unknown[] {
  if (!isDocument(operand) || keysOf(operand)[0] !== "$each") return [operand];
  if (keysOf(operand).length > 1)
    throw errors.mongo(`Found unexpected fields after $each in $addToSet: ${shellText(operand)}`);
  if (!Array.isArray(operand.$each))
    throw errors.mongo(
      `The argument to $each in $addToSet must be an array but it was of type ${bsonTypeAlias(operand.$each)}`,
    );
  return operand.$each;
}
