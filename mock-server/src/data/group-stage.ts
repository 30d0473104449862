/**
 * `$group` as MongoDB runs it (docs/decisions/0045-group-accumulators.md). Its specification is
 * checked first, as MongoDB parses it (every field an accumulator object of one known accumulator
 * with a plain name, `_id` required), so a wrong one is refused even over no documents. Keys are
 * MongoDB's: documents whose `_id` values it holds equal (bson-order.ts `equalityKey`) form one
 * group, a missing value counted as null; an `_id` written as a document of several fields is
 * several keys (its computeGroupKey), a missing one apart from null and left out of the group's
 * `_id`. The group's `_id` is its first document's; groups come out in the order they were first
 * met. Each output field is its accumulator over the group's documents (accumulators.ts), null
 * when it has no value.
 */
import { evalExpr } from "mingo/core";
import { Lazy } from "mingo/lazy";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { computeOptionsClass, dropMissing, parseAccumulator } from "./accumulators.ts";
import { equalityKey } from "./bson-order.ts";
import { type Document, isDocument } from "./documents.ts";
import { groupKeyOperator, sizeGroupKey } from "./engine-guards.ts";
import { isNumeric } from "./numeric-operators.ts";
import { keysOf } from "./wide-keys.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

interface Context {
  getOperator(type: string, name: string): AnyFn | undefined;
}

/** How a group's `_id` is computed: one expression, or a document of several fields each its own. */
type IdSpec = { expression: unknown; field?: string } | { fields: string[]; expressions: unknown[] };

/** A field name of an `_id` document, checked as MongoDB's FieldPath checks it. */
function checkFieldName(name: string): void {
  if (name === "") throw errors.mongo("FieldPath field names may not be empty strings.");
  if (name.startsWith("$"))
    throw errors.mongo("FieldPath field names may not start with '$'. Consider using $getField or $setField.");
  if (name.includes("\0")) throw errors.mongo("FieldPath field names may not contain embedded nulls");
  if (name.includes("."))
    throw errors.mongo("FieldPath field names may not contain '.'. Consider using $getField or $setField.");
}

/** `_id` as MongoDB's parseIdExpression reads it. */
function parseId(spec: unknown): IdSpec {
  if (!isDocument(spec)) return { expression: spec };
  const keys = keysOf(spec);
  if (keys.length === 0) return { expression: { $literal: {} } };
  if (keys[0]!.startsWith("$")) return { expression: spec };
  for (const key of keys) {
    const value = spec[key];
    if (typeof value === "boolean" || isNumeric(value))
      throw errors.mongo("$group does not support inclusion-style expressions");
  }
  for (const key of keys) checkFieldName(key);
  if (keys.length === 1) return { expression: spec[keys[0]!], field: keys[0]! };
  return { fields: [...keys], expressions: keys.map((key) => spec[key]) };
}

/** A key for a missing value among an `_id` document's fields (equalityKey starts none so). */
const missingKey = "\u0001";

/** The `_id` of a group whose first document's key values are `values`. */
function groupIdOf(id: IdSpec, values: unknown[]): unknown {
  if (!("fields" in id)) return id.field === undefined ? values[0] : { [id.field]: values[0] };
  const made: Document = {};
  id.fields.forEach((field, i) => {
    if (values[i] !== undefined) made[field] = values[i];
  });
  return made;
}

interface Group {
  id: unknown;
  members: unknown[];
}

interface GroupSpec {
  id: IdSpec;
  outputs: { field: string; name: string; argument: unknown }[];
}

/** A `$group` specification checked as MongoDB parses it: its fields in order, the missing `_id` last. */
export function parseGroup(expr: unknown, options: unknown): GroupSpec {
  if (!isDocument(expr)) throw errors.mongo("a group's fields must be specified in an object");
  let id: IdSpec | undefined;
  const outputs: GroupSpec["outputs"] = [];
  for (const field of keysOf(expr)) {
    if (field === "_id") {
      // The engine's guard hands the key over wrapped, to size it (engine-guards.ts).
      const raw = expr._id;
      id = parseId(isDocument(raw) && groupKeyOperator in raw ? raw[groupKeyOperator] : raw);
      continue;
    }
    outputs.push({ field, ...parseAccumulator(field, expr[field], options) });
  }
  if (id === undefined) throw errors.mongo("a group specification must include an _id");
  return { id, outputs };
}

export const groupStage: AnyFn = (collection, expr, options) => {
  const { id, outputs } = parseGroup(expr, options);
  const make = computeOptionsClass(options);
  const context = (options as { context?: Context }).context;
  const functions = outputs.map(({ name }) => context?.getOperator("accumulator", name));
  const evaluate = (doc: unknown, expression: unknown): unknown => {
    const computed = make ? make.init(options).update({ root: doc }) : options;
    const value = evalExpr(doc, expression, computed as never) as unknown;
    return value === undefined ? undefined : dropMissing(value);
  };
  return (collection as { transform(f: (docs: unknown[]) => unknown): unknown }).transform((docs) => {
    const groups = new Map<string, Group>();
    for (const doc of docs) {
      let key: string;
      let values: unknown[];
      if ("fields" in id) {
        values = id.expressions.map((expression) => evaluate(doc, expression));
        sizeGroupKey(values);
        key = values.map((value) => (value === undefined ? missingKey : equalityKey(value))).join("\0");
      } else {
        const value = evaluate(doc, id.expression) ?? null;
        sizeGroupKey(value);
        key = equalityKey(value);
        values = [value];
      }
      const group = groups.get(key);
      if (group) group.members.push(doc);
      else groups.set(key, { id: groupIdOf(id, values), members: [doc] });
    }
    const out: Document[] = [];
    for (const { id: groupId, members } of groups.values()) {
      const result: Document = { _id: groupId };
      const local = make ? make.init(options).update({ root: null, groupId }) : options;
      outputs.forEach(({ field, name, argument }, i) => {
        const fn = functions[i];
        if (!fn) throw errors.mongo(`unknown group operator '${name}'`);
        result[field] = (fn(members, argument, local) as unknown) ?? null;
      });
      out.push(result);
    }
    return Lazy(out);
  });
};
