/**
 * The element of an array a query matched, as MongoDB's matcher records it (its "elemMatchKey"):
 * what an update's positional `$` (update-paths.ts) and a find's positional projection
 * (`"items.$": 1`, query-engine.ts) stand for. The query engine is passed in (this module imports
 * none, so neither of its callers' modules imports the other).
 */
import { type Document, isDocument } from "./documents.ts";
import { ownField } from "./own-fields.ts";
import { step } from "./query-limits.ts";
import { keysOf } from "./wide-keys.ts";

/** Compiles a query into a test of documents (query-engine.ts' `compileQuery`). */
export type CompileQuery = (query: Document) => { test(doc: unknown): boolean };

/** An array index as a path names one. */
export const isIndex = (part: string): boolean => /^\d+$/.test(part);

/** A child of a value by a path element: a document's field, an array's element by index. */
export function childOf(node: unknown, part: string): unknown {
  if (isDocument(node)) return ownField(node, part);
  if (Array.isArray(node) && isIndex(part)) return node[Number(part)];
  return undefined;
}

/** The operators of a field condition that name no element (MongoDB records none for them). */
const recordsNone = new Set(["$ne", "$nin", "$not", "$size", "$options", "$comment"]);

/** A field condition's parts that each may record the element they matched. */
function recordingParts(condition: unknown): unknown[] {
  if (!isDocument(condition) || !keysOf(condition)[0]?.startsWith("$")) return [condition];
  const parts: unknown[] = [];
  for (const op of keysOf(condition)) {
    const operand = condition[op];
    if (recordsNone.has(op) || (op === "$exists" && !operand)) continue;
    if (op === "$all" && Array.isArray(operand)) {
      for (const member of operand) parts.push(isDocument(member) && "$elemMatch" in member ? member : { $eq: member });
    } else if (op === "$regex" && condition.$options !== undefined) {
      parts.push({ $regex: operand, $options: condition.$options });
    } else parts.push({ [op]: operand });
  }
  return parts;
}

/**
 * The index of the element in the first array along `path` that `condition` matched, if it
 * matched through an array; the last of its parts that matched one wins.
 */
function pathPosition(doc: Document, path: string, condition: unknown, compile: CompileQuery): number | undefined {
  const parts = path.split(".");
  let node: unknown = doc;
  let array: unknown[] | undefined;
  let rest: string[] = [];
  for (let i = 0; i < parts.length; i++) {
    node = childOf(node, parts[i]!);
    if (Array.isArray(node) && (i === parts.length - 1 || !isIndex(parts[i + 1]!))) {
      array = node;
      rest = parts.slice(i + 1);
      break;
    }
  }
  if (array === undefined) return undefined;
  const field = ["x", ...rest].join(".");
  let position: number | undefined;
  for (const part of recordingParts(condition)) {
    const query = compile({ [field]: part });
    for (let i = 0; i < array.length; i++) {
      step();
      if (query.test({ x: [array[i]] })) {
        position = i;
        break;
      }
    }
  }
  return position;
}

/**
 * The position `$` stands for in an update of `doc` by `query`: the index of the array element a
 * condition of the query matched, as MongoDB's matcher records it. Conditions under `$and` and the
 * query's own fields record one (the last that matched wins); `$or`, `$nor`, `$not`, `$ne`, `$nin`,
 * `$size` and `$expr` record none, except an `$or` MongoDB's optimizer rewrites first: of one
 * branch (that branch), or of equalities on one path (an `$in` of their values).
 */
export function matchedPosition(doc: Document, query: Document, compile: CompileQuery): number | undefined {
  let position: number | undefined;
  for (const key of keysOf(query)) {
    const condition = query[key];
    let found: number | undefined;
    if (key === "$and" && Array.isArray(condition)) {
      for (const sub of condition) {
        const inner = isDocument(sub) ? matchedPosition(doc, sub, compile) : undefined;
        if (inner !== undefined) found = inner;
      }
    } else if (key === "$or" && Array.isArray(condition)) {
      const rewritten = orRewritten(condition);
      if (rewritten) found = matchedPosition(doc, rewritten, compile);
    } else if (!key.startsWith("$")) found = pathPosition(doc, key, condition, compile);
    if (found !== undefined) position = found;
  }
  return position;
}

/**
 * An `$or` as MongoDB's optimizer rewrites it before matching: one branch as itself, equalities on
 * one path as `{path: {$in: values}}`; null when it stays an `$or`.
 */
function orRewritten(branches: unknown[]): Document | null {
  if (!branches.every(isDocument)) return null;
  if (branches.length === 1) return branches[0] as Document;
  let path: string | undefined;
  const values: unknown[] = [];
  for (const branch of branches as Document[]) {
    const keys = keysOf(branch);
    const key = keys[0];
    if (keys.length !== 1 || key === undefined || key.startsWith("$") || (path !== undefined && key !== path))
      return null;
    const value = branch[key];
    // (An equality: no operator document; a regular expression is one too.)
    if (isDocument(value) && keysOf(value).some((name) => name.startsWith("$"))) return null;
    path = key;
    values.push(value);
  }
  return path === undefined ? null : { [path]: { $in: values } };
}
