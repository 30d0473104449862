/**
 * MongoDB's update operators (`$set`, `$unset`, `$inc`, `$mul`, `$min`, `$max`, `$currentDate`,
 * `$rename`, `$push`, `$addToSet`, `$pop`, `$pull`, `$pullAll`, `$bit`) applied to one document as
 * MongoDB's server applies them, in place of mingo's updater, which left positional `$` paths
 * refused, `$[]` paths and paths through a number or an array silently unchanged, padded arrays
 * without bound, and applied `$rename` onto an array's field by dropping the value.
 *
 * An update is checked when it is parsed (`checkUpdateOperators`: operands, paths, array filters,
 * conflicts; errors even when nothing matches), then for each document its paths are resolved
 * (update-paths.ts) and the operators applied in the order of their paths — field names in code
 * point order, array indexes by number — as MongoDB 5.0 and later apply them (new fields appear in
 * that order). Creating a field inside a value that holds none, or inside an array by a name, is
 * MongoDB's "Cannot create field" error. See docs/decisions/0041-update-operators.md.
 */
import { Long } from "bson";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import {
  addToSetUpdate,
  addToSetValues,
  checkPush,
  currentDateUpdate,
  minMaxUpdate,
  type Outcome,
  pushUpdate,
} from "./bson-operators.ts";
import { bsonTypeAlias, compareStrings, equalBson } from "./bson-order.ts";
import { type Document, isDocument, toEJSONText } from "./documents.ts";
import { matchedPosition } from "./matched-position.ts";
import { arithmeticUpdate, isInteger, isLong, isNumeric } from "./numeric-operators.ts";
import { ownField, setOwnField } from "./own-fields.ts";
import { compileQuery } from "./query-engine.ts";
import { step } from "./query-limits.ts";
import { elementText, shellText } from "./shell-text.ts";
import { finish } from "./turns.ts";
import {
  arrayFilterChecks,
  checkPath,
  childOf,
  compileArrayFilters,
  concretePaths,
  isDynamic,
  isIndex,
  maxPadding,
  type Positions,
  parseArrayFilters,
} from "./update-paths.ts";
import { keysOf } from "./wide-keys.ts";

