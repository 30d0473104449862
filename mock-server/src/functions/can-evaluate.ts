/**
 * A function's `can_evaluate`: an App Services rule expression, evaluated before a client's call
 * runs the function (false: `rule not matched for function "<name>"`). The documented expression
 * language, but for the MongoDB document expansions (`%%root`, `%%prev`…, which a function call
 * has no document for): an expression is
 * `true`, `false` or a document whose fields all hold; a field's name is an expansion (`%%user.id`,
 * `%%args.0`, `%%values.admins`, `%%environment.tag`, `%%request.remoteIPAddress`, `%%true`), an
 * argument's name (`%%args.<name>`), or `%and` / `%or` over expressions; its value is a value or an
 * expansion (equal to the name's), or operators on it: `$eq` `$ne` `$gt` `$gte` `$lt` `$lte`,
 * `$in` `$nin` `$exists` (also spelled with `%`), `%and` / `%or` over such operators, and the
 * value operators `%stringToOid` / `%oidToString`, `%stringToUuid` / `%uuidToString` and `%function` (its value: what the function
 * returns, called first, innermost first, by `resolveFunctions`).
 */
import { Binary, ObjectId, UUID } from "bson";
import type { AppConfig } from "../config/app-config.ts";
import { type Document, idKey, isDocument } from "../data/documents.ts";

/** What the expansions stand for in one call (each read only when the expression names it). */
export interface Expansions {
  user: () => unknown;
  args: () => unknown;
  values: Document;
  environment: Document;
  request: () => Document;
  /**
   * Data access rules: whether the action has a document before it (`%%prevRoot` exists; false for
   * an insert). Absent where there is no document (`can_evaluate`).
   */
  documentBefore?: boolean;
  /**
   * A schema's `validate` expression (data/schemas.ts): the value it validates (`%%this`) and its
   * value before the write (`%%prev`), the document (`%%root`) and the document before (`%%prevRoot`).
   */
  document?: { this: unknown; prev: unknown; root: unknown; prevRoot: unknown };
}

/** `%%values` and `%%environment`: the app's values and environment, the same for every caller. */
export function appExpansions(config: AppConfig): Pick<Expansions, "values" | "environment"> {
  return {
    values: (config.values ?? {}) as Document,
    environment: { tag: config.environment?.tag ?? "", values: config.environment?.values ?? {} },
  };
}

/** An expression this server cannot evaluate (an unknown operator, a wrong shape). */
export class ExpressionError extends Error {}

/** What a `%function` of an expression returned: a value, whatever its shape (never an expression). */
export class Computed {
  constructor(readonly value: unknown) {}
}

/** Calls one of the app's functions for an expression's `%function` and answers what it returns. */
export type ExpressionFunctionCall = (name: string, args: unknown[]) => Promise<unknown>;

const isFunctionCall = (value: unknown): value is { "%function": unknown } =>
  isDocument(value) && Object.keys(value).length === 1 && Object.hasOwn(value, "%function");

/** Whether an expression (or a set of them) calls a function anywhere. */
export function callsFunctions(expression: unknown): boolean {
  if (Array.isArray(expression)) return expression.some(callsFunctions);
  if (!isDocument(expression)) return false;
  return isFunctionCall(expression) || Object.values(expression).some(callsFunctions);
}

/** A `%function`'s argument as the function gets it: its expansions and value operators applied. */
function argumentValue(value: unknown, expansions: Expansions): unknown {
  if (value instanceof Computed) return value.value;
  if (typeof value === "string" && value.startsWith("%%")) return expand(value, expansions);
  if (Array.isArray(value)) return value.map((item) => argumentValue(item, expansions));
  if (isDocument(value)) {
    const keys = Object.keys(value);
    if (keys.length === 1 && conversionOperators.includes(keys[0]!)) return operandValue(value, expansions);
    const out: Document = {};
    for (const [key, item] of Object.entries(value)) out[key] = argumentValue(item, expansions);
    return out;
  }
  return value;
}

/**
 * The expression with each `%function` replaced by what the function returned (`Computed`):
 * innermost first (a call among another's arguments runs before it), one after the other. Its
 * arguments are expanded for the caller; one naming something `expansions` does not hold (a
 * document's field, in a data access rule) throws ExpressionError, and so does a call without a name.
 */
