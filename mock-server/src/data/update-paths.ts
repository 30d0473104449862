/**
 * The paths of an update operator document as MongoDB reads them: checked when the update is
 * parsed (empty field names, positional elements, array filters and their identifiers), then
 * resolved against one document into the concrete paths the operators write — `$` the element of
 * the array the query matched, `$[]` every element, `$[id]` the elements its array filter matches.
 * The operators themselves are updater.ts'.
 */
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { type Document, isDocument } from "./documents.ts";
import { childOf, isIndex } from "./matched-position.ts";
import { forbiddenPath } from "./own-fields.ts";
import { compileQuery } from "./query-engine.ts";
import { step } from "./query-limits.ts";
import { shellText } from "./shell-text.ts";
import { finish } from "./turns.ts";
import { keysOf } from "./wide-keys.ts";

export { childOf, isIndex };

/** `$[id]`'s identifier (`""` for `$[]`), or null for any other path element. */
export function filterIdentifier(part: string): string | null {
  return part.startsWith("$[") && part.endsWith("]") ? part.slice(2, -1) : null;
}

const identifierPattern = /^[a-z][a-zA-Z0-9]*$/;

/**
 * A path's elements, checked as MongoDB checks an update's paths when it parses them. Answers the
 * array filter identifiers it names.
 */
export function checkPath(path: string): { parts: string[]; identifiers: string[] } {
  if (path === "") throw errors.mongo("An empty update path is not valid.");
  const forbidden = forbiddenPath(path);
  if (forbidden !== null) throw errors.mongo(forbidden);
  const parts = path.split(".");
  const identifiers: string[] = [];
  let dollars = 0;
  for (const [i, part] of parts.entries()) {
    if (part === "")
      throw errors.mongo(`The update path '${path}' contains an empty field name, which is not allowed.`);
    if (part === "$") {
      if (i === 0)
        throw errors.mongo(`Cannot have positional (i.e. '$') element in the first position in path '${path}'`);
      if (++dollars > 1) throw errors.mongo(`Too many positional (i.e. '$') elements found in path '${path}'`);
    }
    const identifier = filterIdentifier(part);
    if (identifier !== null) {
      if (i === 0)
        throw errors.mongo(
          `Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '${path}'`,
        );
      if (identifier !== "") identifiers.push(identifier);
    }
  }
  return { parts, identifiers };
}

/** Whether a path names a positional element (`$`, `$[]`, `$[id]`). */
export const isDynamic = (parts: readonly string[]): boolean =>
  parts.some((part) => part === "$" || filterIdentifier(part) !== null);

/** How many filters, names and values the checks below read between two pauses. */
const perTurn = 1024;

/** What the checks of one update's filters have read so far (so they pause however the work is split). */
interface Reads {
  n: number;
}

/**
 * The top-level field name of an array filter (its identifier), as MongoDB finds it; pauses every
 * `perTurn` names (a filter may hold 200,000 conditions).
 */
function* placeholderOf(filter: Document, reads: Reads): Generator<void, string> {
  let found: string | null = null;
  // Depth first, in the order MongoDB reads them: a `$and`, `$or` or `$nor` list's members where
  // the list stands, each whole before the next and before the names after the list.
  const frames: { query: Document; keys: readonly string[]; at: number }[] = [
    { query: filter, keys: keysOf(filter), at: 0 },
  ];
  while (frames.length > 0) {
    const frame = frames[frames.length - 1]!;
    if (frame.at === frame.keys.length) {
      frames.pop();
      continue;
    }
    const key = frame.keys[frame.at++]!;
    if ((++reads.n & (perTurn - 1)) === 0) yield;
    if (key === "$and" || key === "$or" || key === "$nor") {
      const list = frame.query[key];
      if (Array.isArray(list))
        for (let i = list.length - 1; i >= 0; i--) {
          const sub = list[i];
          if (isDocument(sub)) frames.push({ query: sub, keys: keysOf(sub), at: 0 });
        }
      continue;
    }
    if (key.startsWith("$")) continue;
    const name = key.split(".", 1)[0]!;
    if (found !== null && found !== name)
      throw errors.mongo(
        `Error parsing array filter :: caused by :: Expected a single top-level field name, found '${found}' and '${name}'`,
      );
    found = name;
  }
  if (found === null) throw errors.mongo("Cannot use an expression without a top-level field name in arrayFilters");
  if (!identifierPattern.test(found))
    throw errors.mongo(
      `Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '${found}'`,
    );
  return found;
}