/** The update operators, each with the check of its operand MongoDB makes when it parses one. */
const operandChecks: Record<string, (path: string, operand: unknown) => void> = {
  $set: () => {},
  $setOnInsert: () => {},
  $unset: () => {},
  $inc: (path, operand) => {
    if (!isNumeric(operand))
      throw errors.mongo(`Cannot increment with non-numeric argument: {${path}: ${shellText(operand)}}`);
  },
  $mul: (path, operand) => {
    if (!isNumeric(operand))
      throw errors.mongo(`Cannot multiply with non-numeric argument: {${path}: ${shellText(operand)}}`);
  },
  $min: () => {},
  $max: () => {},
  $currentDate: (_path, operand) => {
    if (typeof operand === "boolean") return;
    if (isDocument(operand) && keysOf(operand).length === 1 && "$type" in operand) {
      if (operand.$type === "date" || operand.$type === "timestamp") return;
      throw errors.mongo(
        "The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}",
      );
    }
    if (isDocument(operand))
      throw errors.mongo(`Unrecognized $currentDate option: ${keysOf(operand).find((k) => k !== "$type") ?? ""}`);
    throw errors.mongo(
      `${bsonTypeAlias(operand)} is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({$type: 'timestamp/date'}).`,
    );
  },
  $rename: (path, operand) => {
    if (typeof operand !== "string")
      throw errors.mongo(`The 'to' field for $rename must be a string: ${path}: ${shellText(operand)}`);
    const from = checkPath(path);
    if (isDynamic(from.parts)) throw errors.mongo(`The source field for $rename may not be dynamic: ${path}`);
    const to = checkPath(operand);
    if (isDynamic(to.parts)) throw errors.mongo(`The destination field for $rename may not be dynamic: ${operand}`);
    if (path === operand)
      throw errors.mongo(`The source and target field for $rename must differ: ${path}: ${shellText(operand)}`);
    if (operand.startsWith(`${path}.`) || path.startsWith(`${operand}.`))
      throw errors.mongo(
        `The source and target field for $rename must not be on the same path: ${path}: ${shellText(operand)}`,
      );
  },
  $push: (_path, operand) => checkPush(operand),
  $addToSet: (_path, operand) => {
    addToSetValues(operand);
  },
  $pop: (path, operand) => {
    if (!isNumeric(operand)) throw errors.mongo(`Expected a number in: ${path}: ${shellText(operand)}`);
    const value = Number(String(operand));
    if (Number.isNaN(value))
      throw errors.mongo(`Expected an integer, but found NaN in: ${path}: ${shellText(operand)}`);
    if (!Number.isInteger(value)) throw errors.mongo(`Expected an integer: ${path}: ${shellText(operand)}`);
    if (value !== 1 && value !== -1) throw errors.mongo(`$pop expects 1 or -1, found: ${shellText(operand)}`);
  },
  // (A condition the query engine cannot read is refused now, as MongoDB refuses it.)
  $pull: (_path, operand) => {
    pullTest(operand);
  },
  $pullAll: (_path, operand) => {
    if (!Array.isArray(operand))
      throw errors.mongo(`$pullAll requires an array argument but was given a ${bsonTypeAlias(operand)}`);
  },
  $bit: (_path, operand) => {
    if (!isDocument(operand))
      throw errors.mongo(
        `The $bit modifier is not compatible with a ${bsonTypeAlias(operand)}. You must pass in an embedded document: {$bit: {field: {and/or/xor: #}}`,
      );
    if (keysOf(operand).length === 0)
      throw errors.mongo(
        `You must pass in at least one bitwise operation. The format is: {$bit: {field: {and/or/xor: #}}`,
      );
    for (const op of keysOf(operand)) {
      if (op !== "and" && op !== "or" && op !== "xor")
        throw errors.mongo(
          `The $bit modifier only supports 'and', 'or', and 'xor', not '${op}' which is an unknown operator: {${op}: ${shellText(operand[op])}}`,
        );
      if (!isInteger(operand[op]))
        throw errors.mongo(
          `The $bit modifier field must be an Integer(32/64 bit); a '${bsonTypeAlias(operand[op])}' is not supported here: {${op}: ${shellText(operand[op])}}`,
        );
    }
  },
};

/**
 * Checks an update operator document as MongoDB checks one when it parses it: each operator's
 * operand, each path (empty names, positional elements), the array filters (each used, each
 * identifier given one) and the paths two operators would both change. At once (`finish`) or, on
 * the main thread, in turns (`inTurns`): it pauses every 256 paths (an update may set 200,000).
 */
export function* updateOperatorChecks(spec: Document, arrayFilters?: unknown): Generator<void, void> {
  const filters = yield* arrayFilterChecks(arrayFilters);
  const used = new Set<string>();
  const paths: string[] = [];
  for (const op of keysOf(spec)) {
    const check = operandChecks[op];
    if (check === undefined) throw errors.mongo(`Unknown modifier: ${op}`);
    const fields = spec[op];
    if (!isDocument(fields))
      throw errors.mongo(
        `Modifiers operate on fields but we found type ${bsonTypeAlias(fields)} instead. For example: {$mod: {<field>: ...}} not {${op}: ${shellText(fields)}}`,
      );
    for (const path of keysOf(fields)) {
      const { identifiers } = checkPath(path);
      for (const identifier of identifiers) {
        if (!filters.has(identifier))
          throw errors.mongo(`No array filter found for identifier '${identifier}' in path '${path}'`);
        used.add(identifier);
      }
      check(path, fields[path]);
      paths.push(path);
      if (op === "$rename") paths.push(fields[path] as string);
      if ((paths.length & 255) === 0) yield;
    }
  }
  for (const name of filters.keys())
    if (!used.has(name))
      throw errors.mongo(`The array filter for identifier '${name}' was not used in the update ${shellText(spec)}`);
  yield* conflictChecks(paths, (path, at) => `Updating the path '${path}' would create a conflict at '${at}'`);
}

/** `updateOperatorChecks` at once. */
export function checkUpdateOperators(spec: Document, arrayFilters?: unknown): void {
  finish(updateOperatorChecks(spec, arrayFilters));
}

