/**
 * `$bucket` and `$bucketAuto` as MongoDB runs them, in MongoDB's order of values (bson-order.ts):
 * mingo placed a Decimal128 price of 9 after 100 (its comparison of BSON values), wrote buckets
 * that held no document, and sorted `$bucketAuto`'s values likewise. `$bucket` is MongoDB's `$group`
 * by the bucket a value falls in followed by a `$sort` of the buckets; `$bucketAuto` fills buckets
 * of about the same size in value order, equal values kept together (its `populateBuckets`).
 * A `granularity` stays mingo's (numbers only).
 */

import { evalExpr } from "mingo/core";
import { Lazy } from "mingo/lazy";
import * as pipelineOperators from "mingo/operators/pipeline";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { parseAccumulator } from "./accumulators.ts";
import { bsonTypeAlias, canonicalRank, compareBson } from "./bson-order.ts";
import { type Document, isDocument } from "./documents.ts";
import { groupKeyOperator } from "./engine-guards.ts";
import { groupStage } from "./group-stage.ts";
import { heavy, step } from "./query-limits.ts";
import { keysOf } from "./wide-keys.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;
type Collection = { transform(f: (docs: unknown[]) => unknown): unknown };

const mingoPipeline = pipelineOperators as unknown as Record<string, AnyFn>;

/** The accumulators of `output` over one bucket's documents (the `$group` stage's). */
function accumulate(members: unknown[], output: Document, options: unknown): Document {
  const [result] = (
    groupStage(Lazy(members), { _id: null, ...output }, options) as { collect(): Document[] }
  ).collect();
  const { _id, ...fields } = result!;
  return fields;
}

function checkGroupBy(name: string, wrapped: unknown): void {
  // (The engine's guard wraps the expression to size its keys: the request's is inside.)
  const groupBy = isDocument(wrapped) && groupKeyOperator in wrapped ? wrapped[groupKeyOperator] : wrapped;
  const expression =
    (typeof groupBy === "string" && groupBy.startsWith("$")) ||
    (isDocument(groupBy) && keysOf(groupBy)[0]?.startsWith("$"));
  if (!expression)
    throw errors.mongo(
      `The ${name} 'groupBy' field must be defined as a $-prefixed path or an expression${name === "$bucket" ? "" : " object"}, but found: ${JSON.stringify(groupBy)}`,
    );
}

function checkOutput(name: string, output: unknown, options: unknown): Document {
  if (output === undefined) return { count: { $sum: 1 } };
  if (!isDocument(output))
    throw errors.mongo(
      `The ${name} 'output' field must be an object, but found type: ${bsonTypeAlias(output)}${name === "$bucket" ? "." : ""}`,
    );
  // Each field as a $group's (MongoDB parses them so), before any document is read; `$bucketAuto`
  // counts its buckets' documents when no field is given.
  for (const field of keysOf(output)) parseAccumulator(field, output[field], options);
  return name === "$bucketAuto" && keysOf(output).length === 0 ? { count: { $sum: 1 } } : output;
}