/** What an array filter may not hold (MongoDB parses them with every special feature banned). */
const bannedInFilters = new Set(["$expr", "$where", "$text"]);

/** Refuses a banned feature anywhere in an array filter, depth first; pauses every `perTurn` values. */
function* featureChecks(filter: Document, reads: Reads): Generator<void, void> {
  // Pairs, the key on top: a value and the key it stands under in a document (null in an array).
  const pending: unknown[] = [filter, null];
  while (pending.length > 0) {
    const key = pending.pop() as string | null;
    const value = pending.pop();
    if (key !== null && bannedInFilters.has(key))
      throw errors.mongo(`Error parsing array filter :: caused by :: ${key} is not allowed in this context`);
    if ((++reads.n & (perTurn - 1)) === 0) yield;
    if (Array.isArray(value)) for (let i = value.length - 1; i >= 0; i--) pending.push(value[i], null);
    else if (isDocument(value)) {
      const keys = keysOf(value);
      for (let i = keys.length - 1; i >= 0; i--) pending.push(value[keys[i]!], keys[i]!);
    }
  }
}

/**
 * An update's array filters by identifier, checked as MongoDB checks them; pauses every `perTurn`
 * filters or values (an update may send 100,000 of them).
 */
export function* arrayFilterChecks(arrayFilters: unknown): Generator<void, Map<string, Document>> {
  const out = new Map<string, Document>();
  if (arrayFilters === undefined || arrayFilters === null) return out;
  if (!Array.isArray(arrayFilters)) throw errors.mongo("'arrayFilters' must be an array of documents");
  const reads: Reads = { n: 0 };
  for (const filter of arrayFilters) {
    if (!isDocument(filter)) throw errors.mongo("'arrayFilters' must be an array of documents");
    yield* featureChecks(filter, reads);
    const name = yield* placeholderOf(filter, reads);
    if (out.has(name)) throw errors.mongo(`Found multiple array filters with the same top-level field name ${name}`);
    out.set(name, filter);
  }
  return out;
}

/** `arrayFilterChecks` at once. */
export function parseArrayFilters(arrayFilters: unknown): Map<string, Document> {
  return finish(arrayFilterChecks(arrayFilters));
}

/** An array filter compiled: whether an element is one it names. */
export type ElementTest = (element: unknown) => boolean;

export function compileArrayFilters(filters: Map<string, Document>): Map<string, ElementTest> {
  const out = new Map<string, ElementTest>();
  for (const [name, filter] of filters) {
    const query = compileQuery(filter);
    out.set(name, (element) => query.test({ [name]: element }));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// `$`: the element the query matched

// ---------------------------------------------------------------------------------------------
// Resolving positional paths against a document

export interface Positions {
  /** What `$` stands for (undefined: the query matched no array element). */
  matched: number | undefined;
  filters: Map<string, ElementTest>;
}

/** The most elements an update may pad an array with (MongoDB's limit). */
export const maxPadding = 1_500_000;

/**
 * The concrete paths (each a list of elements) a path stands for in `doc`: itself when it names
 * no positional element.
 */
export function concretePaths(doc: Document, parts: readonly string[], positions: Positions): string[][] {
  if (!isDynamic(parts)) return [[...parts]];
  const out: string[][] = [];
  const walk = (node: unknown, i: number, prefix: string[]) => {
    if (i === parts.length) {
      out.push(prefix);
      return;
    }
    const part = parts[i]!;
    if (part === "$") {
      if (positions.matched === undefined)
        throw errors.mongo("The positional operator did not find the match needed from the query.");
      const index = String(positions.matched);
      walk(childOf(node, index), i + 1, [...prefix, index]);
      return;
    }
    const identifier = filterIdentifier(part);
    if (identifier === null) {
      walk(childOf(node, part), i + 1, [...prefix, part]);
      return;
    }
    if (node === undefined)
      throw errors.mongo(`The path '${prefix.join(".")}' must exist in the document in order to apply array updates.`);
    if (!Array.isArray(node))
      throw errors.mongo(`Cannot apply array updates to non-array element ${prefix.at(-1)}: ${shellText(node)}`);
    const test = identifier === "" ? null : positions.filters.get(identifier)!;
    for (let index = 0; index < node.length; index++) {
      step();
      if (test === null || test(node[index])) walk(node[index], i + 1, [...prefix, String(index)]);
    }
  };
  walk(doc, 0, []);
  return out;
}
