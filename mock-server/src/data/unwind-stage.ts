/**
 * `$unwind` as MongoDB runs it: each element of the array at the path in a copy of the document,
 * its index as a long; a value that is no array passed through as an array of one, its index
 * null; with `preserveNullAndEmptyArrays`, a missing field, null or an empty array kept (the empty
 * array's field removed), its index null. mingo gave the index as an int and left it out for what
 * was no array, kept the empty array, and answered nothing for a path without its `$`.
 */
import { Long } from "bson";
import { Lazy } from "mingo/lazy";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { withValueAt } from "./add-fields.ts";
import { bsonTypeAlias } from "./bson-order.ts";
import { type Document, isDocument } from "./documents.ts";
import { ownField } from "./own-fields.ts";
import { step } from "./query-limits.ts";
import { keysOf } from "./wide-keys.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

/** The value at a dotted path through documents only (an array on the way: missing). */
function valueAt(doc: Document, parts: readonly string[]): unknown {
  let node: unknown = doc;
  for (const part of parts) node = isDocument(node) ? ownField(node, part) : undefined;
  return node;
}

/** `doc` without the field at `parts`, copied along the path. */
function withoutValueAt(doc: Document, parts: readonly string[]): Document {
  const [head, ...rest] = parts;
  if (head === undefined || !(head in doc)) return doc;
  const { [head]: inner, ...others } = doc;
  if (rest.length === 0) return others;
  return isDocument(inner) ? { ...doc, [head]: withoutValueAt(inner, rest) } : doc;
}

interface Spec {
  path: string[];
  index: string[] | null;
  preserve: boolean;
}

function specOf(expr: unknown): Spec {
  let path: unknown = expr;
  let index: unknown;
  let preserve: unknown = false;
  if (isDocument(expr)) {
    for (const key of keysOf(expr))
      if (key !== "path" && key !== "includeArrayIndex" && key !== "preserveNullAndEmptyArrays")
        throw errors.mongo(`unrecognized option to $unwind stage: ${key}`);
    path = expr.path;
    index = expr.includeArrayIndex;
    if ("preserveNullAndEmptyArrays" in expr) preserve = expr.preserveNullAndEmptyArrays;
    if (path === undefined) throw errors.mongo("no path specified to $unwind stage");
  } else if (typeof expr !== "string")
    throw errors.mongo(
      `expected either a string or an object as specification for $unwind stage, got ${bsonTypeAlias(expr)}`,
    );
  if (typeof path !== "string")
    throw errors.mongo(`expected a string as the path for $unwind stage, got ${bsonTypeAlias(path)}`);
  if (!path.startsWith("$")) throw errors.mongo(`path option to $unwind stage should be prefixed with a '$': ${path}`);
  if (typeof preserve !== "boolean")
    throw errors.mongo(
      `expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage, got ${bsonTypeAlias(preserve)}`,
    );
  if (index !== undefined) {
    if (typeof index !== "string" || index === "")
      throw errors.mongo(
        `expected a non-empty string for the includeArrayIndex option to $unwind stage, got ${bsonTypeAlias(index)}`,
      );
    if (index.startsWith("$"))
      throw errors.mongo(`includeArrayIndex option to $unwind stage should not be prefixed with a '$': ${index}`);
  }
  return { path: path.slice(1).split("."), index: typeof index === "string" ? index.split(".") : null, preserve };
}

export const unwindStage: AnyFn = (collection, expr) => {
  const { path, index, preserve } = specOf(expr);
  const withIndex = (doc: Document, at: number | null): Document =>
    index === null ? doc : (withValueAt(doc, index, at === null ? null : Long.fromNumber(at)) as Document);
  // Emitted one by one (a long array's copies are counted, and stopped, as they are made).
  function* unwound(docs: Document[]): Generator<Document> {
    for (const doc of docs) {
      step();
      const value = valueAt(doc, path);
      if (Array.isArray(value) && value.length > 0) {
        for (let i = 0; i < value.length; i++) yield withIndex(withValueAt(doc, path, value[i]) as Document, i);
      } else if (Array.isArray(value)) {
        if (preserve) yield withIndex(withoutValueAt(doc, path), null);
      } else if (value === undefined || value === null) {
        if (preserve) yield withIndex(doc, null);
      } else yield withIndex(doc, null);
    }
  }
  return (collection as { transform(f: (docs: unknown[]) => unknown): unknown }).transform((docs) =>
    Lazy(unwound(docs as Document[])),
  );
};