/** Throws `message(path, at)` when two of `paths` are the same or one lies inside the other. */
function* conflictChecks(paths: string[], message: (path: string, at: string) => string): Generator<void, void> {
  if (paths.length < 2) return;
  const seen = new Set<string>();
  for (const path of paths) {
    if (seen.has(path)) throw errors.mongo(message(path, path));
    seen.add(path);
    if ((seen.size & 1023) === 0) yield;
  }
  for (let i = 0; i < paths.length; i++) {
    const path = paths[i]!;
    for (let dot = path.indexOf("."); dot !== -1; dot = path.indexOf(".", dot + 1)) {
      const prefix = path.slice(0, dot);
      if (seen.has(prefix)) throw errors.mongo(message(path, prefix));
    }
    if ((i & 1023) === 1023) yield;
  }
}

/** A name of digits without a leading zero: ordered by number among its siblings. */
const numberName = /^(0|[1-9][0-9]*)$/;

/**
 * MongoDB's order of an update's paths, name by name: names of digits by number (the shorter
 * first), any other pair by code point, as the server orders the fields of its update tree.
 */
function comparePaths(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === y) continue;
    if (numberName.test(x) && numberName.test(y) && x.length !== y.length) return x.length - y.length;
    return compareStrings(x, y);
  }
  return a.length - b.length;
}

/** One operator at one concrete path. */
interface Step {
  op: string;
  parts: string[];
  operand: unknown;
  /** `$rename`'s source (the step's parts are its destination). */
  from?: string[];
}

function cannotCreate(part: string, name: string, value: unknown): never {
  throw errors.mongo(`Cannot create field '${part}' in element ${elementText(name, value)}`);
}

/**
 * Writes `value` at `parts`, creating documents (and padding arrays with nulls) on the way. A
 * top-level field named with a `$` is the storage check's refusal, as MongoDB refuses it. Answers
 * how many of the parts name the change as MongoDB's change events do: up to the first that did
 * not exist (`$set: {"a.b.c": 1}` without `a` changes `a`).
 */
function writeAt(doc: Document, parts: readonly string[], value: unknown): number {
  const top = parts[0]!;
  if (top.startsWith("$"))
    throw errors.mongo(
      `The dollar ($) prefixed field '${top}' in '${top}' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.`,
    );
  let node: unknown = doc;
  let name = "";
  let created = -1;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const last = i === parts.length - 1;
    if (isDocument(node)) {
      const child = ownField(node, part);
      if (child === undefined && created === -1) created = i;
      if (last) setOwnField(node, part, value);
      else {
        if (child === undefined) setOwnField(node, part, {});
        node = ownField(node, part);
      }
    } else if (Array.isArray(node) && isIndex(part)) {
      const index = Number(part);
      if (index > node.length + maxPadding) throw errors.mongo(`can't backfill more than ${maxPadding} elements`);
      if (index >= node.length && created === -1) created = i;
      while (node.length < index) node.push(null);
      if (last) node[index] = value;
      else {
        if (node[index] === undefined) node[index] = {};
        node = node[index];
      }
    } else cannotCreate(part, name, node);
    name = part;
  }
  return created === -1 ? parts.length : created + 1;
}

/** Removes the field at `parts` (an array's element becomes null, as MongoDB's `$unset` leaves it). */
function removeAt(doc: Document, parts: readonly string[]): void {
  let node: unknown = doc;
  for (const part of parts.slice(0, -1)) node = childOf(node, part);
  const last = parts.at(-1)!;
  if (isDocument(node)) {
    if (Object.hasOwn(node, last)) delete node[last];
  } else if (Array.isArray(node) && isIndex(last) && Number(last) < node.length) node[Number(last)] = null;
}

/**
 * Where a path cannot be followed: the element (its name and value) that can hold none of the
 * path's next name — a value that is no document or array, or an array and a name that is no
 * index. Null when the path can be followed (to its end, or to where it stops existing).
 */
function blockage(doc: Document, parts: readonly string[]): { part: string; name: string; value: unknown } | null {
  let node: unknown = doc;
  let name = "";
  for (const part of parts) {
    if (isDocument(node) || (Array.isArray(node) && isIndex(part))) {
      node = childOf(node, part);
      if (node === undefined) return null;
      name = part;
    } else return { part, name, value: node };
  }
  return null;
}

function valueAt(doc: Document, parts: readonly string[]): unknown {
  let node: unknown = doc;
  for (const part of parts) node = childOf(node, part);
  return node;
}