export async function resolveFunctions(
  expression: unknown,
  expansions: Expansions,
  call: ExpressionFunctionCall,
): Promise<unknown> {
  if (Array.isArray(expression)) {
    const out: unknown[] = [];
    for (const item of expression) out.push(await resolveFunctions(item, expansions, call));
    return out;
  }
  if (!isDocument(expression)) return expression;
  if (isFunctionCall(expression)) {
    const spec = expression["%function"];
    if (!isDocument(spec) || typeof spec.name !== "string" || spec.name === "")
      throw new ExpressionError('%function takes {"name": <function name>, "arguments": [<values>]}');
    const given = spec.arguments ?? [];
    if (!Array.isArray(given)) throw new ExpressionError(`the arguments of %function '${spec.name}' are not a list`);
    const args = (await resolveFunctions(given, expansions, call)) as unknown[];
    return new Computed(
      await call(
        spec.name,
        args.map((arg) => argumentValue(arg, expansions)),
      ),
    );
  }
  const out: Document = {};
  for (const [key, value] of Object.entries(expression)) out[key] = await resolveFunctions(value, expansions, call);
  return out;
}

type Root = "user" | "args" | "values" | "environment" | "request" | "this" | "prev" | "root" | "prevRoot";

/** Whether the expression lets every call through without looking at anything (absent, `{}`, `true`). */
export function allowsEveryone(expression: unknown): boolean {
  return (
    expression === undefined || expression === true || (isDocument(expression) && Object.keys(expression).length === 0)
  );
}

function walk(value: unknown, path: string[]): unknown {
  let at = value;
  for (const key of path) {
    if (at === null || at === undefined) return undefined;
    if (Array.isArray(at)) at = /^\d+$/.test(key) ? at[Number(key)] : undefined;
    else if (typeof at === "object") at = Object.hasOwn(at, key) ? (at as Document)[key] : undefined;
    else return undefined;
  }
  return at;
}

/** The value of an expansion such as `%%user.data.email`. */
export function expand(name: string, expansions: Expansions): unknown {
  if (name === "%%true") return true;
  if (name === "%%false") return false;
  const [root, ...path] = name.slice(2).split(".");
  switch (root as Root) {
    case "user":
      return walk(expansions.user(), path);
    case "args":
      return walk(expansions.args(), path);
    case "values":
      return walk(expansions.values, path);
    case "environment":
      return walk(expansions.environment, path);
    case "request":
      return walk(expansions.request(), path);
    case "this":
    case "prev":
    case "root":
    case "prevRoot":
      if (expansions.document === undefined) throw new ExpressionError(`the expansion ${name} is not available here`);
      return walk(expansions.document[root as "this"], path);
    default:
      throw new ExpressionError(`the expansion ${name} is not available here`);
  }
}

/** A field's value as a value: an expansion expanded, a value operator applied, anything else as it is. */
export function operandValue(value: unknown, expansions: Expansions): unknown {
  if (value instanceof Computed) return value.value;
  if (typeof value === "string" && value.startsWith("%%")) return expand(value, expansions);
  if (isDocument(value)) {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === "%stringToOid") {
      const text = operandValue(value["%stringToOid"], expansions);
      return typeof text === "string" && ObjectId.isValid(text) ? new ObjectId(text) : undefined;
    }
    if (keys.length === 1 && keys[0] === "%oidToString") {
      const id = operandValue(value["%oidToString"], expansions);
      return id instanceof ObjectId ? id.toHexString() : undefined;
    }
    if (keys.length === 1 && keys[0] === "%stringToUuid") {
      const text = operandValue(value["%stringToUuid"], expansions);
      return typeof text === "string" && text.length === 36 && UUID.isValid(text) ? new UUID(text) : undefined;
    }
    if (keys.length === 1 && keys[0] === "%uuidToString") {
      const id = operandValue(value["%uuidToString"], expansions);
      return id instanceof Binary && id.sub_type === Binary.SUBTYPE_UUID && id.position === 16
        ? id.toUUID().toHexString(true)
        : undefined;
    }
    // A call `resolveFunctions` did not make (the caller had no way to call functions).
    if (keys.length === 1 && keys[0] === "%function") throw new ExpressionError("%function cannot be called here");
  }
  return value;
}

