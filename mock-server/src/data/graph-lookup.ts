/**
 * `$graphLookup` as MongoDB runs it (document_source_graph_lookup.cpp): a breadth-first search of
 * the `from` collection, each level one `{connectToField: {$in: frontier}}` (with
 * `restrictSearchWithMatch`), each document visited once by its `_id`, the next frontier the
 * `connectFromField` values of the documents first found at this level. mingo's searched every
 * path again (exponential work: a 100-document chain linked both ways did not finish), answered
 * `{}` for a frontier value that matched nothing and lost the rest of that array, matched numbers
 * by type, recursed on a missing `connectFromField` as null and did not check its specification.
 *
 * Values match as a query's equality does (1, a Long 1 and a Decimal128 1.0 are one value; an
 * array matches by an element or whole); a null matches a null only, never a missing field
 * (missing_fields.js). `depthField` is a long, set in place if the document has the field,
 * appended otherwise. The documents come level by level, each level in the collection's order
 * (MongoDB's order is unspecified).
 */
import { Long } from "bson";
import { evalExpr } from "mingo/core";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { bsonTypeAlias, equalityKey } from "./bson-order.ts";
import { type Document, isDocument } from "./documents.ts";
import { isNumeric } from "./numeric-operators.ts";
import { ownField } from "./own-fields.ts";
import { step } from "./query-limits.ts";
import { keysOf } from "./wide-keys.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

const stringArguments = new Set(["from", "as", "connectFromField", "connectToField", "depthField"]);

/** A `$graphLookup` specification refused as MongoDB's `createFromBson` refuses it, with its texts. */
export function checkGraphLookup(spec: unknown): void {
  if (!isDocument(spec))
    throw errors.mongo(`the $graphLookup stage specification must be an object, but found ${bsonTypeAlias(spec)}`);
  for (const name of keysOf(spec)) {
    const value = spec[name];
    if (name === "startWith") continue;
    if (name === "maxDepth") {
      if (!isNumeric(value)) throw errors.mongo(`maxDepth must be numeric, found type: ${bsonTypeAlias(value)}`);
      const n = Number(typeof value === "number" ? value : String(value));
      const whole = Math.trunc(n);
      if (whole < 0) throw errors.mongo(`maxDepth requires a nonnegative argument, found: ${whole}`);
      if (whole !== n) throw errors.mongo(`maxDepth could not be represented as a long long: ${whole}`);
    } else if (name === "restrictSearchWithMatch") {
      if (!isDocument(value))
        throw errors.mongo(`restrictSearchWithMatch must be an object, found ${bsonTypeAlias(value)}`);
    } else if (stringArguments.has(name)) {
      if (typeof value !== "string")
        throw errors.mongo(`expected string as argument for ${name}, found: ${bsonTypeAlias(value)}`);
    } else throw errors.mongo(`Unknown argument to $graphLookup: ${name}`);
  }
  const required = ["from", "as", "connectFromField", "connectToField"];
  if (!("startWith" in spec) || required.some((name) => typeof spec[name] !== "string" || spec[name] === ""))
    throw errors.mongo(
      "$graphLookup requires 'from', 'as', 'startWith', 'connectFromField', and 'connectToField' to be specified.",
    );
}

/**
 * Each value a path reaches in a document, through documents and the documents of arrays (nothing
 * where it reaches nothing), handed to `leaf`.
 */
function walkPath(doc: unknown, parts: string[], leaf: (value: unknown) => void): void {
  const walk = (value: unknown, i: number): void => {
    if (value === undefined) return;
    if (i === parts.length) {
      leaf(value);
      return;
    }
    if (Array.isArray(value)) {
      for (const element of value) if (isDocument(element)) walk(ownField(element, parts[i]!), i + 1);
    } else if (isDocument(value)) walk(ownField(value, parts[i]!), i + 1);
  };
  walk(doc, 0);
}

