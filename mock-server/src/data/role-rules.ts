/**
 * An exported app's rules (`rules.json`: `roles` and `filters`) as the query filter of each action,
 * per caller (docs/decisions/0029-rule-roles.md). Without Device Sync, App Services assigns a role
 * per document and request: the first role, in order, whose `apply_when` holds for the caller and
 * the document; a document no role applies to is not there for the caller. So the documents an
 * action may see or touch are those whose first applying role grants it, narrowed by that role's
 * document filter:
 *
 *   $or: [ {when₁, filter₁, grant₁}, {when₂, filter₂, grant₂, $nor: [when₁]}, … ]
 *
 * where `whenᵢ` is the role's `apply_when` made a query over the document (its parts over the
 * caller, `%%user`, `%%values`, `%%environment`, `%%request`, are decided here: true, false, or gone), and a
 * role that applies to every document ends the list. The filters whose `apply_when` holds are
 * ANDed with it for reads, writes and deletes. A role whose field-level permissions read (write)
 * some fields reads (may write) every document it applies to, cut down to those fields
 * (`readShape`, `writeCuts`), and the filters' projections cut what a read returns.
 *
 * A `%function` has been called before (Rules.prepare): its value is what the function returned.
 *
 * `{"%%prevRoot": {"%exists": …}}` says whether there is a document before the action (none for an
 * insert). Whatever this server does not evaluate (field permissions as expressions, the
 * fields of `%%prevRoot`, a comparison of two document fields, an unknown operator) throws
 * `UnsupportedRule`: the namespace's actions are refused with what it is, never run with more or
 * fewer rights than the app gave.
 */
import type { CollectionRule } from "../config/app-config.ts";
import {
  Computed,
  conversionOperators,
  type Expansions,
  ExpressionError,
  expand,
  holds,
  isOperator,
  operandValue,
} from "../functions/can-evaluate.ts";
import { type Document, isDocument } from "./documents.ts";

export type RuleAction = "read" | "write" | "insert" | "delete";

/** Whether a document qualifies: always, never, or when it matches this MongoDB query. */
export type Condition = boolean | Document;

/** A part of the app's rules this server does not evaluate. */
export class UnsupportedRule extends Error {}

type Role = NonNullable<CollectionRule["roles"]>[number];
type QueryFilter = NonNullable<CollectionRule["filters"]>[number];