const equal = (a: unknown, b: unknown) => a !== undefined && b !== undefined && idKey(a) === idKey(b);

function ordered(a: unknown, b: unknown): number | null {
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
  if (a instanceof Date && b instanceof Date) return a.getTime() - b.getTime();
  return null;
}

function listOf(operator: string, value: unknown): unknown[] {
  if (!Array.isArray(value)) throw new ExpressionError(`${operator} takes a list`);
  return value;
}

export const isOperator = (key: string) => key.startsWith("$") || (key.startsWith("%") && !key.startsWith("%%"));

/** Equality as MongoDB matches it: a list matches a value it holds. */
const matches = (actual: unknown, value: unknown) =>
  Array.isArray(actual) && !Array.isArray(value) ? actual.some((item) => equal(item, value)) : equal(actual, value);

/** The operators that convert a value (no inner operations: a literal or an expansion), as the reference lists them. */
export const conversionOperators: readonly string[] = [
  "%stringToOid",
  "%oidToString",
  "%stringToUuid",
  "%uuidToString",
];

const valueOperators = [...conversionOperators, "%function"];

/** Whether `actual` (a field name's value) satisfies the field's value. */
export function holds(actual: unknown, wanted: unknown, expansions: Expansions): boolean {
  if (!isDocument(wanted) || !Object.keys(wanted).some(isOperator) || valueOperators.includes(Object.keys(wanted)[0]!))
    return matches(actual, operandValue(wanted, expansions));
  return Object.entries(wanted).every(([operator, operand]) => {
    const name = operator.startsWith("%") ? `$${operator.slice(1)}` : operator;
    if (name === "$and") return listOf(operator, operand).every((each) => holds(actual, each, expansions));
    if (name === "$or") return listOf(operator, operand).some((each) => holds(actual, each, expansions));
    const value = operandValue(operand, expansions);
    const candidates = Array.isArray(actual) ? actual : [actual];
    switch (name) {
      case "$exists":
        return (actual !== undefined) === Boolean(value);
      case "$eq":
        return matches(actual, value);
      case "$ne":
        return !matches(actual, value);
      case "$in":
        return candidates.some((item) => listOf(operator, value).some((each) => equal(item, each)));
      case "$nin":
        return !candidates.some((item) => listOf(operator, value).some((each) => equal(item, each)));
      case "$gt":
      case "$gte":
      case "$lt":
      case "$lte":
        return candidates.some((item) => {
          const order = ordered(item, value);
          if (order === null) return false;
          return name === "$gt" ? order > 0 : name === "$gte" ? order >= 0 : name === "$lt" ? order < 0 : order <= 0;
        });
      default:
        throw new ExpressionError(`the operator ${operator} is not supported by this server`);
    }
  });
}

/** Whether the expression holds for this call; throws ExpressionError for one it cannot evaluate. */
export function evaluate(expression: unknown, expansions: Expansions): boolean {
  if (typeof expression === "boolean") return expression;
  if (!isDocument(expression)) throw new ExpressionError("an expression is true, false or a document");
  return Object.entries(expression).every(([key, value]) => {
    if (key === "%and" || key === "%or") {
      const parts = listOf(key, value);
      return key === "%and"
        ? parts.every((part) => evaluate(part, expansions))
        : parts.some((part) => evaluate(part, expansions));
    }
    if (key.startsWith("%%")) {
      const actual = expand(key, expansions);
      // An embedded expression (a document of fields, not of operators) is a value: its own truth.
      if (isDocument(value) && Object.keys(value).length > 0 && !Object.keys(value).some(isOperator))
        return equal(actual, evaluate(value, expansions));
      return holds(actual, value, expansions);
    }
    if (isOperator(key)) throw new ExpressionError(`the operator ${key} is not supported at the top of an expression`);
    // A plain name checks the argument of that name (the documented default for service rules).
    return holds(walk(expansions.args(), key.split(".")), value, expansions);
  });
}