const bucket: AnyFn = (collection, expr, options) => {
  if (!isDocument(expr))
    throw errors.mongo(`The argument to $bucket must be an object, but found type: ${bsonTypeAlias(expr)}.`);
  for (const key of keysOf(expr))
    if (!["groupBy", "boundaries", "default", "output"].includes(key))
      throw errors.mongo(`Unrecognized option to $bucket: ${key}.`);
  if (!("groupBy" in expr) || !("boundaries" in expr))
    throw errors.mongo("$bucket requires 'groupBy' and 'boundaries' to be specified.");
  checkGroupBy("$bucket", expr.groupBy);
  const boundaries = expr.boundaries;
  if (!Array.isArray(boundaries))
    throw errors.mongo(
      `The $bucket 'boundaries' field must be an array, but found type: ${bsonTypeAlias(boundaries)}.`,
    );
  if (boundaries.length < 2)
    throw errors.mongo(
      `The $bucket 'boundaries' field must have at least 2 values, but found ${boundaries.length} value(s).`,
    );
  for (let i = 1; i < boundaries.length; i++) {
    const [lower, upper] = [boundaries[i - 1], boundaries[i]];
    if (canonicalRank(lower) !== canonicalRank(upper))
      throw errors.mongo(
        `All values in the the 'boundaries' option to $bucket must have the same type. Found conflicting types ${bsonTypeAlias(lower)} and ${bsonTypeAlias(upper)}.`,
      );
    if (compareBson(lower, upper) >= 0)
      throw errors.mongo(
        `The 'boundaries' option to $bucket must be sorted, but elements ${i - 1} and ${i} are not in ascending order (${JSON.stringify(lower)} is not less than ${JSON.stringify(upper)}).`,
      );
  }
  const hasDefault = "default" in expr;
  if (
    hasDefault &&
    canonicalRank(expr.default) === canonicalRank(boundaries[0]) &&
    compareBson(expr.default, boundaries[0]) >= 0 &&
    compareBson(expr.default, boundaries.at(-1)) < 0
  )
    throw errors.mongo(
      "The $bucket 'default' field must be less than the lowest boundary or greater than or equal to the highest boundary.",
    );
  const output = checkOutput("$bucket", expr.output, options);
  return (collection as Collection).transform((docs) => {
    const members = new Map<number, unknown[]>();
    for (const doc of docs) {
      step();
      const value = evalExpr(doc, expr.groupBy, options as never) ?? null;
      // The bucket whose lower boundary is the greatest at or below the value.
      let at = -1;
      if (compareBson(value, boundaries[0]) >= 0 && compareBson(value, boundaries.at(-1)) < 0) {
        let low = 0;
        let high = boundaries.length - 1;
        while (high - low > 1) {
          const mid = (low + high) >> 1;
          if (compareBson(value, boundaries[mid]) >= 0) low = mid;
          else high = mid;
        }
        at = low;
      } else if (!hasDefault)
        throw errors.mongo("$switch could not find a matching branch for an input, and no default was specified.");
      const list = members.get(at);
      if (list) list.push(doc);
      else members.set(at, [doc]);
    }
    const out = [...members.entries()].map(([at, list]) => ({
      _id: at === -1 ? expr.default : boundaries[at],
      ...accumulate(list, output, options),
    }));
    out.sort((a, b) => compareBson(a._id, b._id));
    return Lazy(out);
  });
};

const bucketAuto: AnyFn = (collection, expr, options) => {
  if (!isDocument(expr))
    throw errors.mongo(`The argument to $bucketAuto must be an object, but found type: ${bsonTypeAlias(expr)}`);
  if (expr.granularity !== undefined) return mingoPipeline.$bucketAuto!(collection, expr, options);
  for (const key of keysOf(expr))
    if (!["groupBy", "buckets", "output", "granularity"].includes(key))
      throw errors.mongo(`Unrecognized option to $bucketAuto: ${key}`);
  if (!("groupBy" in expr) || !("buckets" in expr))
    throw errors.mongo("$bucketAuto requires 'groupBy' and 'buckets' to be specified");
  checkGroupBy("$bucketAuto", expr.groupBy);
  const buckets = expr.buckets;
  if (typeof buckets !== "number")
    throw errors.mongo(
      `The $bucketAuto 'buckets' field must be a numeric value, but found type: ${bsonTypeAlias(buckets)}`,
    );
  if (!Number.isInteger(buckets) || Math.abs(buckets) >= 2 ** 31)
    throw errors.mongo(
      `The $bucketAuto 'buckets' field must be representable as a 32-bit integer, but found ${buckets}`,
    );
  if (buckets <= 0) throw errors.mongo(`The $bucketAuto 'buckets' field must be greater than 0, but found: ${buckets}`);
  const output = checkOutput("$bucketAuto", expr.output, options);
  return (collection as Collection).transform((docs) => {
    const keyed = docs.map((doc) => {
      step();
      return { key: evalExpr(doc, expr.groupBy, options as never) ?? null, doc };
    });
    heavy(keyed.length * Math.log2(keyed.length + 1), "$bucketAuto");
    keyed.sort((a, b) => compareBson(a.key, b.key));
    const size = Math.max(1, Math.round(keyed.length / buckets));
    const out: Document[] = [];
    let bounds: { min: unknown; max: unknown }[] = [];
    let i = 0;
    for (let b = 0; b < buckets && i < keyed.length; b++) {
      const start = i;
      const min = keyed[i]!.key;
      i = b === buckets - 1 ? keyed.length : Math.min(i + size, keyed.length);
      // Values equal to the bucket's greatest stay with it.
      while (i < keyed.length && compareBson(keyed[i]!.key, keyed[i - 1]!.key) === 0) i++;
      bounds.push({ min, max: keyed[i - 1]!.key });
      out.push(
        accumulate(
          keyed.slice(start, i).map((k) => k.doc),
          output,
          options,
        ),
      );
    }
    // A bucket's max is the next one's min (the last keeps its greatest value).
    bounds = bounds.map((bound, n) => (n + 1 < bounds.length ? { min: bound.min, max: bounds[n + 1]!.min } : bound));
    return Lazy(out.map((fields, n) => ({ _id: bounds[n], ...fields })));
  });
};

export const bucketStages: Record<string, AnyFn> = { $bucket: bucket, $bucketAuto: bucketAuto };
