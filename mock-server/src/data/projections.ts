/**
 * Projections as MongoDB lays them out. mingo writes a projection's fields in the projection's
 * order with `_id` last (`{s: 1}` of `{_id, s}` answered `{s, _id}`, and every `$project` put `_id`
 * after the rest); MongoDB writes the fields it keeps from the document in the document's order
 * (`_id` first), then the fields the projection computes, in the projection's order. (A find
 * projection's `$slice`s and its type: find-projection.ts.)
 */
import { evalExpr } from "mingo/core";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { type Document, isDocument } from "./documents.ts";
import { keysOf } from "./wide-keys.ts";

/** For each top-level field a projection names: computed, kept (with what it keeps inside), or excluded. */
type Layout = Map<string, "computed" | "kept" | Layout>;

/** Operators of a find projection that keep a field of the document rather than compute one. */
const findOperators = new Set(["$slice", "$elemMatch", "$meta"]);

function layoutOf(spec: Document, find: boolean): Layout {
  const layout: Layout = new Map();
  for (const key of keysOf(spec)) {
    const value = spec[key];
    const [head, ...rest] = key.split(".");
    if (head === undefined) continue;
    if (rest.length > 0) {
      // "a.b": 1 keeps a (and b in it); "a.$": 1 keeps a.
      const inner = layout.get(head);
      const nested: Layout = inner instanceof Map ? inner : new Map();
      if (rest[0] !== "$") for (const [k, v] of layoutOf({ [rest.join(".")]: value }, find)) nested.set(k, v);
      layout.set(head, nested);
    } else if (typeof value === "number" || typeof value === "boolean") layout.set(head, "kept");
    else if (isDocument(value)) {
      const first = keysOf(value)[0];
      if (first?.startsWith("$")) layout.set(head, find && findOperators.has(first) ? "kept" : "computed");
      else layout.set(head, layoutOf(value, find));
    } else layout.set(head, "computed");
  }
  return layout;
}

/**
 * `projected` (a projection of `source`) laid out as MongoDB does: the fields kept from `source`
 * in its order, then the computed ones in the projection's order (mingo's were its own), then any
 * rest. Arrays of documents projected element by element are laid out element by element.
 */
function laidOut(source: unknown, projected: unknown, layout: Layout | undefined): unknown {
  if (Array.isArray(source) && Array.isArray(projected)) {
    if (source.length !== projected.length) return projected;
    return projected.map((element, i) => laidOut(source[i], element, layout));
  }
  if (!isDocument(projected)) return projected;
  const from: Document = isDocument(source) ? source : {};
  const out: Document = {};
  for (const key of keysOf(from)) {
    if (!Object.hasOwn(projected, key)) continue;
    const part = layout?.get(key);
    if (part === "computed") continue;
    out[key] = part instanceof Map ? laidOut(from[key], projected[key], part) : projected[key];
  }
  if (layout)
    for (const [key, part] of layout) {
      if (Object.hasOwn(out, key) || !Object.hasOwn(projected, key)) continue;
      out[key] = part instanceof Map ? laidOut(from[key], projected[key], part) : projected[key];
    }
  for (const key of keysOf(projected)) if (!Object.hasOwn(out, key)) out[key] = projected[key];
  return out;
}

/** A projector: each source document's projection (from `project`), laid out as MongoDB does. */
export function inMongoOrder(spec: Document, find: boolean): (source: unknown, projected: unknown) => unknown {
  const layout = layoutOf(spec, find);
  return (source, projected) => laidOut(source, projected, layout);
}

/** The paths an exclusion projection removes, as a tree. */
export type Exclusions = Map<string, true | Exclusions>;

/**
 * The paths a projection excludes, when it only excludes (`{"o.p": 0, s: 0}`, `{o: {p: 0}}`);
 * null when it includes or computes anything. A top-level `_id` kept in an exclusion (`{_id: 1,
 * s: 0}`) is no inclusion: MongoDB keeps it as every exclusion does (mingo refused the mix).
 */
