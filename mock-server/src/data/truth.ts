/**
 * MongoDB's truth of a value, wherever an expression tests one: false, null, missing and zero of
 * every numeric type (a Decimal128 `0.00` and an Int64 `0` among them) are false, anything else
 * true. mingo's own test is JavaScript's, which holds a Decimal128 or Int64 zero true (an object):
 * `$cond`, `$and`, `$or`, `$not`, `$filter`'s `cond`, `$allElementsTrue`, `$anyElementTrue` and a
 * query's `$expr` are the emulator's for it (`$switch` in string-operators.ts uses the same test).
 */
import { evalExpr } from "mingo/core";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { bsonTypeAlias } from "./bson-order.ts";
import { nullish, typeOf } from "./date-operators.ts";
import { isDocument } from "./documents.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

export function truthy(value: unknown): boolean {
  if (nullish(value) || value === false) return false;
  if (typeof value === "number") return value !== 0;
  const type = typeOf(value);
  if (type === "Long" || type === "Decimal128" || type === "Int32" || type === "Double")
    return Number(String(value)) !== 0;
  return true;
}

/** An operator's argument list: an array as given, anything else one argument. */
const argumentsOf = (expr: unknown): unknown[] => (Array.isArray(expr) ? expr : [expr]);

function exactly(name: string, expr: unknown, count: number): unknown[] {
  const args = argumentsOf(expr);
  if (args.length !== count)
    throw errors.mongo(`Expression ${name} takes exactly ${count} arguments. ${args.length} were passed in.`);
  return args;
}

const condParts = ["if", "then", "else"] as const;

/** `$cond`, as an array of three or a document of `if`, `then` and `else` (each required). */
const cond: AnyFn = (obj, expr, options) => {
  let parts: unknown[];
  if (isDocument(expr)) {
    for (const key of Object.keys(expr))
      if (!(condParts as readonly string[]).includes(key))
        throw errors.mongo(`Unrecognized parameter to $cond: ${key}`);
    for (const part of condParts) if (!(part in expr)) throw errors.mongo(`Missing '${part}' parameter to $cond`);
    parts = condParts.map((part) => expr[part]);
  } else parts = exactly("$cond", expr, 3);
  const [test, then, otherwise] = parts;
  return evalExpr(obj, truthy(evalExpr(obj, test, options)) ? then : otherwise, options);
};

const and: AnyFn = (obj, expr, options) => argumentsOf(expr).every((e) => truthy(evalExpr(obj, e, options)));
const or: AnyFn = (obj, expr, options) => argumentsOf(expr).some((e) => truthy(evalExpr(obj, e, options)));
const not: AnyFn = (obj, expr, options) => !truthy(evalExpr(obj, exactly("$not", expr, 1)[0], options));

function elementsTrue(name: "$allElementsTrue" | "$anyElementTrue"): AnyFn {
  return (obj, expr, options) => {
    const value = evalExpr(obj, exactly(name, expr, 1)[0], options);
    if (!Array.isArray(value))
      throw errors.mongo(
        `${name}'s argument must be an array, but is ${value === undefined ? "missing" : bsonTypeAlias(value)}`,
      );
    return name === "$allElementsTrue" ? value.every(truthy) : value.some(truthy);
  };
}

/** The truth operators, `$filter` made of mingo's with its `cond` tested by MongoDB's truth. */
export function truthExpressionOperators(mingoFilter: AnyFn): Record<string, AnyFn> {
  return {
    $cond: cond,
    $and: and,
    $or: or,
    $not: not,
    $allElementsTrue: elementsTrue("$allElementsTrue"),
    $anyElementTrue: elementsTrue("$anyElementTrue"),
    $filter: (obj, expr, options) =>
      mingoFilter(
        obj,
        isDocument(expr) && "cond" in expr ? { ...expr, cond: { $cond: [expr.cond, true, false] } } : expr,
        options,
      ),
  };
}

/** A query's `$expr`: the documents whose expression's value is true. */
export const exprQueryOperator: AnyFn = (_selector: string, expr: unknown, options: unknown) => (doc: unknown) =>
  truthy(evalExpr(doc, expr, options as never));
