/**
 * Groups and sets by MongoDB's equality (bson-order.ts `equalityKey`): `$group`, and the
 * accumulators `$push` and `$addToSet`. mingo hashed values by their JavaScript form: 5 and a
 * Decimal128 5.0 made two groups, `{x: 1, y: 2}` and `{y: 2, x: 1}` one (MongoDB: one, and two);
 * and its `$push`/`$addToSet` took a missing value as null, which MongoDB leaves out.
 */
import { evalExpr } from "mingo/core";
import { Lazy } from "mingo/lazy";
import * as pipelineOperators from "mingo/operators/pipeline";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { equalityKey } from "./bson-order.ts";
import { type Document, isDocument } from "./documents.ts";
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