export function exclusionsOf(spec: Document, top = true): Exclusions | null {
  const tree: Exclusions = new Map();
  for (const key of keysOf(spec)) {
    const value = spec[key];
    let leaf: true | Exclusions;
    if (top && key === "_id" && (value === true || (typeof value === "number" && value !== 0))) continue;
    if (value === 0 || value === false) leaf = true;
    else if (isDocument(value) && keysOf(value).length > 0 && !keysOf(value)[0]!.startsWith("$")) {
      const inner = exclusionsOf(value, false);
      if (inner === null) return null;
      leaf = inner;
    } else return null;
    const parts = key.split(".");
    let node = tree;
    for (const part of parts.slice(0, -1)) {
      const next = node.get(part);
      if (next === true) break;
      const child: Exclusions = next ?? new Map();
      node.set(part, child);
      node = child;
    }
    node.set(parts[parts.length - 1]!, leaf);
  }
  // (`{_id: 1}` alone includes `_id` only.)
  return tree.size === 0 && keysOf(spec).length > 0 ? null : tree;
}

/**
 * A value without the excluded paths, copied where it changes (stored documents are frozen: mingo
 * removed nested fields in place, which left them there). An array's documents lose the paths
 * one by one; its other values stay.
 */
export function excluded(value: unknown, tree: Exclusions): unknown {
  if (Array.isArray(value)) return value.map((element) => excluded(element, tree));
  if (!isDocument(value)) return value;
  const out: Document = {};
  for (const key of keysOf(value)) {
    const node = tree.get(key);
    if (node === true) continue;
    out[key] = node === undefined ? value[key] : excluded(value[key], node);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Computed fields that come to nothing

/** A computed field's expression, marked to answer `Missing` when it evaluates to nothing. */
class MissingProbe {
  constructor(readonly expr: unknown) {}
}

/** What a computed field that evaluates to nothing holds until `withoutMissing` drops it. */
class Missing {}

/** The operator a marked expression goes through (a request cannot hold a `MissingProbe`). */
export const missingOperator = "$mockMissing";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signature
export const missingProbe = (obj: unknown, expr: unknown, options: any): unknown => {
  if (!(expr instanceof MissingProbe)) throw errors.mongo(`Unrecognized expression '${missingOperator}'`);
  const value = evalExpr(obj, expr.expr, options);
  return value === undefined ? new Missing() : value;
};

/**
 * A `$project` with each computed field's expression marked, so one that evaluates to nothing
 * (`v: "$absent"`) can be left out as MongoDB leaves it out (mingo wrote null).
 */
export function probingMissing(spec: Document): Document {
  const out: Document = {};
  for (const key of keysOf(spec)) {
    const value = spec[key];
    if (typeof value === "number" || typeof value === "boolean") out[key] = value;
    else if (isDocument(value) && !keysOf(value)[0]?.startsWith("$") && keysOf(value).length > 0)
      out[key] = probingMissing(value);
    else out[key] = { [missingOperator]: new MissingProbe(value) };
  }
  return out;
}

/**
 * A projected document without the fields that came to nothing: only where the projection
 * computes (`spec`'s shape), never into the values it copied (which may be large or shared).
 */
export function withoutMissing(value: unknown, spec: Document): unknown {
  if (Array.isArray(value)) return value.map((element) => withoutMissing(element, spec));
  if (!isDocument(value)) return value;
  let out: Document | undefined;
  for (const key of keysOf(spec)) {
    const [head] = key.split(".");
    if (head === undefined || !Object.hasOwn(value, head)) continue;
    const field = value[head];
    const inner = spec[key];
    const nested = key.includes(".")
      ? { [key.slice(head.length + 1)]: inner }
      : isDocument(inner) && !keysOf(inner)[0]?.startsWith("$")
        ? inner
        : null;
    if (field instanceof Missing) {
      out ??= { ...value };
      delete out[head];
    } else if (nested !== null && typeof field === "object" && field !== null) {
      const cleaned = withoutMissing(field, nested);
      if (cleaned !== field) {
        out ??= { ...value };
        out[head] = cleaned;
      }
    }
  }
  return out ?? value;
}
