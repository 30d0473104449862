/**
 * An aggregation `$project` that computes fields inside embedded documents (`{"a.b": <expr>}`,
 * `{a: {b: <expr>, c: 1}}`), as MongoDB's projection tree applies one: first the fields it keeps
 * (the document's order; through arrays element by element, values that are no document dropped),
 * then the fields it computes, against the whole document, in the projection's order — into each
 * element of an array, and in place of a value that is no document. mingo turned an array's
 * indexes into fields (`{a: {b: "$x", c: 1}}` over `a: [1, {c: 1}]` gave `{"1": {c: 1}, b: …}`) and
 * replaced arrays by one document; and an inclusion that names a numeric field below the top, which
 * mingo read as an array's index. Other flat projections stay mingo's (query-engine.ts' `$project`).
 */
import { evalExpr } from "mingo/core";
import { type Document, isDocument } from "./documents.ts";
import { isIndex } from "./matched-position.ts";
import { step } from "./query-limits.ts";
import { keysOf } from "./wide-keys.ts";

interface Node {
  /** Fields kept whole. */
  kept: Set<string>;
  /** Fields computed, in the projection's order (with the children that compute). */
  computed: Map<string, unknown>;
  children: Map<string, Node>;
  /** Names of computed fields and of children that compute, in the projection's order. */
  additions: string[];
}

const newNode = (): Node => ({ kept: new Set(), computed: new Map(), children: new Map(), additions: [] });

const isExpression = (value: unknown) => !(typeof value === "number" || typeof value === "boolean") && !isSpec(value);
const isSpec = (value: unknown): value is Document =>
  isDocument(value) && keysOf(value).length > 0 && !keysOf(value)[0]!.startsWith("$");

/** Whether a `$project` computes inside embedded documents (the case mingo gets wrong). */
export function computesNested(spec: Document): boolean {
  return keysOf(spec).some(
    (key) =>
      (key.includes(".") && isExpression(spec[key])) ||
      (isSpec(spec[key]) &&
        (keysOf(spec[key] as Document).some((inner) => isExpression((spec[key] as Document)[inner])) ||
          computesNested(spec[key] as Document))),
  );
}

/**
 * Whether an inclusion names a numeric field below the top (`{"a.0": 1}`, `{a: {"0": 1}}`): a
 * field name to MongoDB, an array's index to mingo (`a: [1, {"0": "z"}]` kept `[1]`, not `[{"0": "z"}]`).
 */
export function namesNumericField(spec: Document, top = true): boolean {
  return keysOf(spec).some((key) => {
    const parts = key.split(".");
    if (parts.slice(top ? 1 : 0).some(isIndex)) return true;
    const value = spec[key];
    return isSpec(value) && namesNumericField(value, false);
  });
}

/** The projection's tree, or null for a spec this projection leaves to mingo (exclusions, collisions). */
function treeOf(spec: Document, top: boolean): Node | null {
  const node = newNode();
  for (const key of keysOf(spec)) {
    const value = spec[key];
    const [head, ...rest] = key.split(".");
    if (head === undefined || head === "" || head.startsWith("$")) return null;
    if (rest.length > 0) {
      const child = treeOf({ [rest.join(".")]: value }, false);
      if (child === null || !merge(node, head, child)) return null;
      continue;
    }
    if (typeof value === "number" || typeof value === "boolean") {
      if (!value) {
        if (top && key === "_id") continue;
        return null;
      }
      if (node.computed.has(key) || node.children.has(key)) return null;
      node.kept.add(key);
    } else if (isSpec(value)) {
      const child = treeOf(value, false);
      if (child === null || !merge(node, head, child)) return null;
    } else {
      if (node.kept.has(key) || node.children.has(key) || node.computed.has(key)) return null;
      node.computed.set(key, value);
      node.additions.push(key);
    }
  }
  return node;
}

function computes(node: Node): boolean {
  return node.computed.size > 0 || [...node.children.values()].some(computes);
}

function merge(node: Node, field: string, child: Node): boolean {
  if (node.kept.has(field) || node.computed.has(field)) return false;
  const existing = node.children.get(field);
  if (!existing) {
    node.children.set(field, child);
    if (computes(child)) node.additions.push(field);
    return true;
  }
  for (const kept of child.kept) existing.kept.add(kept);
  for (const [name, expr] of child.computed) {
    if (existing.computed.has(name) || existing.kept.has(name)) return false;
    existing.computed.set(name, expr);
    existing.additions.push(name);
  }
  for (const [name, grandchild] of child.children) if (!merge(existing, name, grandchild)) return false;
  if (computes(existing) && !node.additions.includes(field)) node.additions.push(field);
  return true;
}

/** The kept fields of a document, in its order. */
function keep(doc: Document, node: Node, top: boolean): Document {
  const out: Document = {};
  for (const key of keysOf(doc)) {
    if (node.kept.has(key) || (top && key === "_id" && !node.computed.has("_id"))) out[key] = doc[key];
    else {
      const child = node.children.get(key);
      if (child === undefined) continue;
      const value = keepValue(doc[key], child);
      if (value !== undefined) out[key] = value;
    }
  }
  return out;
}

function keepValue(value: unknown, node: Node): unknown {
  if (isDocument(value)) return keep(value, node, false);
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const element of value) {
      step();
      const kept = keepValue(element, node);
      if (kept !== undefined) out.push(kept);
    }
    return out;
  }
  return undefined;
}

type Evaluate = (expr: unknown) => unknown;

/** The computed fields added to a projected document, in the projection's order. */
function addComputed(out: Document, node: Node, evaluate: Evaluate): Document {
  for (const name of node.additions) {
    const value = node.computed.has(name)
      ? evaluate(node.computed.get(name))
      : computedValue(out[name], node.children.get(name)!, evaluate);
    if (value === undefined) delete out[name];
    else out[name] = value;
  }
  return out;
}

function computedValue(value: unknown, node: Node, evaluate: Evaluate): unknown {
  if (isDocument(value)) return addComputed({ ...value }, node, evaluate);
  if (Array.isArray(value))
    return value.map((element) => {
      step();
      return computedValue(element, node, evaluate);
    });
  return addComputed({}, node, evaluate);
}

/**
 * The `$project` of `spec` over documents, or null when this projection leaves the spec to mingo.
 */
export function nestedProjection(spec: Document, options: unknown): ((doc: Document) => Document) | null {
  const tree = treeOf(spec, true);
  if (tree === null) return null;
  const idExcluded = spec._id === 0 || spec._id === false;
  return (doc) => {
    const kept = keep(doc, tree, !idExcluded);
    return addComputed(kept, tree, (expr) => evalExpr(doc, expr, options as never));
  };
}
