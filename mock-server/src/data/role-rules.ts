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
 * ANDed with it for reads, writes and deletes.
 *
 * A `%function` has been called before (Rules.prepare): its value is what the function returned.
 *
 * Whatever this server does not evaluate (field-level permissions short of the whole document,
 * `%%prevRoot`, a filter's projection, a comparison of two document fields, an unknown operator)
 * throws `UnsupportedRule`: the namespace's actions are refused with what it is,
 * never run with more or fewer rights than the app gave.
 */
import type { CollectionRule } from "../config/app-config.ts";
import {
  Computed,
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
  const operators = keys.length > 0 && keys.every(isOperator) && !["%stringToOid", "%oidToString"].includes(keys[0]!);
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

function decided(key: string, value: unknown, expansions: Expansions): boolean {
  try {
    return holds(expand(key, expansions), value, expansions);
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
      if (keys.length === 1 && (keys[0] === "%stringToOid" || keys[0] === "%oidToString" || keys[0] === "%function")) {
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

/**
 * What a role's field-level permissions grant for `action` on their own: every field (each field
 * named grants it, and so do `additional_fields`), some fields, or none.
 */
function fieldsGrant(role: Role, action: "read" | "write"): "all" | "some" | "none" {
  const grants = (permissions: unknown) =>
    isDocument(permissions) && (permissions.write === true || (action === "read" && permissions.read === true));
  const some = (permissions: unknown): boolean =>
    grants(permissions) ||
    (isDocument(permissions) && isDocument(permissions.fields) && Object.values(permissions.fields).some(some));
  const named = isDocument(role.fields) ? Object.values(role.fields) : [];
  if (grants(role.additional_fields) && named.every(grants)) return "all";
  return grants(role.additional_fields) || named.some(some) ? "some" : "none";
}

/** What a role lets its holder do with a document it applies to. */
function grant(role: Role, action: RuleAction, expansions: Expansions): Condition {
  if (action === "delete") return condition(role.delete ?? false, expansions);
  const write = or([condition(role.write ?? false, expansions), fieldsGrant(role, "write") === "all"]);
  // An insert writes every field of the new document: it needs the role's write too (the service's
  // insert-only pattern grants write where there is no document before, `%%prevRoot`).
  if (action === "insert") return and([condition(role.insert ?? false, expansions), write]);
  const byFields = fieldsGrant(role, action);
  const granted =
    action === "read" ? or([condition(role.read ?? false, expansions), write, byFields === "all"]) : write;
  if (granted !== true && byFields === "some")
    throw unsupported(`the field-level permissions of role '${role.name ?? "?"}' (some fields, not the document)`);
  return granted;
}

/** The documents of the namespace that `action` may see or touch for this caller. */
export function roleCondition(rule: CollectionRule, action: RuleAction, expansions: Expansions): Condition {
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
  if (isDocument(filter.projection) && Object.keys(filter.projection).length > 0)
    throw unsupported(`the projection of filter '${filter.name ?? "?"}'`);
  return expandQuery(filter.query ?? true, expansions);
}

const customDataNamed = new WeakMap<object, boolean>();

/** Whether any of the rules names the caller's custom user data (which must then be read first). */
export function namesCustomData(rules: Record<string, CollectionRule>): boolean {
  let named = customDataNamed.get(rules);
  if (named === undefined) {
    named = JSON.stringify(rules).includes("%%user.custom_data");
    customDataNamed.set(rules, named);
  }
  return named;
}
