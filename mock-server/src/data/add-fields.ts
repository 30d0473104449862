/**
 * The `$addFields` stage (and its alias `$set`) as MongoDB runs it, on documents that are never
 * changed in place: stored documents are frozen, and mingo set a nested field (`{"o.r": 5}`) on the
 * document's own embedded object, which left it unchanged. As MongoDB: a dotted path or a nested
 * document (`{o: {r: 5}}`) adds to the embedded document, keeping its other fields; through an
 * array, to each of its elements; a value that is not a document becomes one holding the new
 * fields; an expression that evaluates to nothing (`$$REMOVE`, a missing field) removes the field.
 * Every expression sees the stage's input document.
 */
import { evalExpr } from "mingo/core";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { type Document, isDocument } from "./documents.ts";
import { keysOf } from "./wide-keys.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

/** Per field: an expression to set, or the fields to add inside it. */
type Fields = Map<string, { expression: unknown } | Fields>;

const nested = (value: unknown): value is Document =>
  isDocument(value) && keysOf(value).length > 0 && !keysOf(value)[0]!.startsWith("$");

function fieldsOf(spec: Document): Fields {
  const fields: Fields = new Map();
  for (const key of keysOf(spec)) {
    if (key === "" || key.startsWith("$") || key.split(".").some((part) => part === ""))
      throw errors.mongo(
        `Invalid $addFields :: caused by :: FieldPath field names may not be empty or start with '$', given '${key}'`,
      );
    const value = spec[key];
    const leaf = nested(value) ? fieldsOf(value) : { expression: value };
    const parts = key.split(".");
    let node = fields;
    for (const part of parts.slice(0, -1)) {
      const next = node.get(part);
      if (next !== undefined && !(next instanceof Map))
        throw errors.mongo(`Invalid $addFields :: caused by :: specification contains two conflicting paths (${key})`);
      const child: Fields = next ?? new Map();
      node.set(part, child);
      node = child;
    }
    node.set(parts[parts.length - 1]!, leaf);
  }
  return fields;
}

function added(current: unknown, fields: Fields, root: Document, options: unknown): unknown {
  if (Array.isArray(current)) return current.map((element) => added(element, fields, root, options));
  const base: Document = isDocument(current) ? current : {};
  const out: Document = { ...base };
  for (const [name, node] of fields) {
    if (node instanceof Map) out[name] = added(base[name], node, root, options);
    else {
      const value = evalExpr(root, node.expression, options as never) as unknown;
      if (value === undefined) delete out[name];
      else out[name] = value;
    }
  }
  return out;
}

/** `$addFields` / `$set`. */
export const addFieldsStage: AnyFn = (collection, expr, options) => {
  if (!isDocument(expr)) throw errors.mongo("$addFields specification stage must be an object");
  if (keysOf(expr).length === 0) return collection;
  const fields = fieldsOf(expr);
  return collection.map((doc: Document) => added(doc, fields, doc, options));
};

/**
 * `doc` with `value` at a dotted path, copied along it (a join's `as`, `$lookup`'s and
 * `$graphLookup`'s: mingo wrote "o.j" as one top-level field).
 */
export function withValueAt(current: unknown, parts: readonly string[], value: unknown): unknown {
  const [head, ...rest] = parts;
  if (head === undefined) return value;
  if (Array.isArray(current)) return current.map((element) => withValueAt(element, parts, value));
  const base: Document = isDocument(current) ? current : {};
  return { ...base, [head]: withValueAt(base[head], rest, value) };
}

/** A join stage whose `as` may be a dotted path. */
export function joinedAs(stage: AnyFn): AnyFn {
  return (collection, expr, options) => {
    if (!isDocument(expr) || typeof expr.as !== "string" || !expr.as.includes("."))
      return stage(collection, expr, options);
    const parts = expr.as.split(".");
    const temporary = "\u0000as";
    return stage(collection, { ...expr, as: temporary }, options).map((doc: Document) => {
      const { [temporary]: joined, ...rest } = doc;
      return withValueAt(rest, parts, joined);
    });
  };
}

/**
 * mingo's own use of `$function` (`$setWindowFields` computes each output through one): a
 * function mingo made. A request's pipeline, read from JSON, holds no function: its `$function`
 * (code as text) is refused.
 */
export const internalFunction: AnyFn = (obj, expr, options) => {
  if (isDocument(expr) && typeof expr.body === "function" && Array.isArray(expr.args)) {
    const args = evalExpr(obj, expr.args, options as never) as unknown[];
    return (expr.body as (...values: unknown[]) => unknown)(...args);
  }
  throw errors.mongo("$function is not allowed in this context");
};