/** Whether two values are the same BSON, types and field order included (a `$set` of one changes nothing). */
const identical = (a: unknown, b: unknown): boolean =>
  a === b ? typeof a !== "number" || !Object.is(a, -0) : toEJSONText([a]) === toEJSONText([b]);

/** `$pull`'s test of an element: a query over documents, a condition on the element, or equality. */
function pullTest(condition: unknown): (element: unknown) => boolean {
  if (isDocument(condition)) {
    const first = keysOf(condition)[0];
    if (first?.startsWith("$") && !["$and", "$or", "$nor", "$expr", "$where", "$text", "$comment"].includes(first)) {
      const query = compileQuery({ x: condition });
      return (element) => query.test({ x: element });
    }
    const query = compileQuery(condition);
    return (element) => isDocument(element) && query.test(element);
  }
  if (condition instanceof RegExp || (condition as { _bsontype?: string })?._bsontype === "BSONRegExp") {
    const query = compileQuery({ x: condition });
    return (element) => query.test({ x: element });
  }
  return (element) => equalBson(element, condition);
}

/** `$bit`'s operations on an int or a long (a missing field counts as 0). */
function bitUpdate(doc: Document, path: string, current: unknown, operand: Document): Outcome {
  if (current !== undefined && !isInteger(current))
    throw errors.mongo(
      `Cannot apply $bit to a value of non-integral type._id: ${shellText(doc._id)} has the field ${path.split(".").pop()} of non-integer type ${bsonTypeAlias(current)}`,
    );
  const wide = isLong(current) || keysOf(operand).some((op) => isLong(operand[op]));
  let value = BigInt(String(current ?? 0));
  for (const op of keysOf(operand)) {
    const by = BigInt(String(operand[op]));
    value = op === "and" ? value & by : op === "or" ? value | by : value ^ by;
  }
  const result = wide ? Long.fromBigInt(BigInt.asIntN(64, value)) : Number(BigInt.asIntN(32, value));
  return current !== undefined && identical(result, current) ? "unchanged" : { set: result };
}

/** `$pop`'s, `$pull`'s and `$pullAll`'s missing field: nothing to do, unless the path cannot exist. */
function untraversable(doc: Document, parts: readonly string[]): Outcome {
  const blocked = blockage(doc, parts);
  if (blocked === null) return "unchanged";
  throw errors.mongo(
    `Cannot use the part (${blocked.part}) of (${parts.join(".")}) to traverse the element (${elementText(blocked.name, blocked.value)})`,
  );
}

/** What one step does to the document (its new value, a removal, or nothing). */
function outcomeOf(doc: Document, change: Step, current: unknown): Outcome {
  const { op, operand } = change;
  const path = change.parts.join(".");
  switch (op) {
    case "$set":
    case "$setOnInsert":
      return current !== undefined && identical(current, operand) ? "unchanged" : { set: operand };
    case "$unset":
      return current === undefined ? "unchanged" : "unset";
    case "$inc":
    case "$mul":
      return arithmeticUpdate(doc, op, path, current, operand);
    case "$min":
    case "$max":
      return minMaxUpdate(op, current, operand);
    case "$currentDate":
      return currentDateUpdate(operand);
    case "$push":
      return pushUpdate(doc, path, current, operand);
    case "$addToSet":
      return addToSetUpdate(doc, path, current, operand);
    case "$pop": {
      if (current === undefined) return untraversable(doc, change.parts);
      if (!Array.isArray(current))
        throw errors.mongo(`Path '${path}' contains an element of non-array type '${bsonTypeAlias(current)}'`);
      if (current.length === 0) return "unchanged";
      return { set: Number(String(operand)) === 1 ? current.slice(0, -1) : current.slice(1) };
    }
    case "$pull":
    case "$pullAll": {
      if (current === undefined) return untraversable(doc, change.parts);
      if (!Array.isArray(current)) throw errors.mongo("Cannot apply $pull to a non-array value");
      const test =
        op === "$pull"
          ? pullTest(operand)
          : (element: unknown) => (operand as unknown[]).some((value) => equalBson(element, value));
      const kept = current.filter((element) => {
        step();
        return !test(element);
      });
      return kept.length === current.length ? "unchanged" : { set: kept };
    }
    case "$bit":
      return bitUpdate(doc, path, current, operand as Document);
    default:
      throw errors.mongo(`Unknown modifier: ${op}`);
  }
}