/** Operators of the expression language, written `%op` or `$op`, and their MongoDB query names. */
const comparisons = new Set(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists"]);

const unsupported = (what: string) => new UnsupportedRule(what);

/** An undefined value: an expansion that names nothing (a user without custom data, say). */
const missing = Symbol("missing");

function and(parts: Condition[]): Condition {
  if (parts.includes(false)) return false;
  const queries = parts.filter((part): part is Document => part !== true);
  if (queries.length === 0) return true;
  return queries.length === 1 ? queries[0]! : { $and: queries };
}

function or(parts: Condition[]): Condition {
  if (parts.includes(true)) return true;
  const queries = parts.filter((part): part is Document => part !== false);
  if (queries.length === 0) return false;
  return queries.length === 1 ? queries[0]! : { $or: queries };
}

function list(operator: string, value: unknown): unknown[] {
  if (!Array.isArray(value)) throw unsupported(`${operator} takes a list`);
  return value;
}

/** The value of an expansion or value operator, `%%root…` refused (a comparison of two fields). */
function expanded(value: unknown, expansions: Expansions): unknown {
  if (typeof value === "string" && value.startsWith("%%root"))
    throw unsupported(`${value} compared with another field of the document`);
  try {
    return operandValue(value, expansions);
  } catch (error) {
    if (error instanceof ExpressionError) throw unsupported(error.message);
    throw error;
  }
}

/** A condition on one field of the document: a value (equality, as MongoDB's) or operators on it. */
function fieldCondition(field: string, wanted: unknown, expansions: Expansions): Condition {
  if (field === "" || field.startsWith("$")) throw unsupported(`the field name '${field}'`);
  const keys = isDocument(wanted) ? Object.keys(wanted) : [];
  const operators = keys.length > 0 && keys.every(isOperator) && !conversionOperators.includes(keys[0]!);
  if (!operators) {
    const value = expanded(wanted, expansions);
    if (value === undefined) return false;
    // A list an expansion names holds the values the field may have, as the service's own example
    // `{"email": "%%user.custom_data.manages"}` reads; a literal list is a value like any other.
    const named = typeof wanted === "string" && wanted.startsWith("%%");
    return named && Array.isArray(value) ? { [field]: { $in: value } } : { [field]: value };
  }
  const parts: Condition[] = [];
  for (const [operator, operand] of Object.entries(wanted as Document)) {
    const name = operator.startsWith("%") ? `$${operator.slice(1)}` : operator;
    if (name === "$and" || name === "$or") {
      const each = list(operator, operand).map((one) => fieldCondition(field, one, expansions));
      parts.push(name === "$and" ? and(each) : or(each));
      continue;
    }
    if (!comparisons.has(name)) throw unsupported(`the operator ${operator}`);
    const value = expanded(operand, expansions);
    if (name === "$exists") {
      parts.push({ [field]: { $exists: Boolean(value) } });
    } else if (name === "$in" || name === "$nin") {
      const values = list(operator, value).map((one) => expanded(one, expansions));
      const known = values.filter((one) => one !== undefined);
      parts.push(known.length === 0 ? name === "$nin" : { [field]: { [name]: known } });
    } else if (value === undefined) {
      // As the expression language compares with a value that names nothing: never equal.
      parts.push(name === "$ne");
    } else {
      parts.push({ [field]: { [name]: value } });
    }
  }
  return and(parts);
}

/**
 * An App Services expression (`apply_when`, a permission) as a condition on the document: a
 * field's name or `%%root.<field>` is the document's; an expansion of the caller is decided here.
 */
export function condition(expression: unknown, expansions: Expansions): Condition {
  if (expression === undefined || expression === true) return true;
  if (expression === false) return false;
  if (!isDocument(expression)) throw unsupported("an expression that is not true, false or a document");
  const parts: Condition[] = [];
  for (const [key, value] of Object.entries(expression)) {
    if (key === "%and" || key === "%or") {
      const each = list(key, value).map((one) => condition(one, expansions));
      parts.push(key === "%and" ? and(each) : or(each));
    } else if (key === "%%root") {
      throw unsupported("%%root as a whole");
    } else if (key === "%%prevRoot") {
      parts.push(previousDocument(value, expansions));
    } else if (key.startsWith("%%root.")) {
      parts.push(fieldCondition(key.slice("%%root.".length), value, expansions));
    } else if (key.startsWith("%%")) {
      // The caller's side, e.g. {"%%user.id": "%%root.owner_id"} (equality with a field) or
      // {"%%user.data.email": {"%exists": true}} (decided here).
      if (typeof value === "string" && value.startsWith("%%root."))
        parts.push(fieldCondition(value.slice("%%root.".length), key, expansions));
      else parts.push(decided(key, value, expansions));
    } else if (key.startsWith("%") || key.startsWith("$")) {
      throw unsupported(`the operator ${key} at the top of an expression`);
    } else {
      parts.push(fieldCondition(key, value, expansions));
    }
  }
  return and(parts);
}

/**
 * `{"%%prevRoot": {"%exists": <bool>}}`: whether there is a document before the action (there is
 * none for an insert), the documented insert-only pattern. Its fields are not evaluated here.
 */
function previousDocument(value: unknown, expansions: Expansions): boolean {
  const keys = isDocument(value) ? Object.keys(value) : [];
  if (expansions.documentBefore === undefined || keys.length !== 1 || !["%exists", "$exists"].includes(keys[0]!))
    throw unsupported("%%prevRoot but for whether it exists");
  return holdsHere(() => (expansions.documentBefore ? {} : undefined), value, expansions);
}

function decided(key: string, value: unknown, expansions: Expansions): boolean {
  return holdsHere(() => expand(key, expansions), value, expansions);
}

/** Whether `actual()` satisfies `value`, decided here; what the expression language cannot say, refused. */
function holdsHere(actual: () => unknown, value: unknown, expansions: Expansions): boolean {
  try {
    return holds(actual(), value, expansions);
  } catch (error) {
    if (error instanceof ExpressionError) throw unsupported(error.message);
    throw error;
  }
}

/** A MongoDB query whose values may be expansions (a document filter, a filter's query). */
export function expandQuery(query: unknown, expansions: Expansions): Condition {
  if (query === undefined || query === true) return true;
  if (query === false) return false;
  if (!isDocument(query)) throw unsupported("a query that is not true, false or a document");
  let names = false;
  const walk = (value: unknown): unknown => {
    if (value instanceof Computed || (typeof value === "string" && value.startsWith("%%"))) {
      const found = expanded(value, expansions);
      if (found === undefined) names = true;
      return found === undefined ? missing : found;
    }
    if (Array.isArray(value)) return value.map(walk);
    if (isDocument(value)) {
      const keys = Object.keys(value);
      if (keys.length === 1 && (conversionOperators.includes(keys[0]!) || keys[0] === "%function")) {
        const found = expanded(value, expansions);
        if (found === undefined) names = true;
        return found === undefined ? missing : found;
      }
      const out: Document = {};
      for (const [key, inner] of Object.entries(value)) out[key] = walk(inner);
      return out;
    }
    return value;
  };
  const out = walk(query) as Document;
  // A query holding a value that names nothing matches nothing (what it would match is unknown).
  return names ? false : Object.keys(out).length === 0 ? true : out;
}

/** A field's permission, `read` or `write`: a boolean (an expression per field is not evaluated here). */
function fieldPermission(role: Role, field: string, permissions: unknown, which: "read" | "write"): boolean {
  if (!isDocument(permissions)) throw unsupported(`the permissions of field '${field}' of role '${role.name ?? "?"}'`);
  const value = permissions[which] ?? false;
  if (typeof value !== "boolean")
    throw unsupported(`the ${which} permission of field '${field}' of role '${role.name ?? "?"}' (not true or false)`);
  return value;
}

/**
 * A field's permissions over its embedded fields (`fields` inside a field's permissions): the
 * field whole (its own `read` or `write`, which overrides those of its embedded fields, as the
 * reference has it), or only the embedded fields named, each the same way; an embedded field not
 * named is not granted (UNCONFIRMED: decision 0002). Data, so that a worker can apply it.
 */
export interface FieldTree {
  whole: boolean;
  fields: Record<string, FieldTree>;
}

/** What a role's field-level permissions let be read (`write` lets read too) or written. */
interface FieldGrants {
  /** The fields named, each granted whole or not. */
  named: Map<string, boolean>;
  /** Of the named fields not granted whole, those whose embedded fields are granted some. */
  embedded: Map<string, FieldTree>;
  /** Whether the fields not named are granted (`additional_fields`). */
  others: boolean;
}

function fieldGrants(role: Role, action: "read" | "write"): FieldGrants {
  const granted = (field: string, permissions: unknown) =>
    fieldPermission(role, field, permissions, "write") ||
    (action === "read" && fieldPermission(role, field, permissions, "read"));
  /** The tree of a field's permissions, or undefined when it grants nothing. */
  const tree = (path: string, permissions: unknown): FieldTree | undefined => {
    if (granted(path, permissions)) return { whole: true, fields: {} };
    const embedded = isDocument(permissions) && isDocument(permissions.fields) ? permissions.fields : {};
    const fields: Record<string, FieldTree> = {};
    for (const [name, inner] of Object.entries(embedded)) {
      const child = tree(`${path}.${name}`, inner);
      if (child) fields[name] = child;
    }
    return Object.keys(fields).length > 0 ? { whole: false, fields } : undefined;
  };
  const named = new Map<string, boolean>();
  const embedded = new Map<string, FieldTree>();
  if (isDocument(role.fields))
    for (const [field, permissions] of Object.entries(role.fields)) {
      const found = tree(field, permissions);
      named.set(field, found?.whole === true);
      if (found && !found.whole) embedded.set(field, found);
    }
  const others = role.additional_fields === undefined ? false : granted("additional_fields", role.additional_fields);
  return { named, embedded, others };
}

/** Whether field-level permissions grant `action` on every field, some fields only, or none. */
function fieldsGrant(role: Role, action: "read" | "write"): "all" | "some" | "none" {
  const { named, embedded, others } = fieldGrants(role, action);
  const values = [...named.values()];
  if (others && values.every(Boolean)) return "all";
  return others || values.some(Boolean) || embedded.size > 0 ? "some" : "none";
}

/** The document-level grant of `write`: `write`, or field-level permissions covering every field. */
function wholeWrite(role: Role, expansions: Expansions): Condition {
  return or([condition(role.write ?? false, expansions), fieldsGrant(role, "write") === "all"]);
}

/** The document-level grant of `read`: `read`, `write`, or field-level permissions covering every field. */
function wholeRead(role: Role, expansions: Expansions): Condition {
  return or([
    condition(role.read ?? false, expansions),
    wholeWrite(role, expansions),
    fieldsGrant(role, "read") === "all",
  ]);
}

/** What a role lets its holder do with a document it applies to. */
function grant(role: Role, action: RuleAction, expansions: Expansions): Condition {
  if (action === "delete") return condition(role.delete ?? false, expansions);
  // Some fields readable or writable: every document the role applies to is read, or may be
  // written, with those fields only where the role does not read or write it whole (fieldCuts).
  const someFields = (which: "read" | "write") => fieldsGrant(role, which) === "some";
  // An insert writes every field of the new document: it needs the role's write too (the service's
  // insert-only pattern grants write where there is no document before, `%%prevRoot`).
  if (action === "insert")
    return and([condition(role.insert ?? false, expansions), someFields("write") || wholeWrite(role, expansions)]);
  if (action === "read") return someFields("read") || wholeRead(role, expansions);
  return someFields("write") || wholeWrite(role, expansions);
}

/**
 * The field-level side of the roles, for reads or writes: for each role in order, the documents
 * it applies to (the first a document matches is its role), those it reads (writes) whole, and
 * otherwise the fields it reads (writes), or (`others`) those it does not. Data, so that a worker
 * can apply it.
 */
export interface FieldCut {
  when: Condition;
  whole: Condition;
  fields: string[];
  others: boolean;
  /** Fields granted in part: their embedded fields as the tree grants them (before `fields`). */
  embedded?: Record<string, FieldTree>;
}

/** How the documents a read returns are cut down: by their role's fields, then by the filters' projections. */
export interface ReadShape {
  roles: FieldCut[];
  /** MongoDB projections, applied in order. */
  projections: Document[];
}

const mayCut = new WeakMap<CollectionRule, boolean>();

/** Whether a rule can cut documents down at all: field-level permissions or filters' projections. */
function cutsDocuments(rule: CollectionRule): boolean {
  let cuts = mayCut.get(rule);
  if (cuts === undefined) {
    const some = (value: unknown) => isDocument(value) && Object.keys(value).length > 0;
    cuts =
      (rule.roles ?? []).some((role) => some(role.fields) || some(role.additional_fields)) ||
      (rule.filters ?? []).some((filter) => some(filter.projection));
    mayCut.set(rule, cuts);
  }
  return cuts;
}

/** The roles' field cuts for reads or writes, or undefined when every role reads (writes) documents whole. */
function fieldCuts(rule: CollectionRule, action: "read" | "write", expansions: Expansions): FieldCut[] | undefined {
  const cuts: FieldCut[] = [];
  let partial = false;
  for (const role of rule.roles ?? []) {
    const applies = condition(role.apply_when ?? true, expansions);
    if (applies === false) continue;
    const whole = action === "read" ? wholeRead(role, expansions) : wholeWrite(role, expansions);
    const { named, embedded, others } = fieldGrants(role, action);
    const fields = [...named].filter(([, granted]) => granted !== others).map(([field]) => field);
    if (whole !== true && fieldsGrant(role, action) === "some") partial = true;
    cuts.push({
      when: applies,
      whole,
      fields,
      others,
      ...(embedded.size > 0 ? { embedded: Object.fromEntries(embedded) } : {}),
    });
    if (applies === true) break;
  }
  return partial ? cuts : undefined;
}

/** How a read's documents are cut down for this caller, or undefined when they are returned whole. */
export function readShape(rule: CollectionRule, given: Expansions): ReadShape | undefined {
  if (!cutsDocuments(rule)) return undefined;
  const expansions = { ...given, documentBefore: true };
  const roles = fieldCuts(rule, "read", expansions) ?? [];
  const projections: Document[] = [];
  for (const filter of rule.filters ?? []) {
    if (condition(filter.apply_when ?? true, expansions) !== true) continue;
    if (isDocument(filter.projection) && Object.keys(filter.projection).length > 0) projections.push(filter.projection);
  }
  return roles.length > 0 || projections.length > 0 ? { roles, projections } : undefined;
}

/**
 * Which fields of the documents it writes (inserts) a caller may set, or undefined when every
 * role writes documents whole: an insert or update setting another field is refused.
 */
export function writeCuts(rule: CollectionRule, given: Expansions, inserting: boolean): FieldCut[] | undefined {
  return cutsDocuments(rule) ? fieldCuts(rule, "write", { ...given, documentBefore: !inserting }) : undefined;
}

/** The documents of the namespace that `action` may see or touch for this caller. */
export function roleCondition(rule: CollectionRule, action: RuleAction, given: Expansions): Condition {
  const expansions = { ...given, documentBefore: action !== "insert" };
  const clauses: Condition[] = [];
  const earlier: Document[] = [];
  for (const role of rule.roles ?? []) {
    const applies = condition(role.apply_when ?? true, expansions);
    if (applies === false) continue;
    const granted = grant(role, action, expansions);
    if (granted !== false) {
      const filters = isDocument(role.document_filters) ? role.document_filters : {};
      const documentFilter = action === "read" ? (filters.read ?? filters.write) : filters.write;
      const notEarlier: Condition = earlier.length > 0 ? { $nor: [...earlier] } : true;
      clauses.push(and([applies, expandQuery(documentFilter ?? true, expansions), granted, notEarlier]));
    }
    // A role that applies to every document leaves none to the roles after it.
    if (applies === true) break;
    earlier.push(applies);
  }
  const roles = or(clauses);
  if (action === "insert") return roles;
  return and([roles, ...(rule.filters ?? []).map((filter) => filterCondition(filter, expansions))]);
}

function filterCondition(filter: QueryFilter, expansions: Expansions): Condition {
  const applies = condition(filter.apply_when ?? true, expansions);
  if (applies === false) return true;
  if (applies !== true) throw unsupported(`the apply_when of filter '${filter.name ?? "?"}' names the document`);
  return expandQuery(filter.query ?? true, expansions);
}

const customDataNamed = new WeakMap<object, boolean>();

/** Whether any of the rules names the caller's custom user data (which must then be read first). */
export function namesCustomData(rules: Record<string, unknown>): boolean {
  let named = customDataNamed.get(rules);
  if (named === undefined) {
    named = JSON.stringify(rules).includes("%%user.custom_data");
    customDataNamed.set(rules, named);
  }
  return named;
}
