/**
 * `$setWindowFields` ordered by MongoDB's sort (sort-keys.ts) rather than mingo's comparison of
 * BSON values, which ranked a Decimal128 price of 9 after 100. Each document gets its place in
 * MongoDB's order (equal keys sharing one) in a field of its own, mingo's stage sorts and ranks by
 * that, and the field is taken out again. Windows over the sort's values (`range`, a time `unit`,
 * `$derivative`, `$integral`, `$linearFill`) need the values themselves and stay mingo's.
 */
import { Lazy } from "mingo/lazy";
import * as pipelineOperators from "mingo/operators/pipeline";
import { type Document, isDocument } from "./documents.ts";
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

/** A value without the place field in any document copied into it (`$push: "$$ROOT"`). */
function withoutPlace(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutPlace);
  if (!isDocument(value)) return value;
  if (!(placeField in value) && !keysOf(value).some((k) => typeof value[k] === "object")) return value;
  const out: Document = {};
  for (const key of keysOf(value)) if (key !== placeField) out[key] = withoutPlace(value[key]);
  return out;
}

export const windowStage: AnyFn = (collection, expr, options) => {
  if (!isDocument(expr) || !isDocument(expr.sortBy) || keysOf(expr.sortBy).length === 0 || readsValues(expr.output))
    return mingoWindows(collection, expr, options);
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
    return Lazy(windowed.collect().map(withoutPlace));
  });
};