/** `$rename`'s checks at apply time: neither path may pass through an array. */
function checkRenamePath(doc: Document, parts: readonly string[], which: "source" | "destination"): void {
  let node: unknown = doc;
  for (const part of parts.slice(0, -1)) {
    node = childOf(node, part);
    if (Array.isArray(node))
      throw errors.mongo(
        `The ${which} field cannot be an array element, '${parts.join(".")}' in doc with _id: ${shellText(doc._id)} has an array field called '${part}'`,
      );
    if (node === undefined) return;
  }
}

/**
 * Whether a `$push` only appended to the array (no `$position`, `$sort` or `$slice`): its change
 * is then the new elements' paths (`tags.2`), as MongoDB's change events name it, not the array.
 */
function appends(current: unknown, result: unknown, operand: unknown): boolean {
  if (!Array.isArray(current) || !Array.isArray(result)) return false;
  if (isDocument(operand) && "$each" in operand)
    return !("$position" in operand || "$sort" in operand || "$slice" in operand);
  return true;
}

export interface UpdateContext {
  /** The update's query (what `$` stands for). */
  query?: Document;
  arrayFilters?: Document[];
}

/**
 * Applies an update operator document to `doc` in place; answers the paths it changed as a change
 * event's `updateDescription` names them (empty: the document is as it was). `update` is one `checkUpdateOperators` accepted; `$setOnInsert`
 * is the caller's to merge or drop.
 */
export function applyUpdate(doc: Document, update: Document, context: UpdateContext = {}): string[] {
  let positions: Positions | undefined;
  const steps: Step[] = [];
  let dynamic = false;
  for (const op of keysOf(update)) {
    const fields = update[op];
    if (!isDocument(fields)) continue;
    for (const path of keysOf(fields)) {
      const operand = fields[path];
      if (op === "$rename") {
        steps.push({ op, parts: (operand as string).split("."), operand, from: path.split(".") });
        continue;
      }
      const { parts } = checkPath(path);
      if (isDynamic(parts)) {
        dynamic = true;
        positions ??= {
          matched: context.query ? matchedPosition(doc, context.query, compileQuery) : undefined,
          filters: compileArrayFilters(parseArrayFilters(context.arrayFilters)),
        };
        for (const concrete of concretePaths(doc, parts, positions)) steps.push({ op, parts: concrete, operand });
      } else steps.push({ op, parts, operand });
    }
  }
  if (dynamic)
    finish(
      conflictChecks(
        steps.flatMap((s) => (s.from ? [s.from.join("."), s.parts.join(".")] : [s.parts.join(".")])),
        (path) => `Update created a conflict at '${path}'`,
      ),
    );
  steps.sort((a, b) => comparePaths(a.parts, b.parts));
  const changed: string[] = [];
  for (const s of steps) {
    step();
    if (s.from) {
      const value = valueAt(doc, s.from);
      if (value === undefined) {
        const blocked = blockage(doc, s.from);
        if (blocked === null) continue;
        throw errors.mongo(
          `cannot use the part (${blocked.name} of ${s.from.join(".")}) to traverse the element (${elementText(blocked.name, blocked.value)})`,
        );
      }
      checkRenamePath(doc, s.from, "source");
      checkRenamePath(doc, s.parts, "destination");
      removeAt(doc, s.from);
      changed.push(s.from.join("."), s.parts.slice(0, writeAt(doc, s.parts, value)).join("."));
      continue;
    }
    const current = valueAt(doc, s.parts);
    const outcome = outcomeOf(doc, s, current);
    if (outcome === "unchanged") continue;
    if (outcome === "unset") {
      removeAt(doc, s.parts);
      changed.push(s.parts.join("."));
    } else if (s.op === "$push" && appends(current, outcome.set, s.operand)) {
      const path = s.parts.join(".");
      for (let i = (current as unknown[]).length; i < (outcome.set as unknown[]).length; i++)
        changed.push(`${path}.${i}`);
      writeAt(doc, s.parts, outcome.set);
    } else changed.push(s.parts.slice(0, writeAt(doc, s.parts, outcome.set)).join("."));
  }
  return changed;
}