/** The values a path holds, as a query's equality finds them: a last array both whole and by its elements. */
function heldValues(doc: unknown, parts: string[]): unknown[] {
  const out: unknown[] = [];
  walkPath(doc, parts, (value) => {
    out.push(value);
    if (Array.isArray(value)) out.push(...value);
  });
  return out;
}

/**
 * The values a visited document's `connectFromField` adds to the frontier: an array's elements one
 * by one, and those of arrays in it (MongoDB's `extractAllElementsAlongPath`, then an array's
 * elements); nothing for a missing field.
 */
function connectedValues(doc: Document, parts: string[]): unknown[] {
  const out: unknown[] = [];
  walkPath(doc, parts, (value) => {
    if (!Array.isArray(value)) out.push(value);
    else for (const element of value) out.push(...(Array.isArray(element) ? element : [element]));
  });
  return out;
}

/** `doc` with `depth` (a long) at `path`: in place when the field is there, appended otherwise. */
function withDepth(doc: Document, path: string[], depth: number): Document {
  const [head, ...rest] = path as [string, ...string[]];
  const value =
    rest.length === 0 ? Long.fromNumber(depth) : withDepth(isDocument(doc[head]) ? doc[head] : {}, rest, depth);
  return { ...doc, [head]: value };
}

/** The `$graphLookup` stage; `compile` makes a query's test (the engine's). */
export function graphLookupStage(compile: (query: Document) => { test(doc: unknown): boolean }): AnyFn {
  return (collection, expr, options) => {
    checkGraphLookup(expr);
    const spec = expr as Document;
    const resolver = (options as { collectionResolver?: (name: string) => unknown }).collectionResolver;
    const resolved = resolver?.(spec.from as string);
    const from = (Array.isArray(resolved) ? resolved : []) as Document[];
    const restrict = isDocument(spec.restrictSearchWithMatch) ? compile(spec.restrictSearchWithMatch) : null;
    const maxDepth = spec.maxDepth === undefined ? Number.POSITIVE_INFINITY : Number(String(spec.maxDepth));
    const depthPath = typeof spec.depthField === "string" ? spec.depthField.split(".") : null;
    const toParts = (spec.connectToField as string).split(".");
    const fromParts = (spec.connectFromField as string).split(".");
    // The collection's documents by the values their connectToField holds (the search's index).
    const byValue = new Map<string, number[]>();
    from.forEach((doc, place) => {
      step();
      if (restrict && !restrict.test(doc)) return;
      for (const key of new Set(heldValues(doc, toParts).map(equalityKey))) {
        const places = byValue.get(key);
        if (places) places.push(place);
        else byValue.set(key, [place]);
      }
    });
    return (collection as { map(f: (doc: unknown) => unknown): unknown }).map((input) => {
      const start = evalExpr(input, spec.startWith, options as never) as unknown;
      let frontier = new Set((Array.isArray(start) ? start : start === undefined ? [] : [start]).map(equalityKey));
      const visited = new Map<string, Document>();
      for (let depth = 0; frontier.size > 0 && depth <= maxDepth; depth++) {
        const found = new Set<number>();
        for (const key of frontier) for (const place of byValue.get(key) ?? []) found.add(place);
        const next = new Set<string>();
        for (const place of [...found].sort((a, b) => a - b)) {
          step();
          const doc = from[place]!;
          if (doc._id === undefined)
            throw errors.mongo(
              `Documents in the '${spec.from}' namespace must contain an _id for de-duplication in $graphLookup`,
            );
          const id = equalityKey(doc._id);
          if (visited.has(id)) continue;
          visited.set(id, depthPath ? withDepth(doc, depthPath, depth) : doc);
          for (const value of connectedValues(doc, fromParts)) next.add(equalityKey(value));
        }
        frontier = next;
      }
      return { ...(input as Document), [spec.as as string]: [...visited.values()] };
    });
  };
}
