/**
 * A `$setWindowFields` stage's outputs checked as MongoDB parses them (window_function_expression,
 * window_bounds, window_function_shift): before anything runs, so a bad window is refused over an
 * empty collection too, with MongoDB's texts. mingo checked almost none of it and computed on:
 * `documents: [1, -1]` gave zeros, `$derivative` by months NaN, `$shift` without `by` nulls.
 */
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { bsonTypeAlias } from "./bson-order.ts";
import { isConstantExpression } from "./constant-expression.ts";
import { isUnit } from "./date-operators.ts";
import { isDocument } from "./documents.ts";
import { doubleOf, isDecimal, isInteger, isNumeric } from "./numeric-operators.ts";
import { shellText } from "./shell-text.ts";
import { keysOf } from "./wide-keys.ts";

/** Evaluates a constant expression (a window bound written as one). */
export type Constant = (expr: unknown) => unknown;

const rankStyle = new Set(["$rank", "$denseRank", "$documentNumber"]);
const bySortValues = new Set(["$derivative", "$integral"]);
/** Units a `$derivative`/`$integral` may take (MongoDB: 'week' or smaller). */
const fixedUnits = new Set(["week", "day", "hour", "minute", "second", "millisecond"]);

/** A time unit's name, refused when it is none, as MongoDB's parseTimeUnit refuses it. */
function timeUnit(value: unknown): string {
  if (typeof value !== "string") throw errors.mongo(`unit' must be a string, but got ${bsonTypeAlias(value)}`);
  if (!isUnit(value)) throw errors.mongo(`unknown time unit value: ${value}`);
  return value;
}

/** Refuses the stage's outputs as MongoDB's parser does; `sortBy` is the stage's. */
export function checkWindowFields(spec: unknown, constant: Constant): void {
  if (!isDocument(spec) || !isDocument(spec.output)) return;
  const sortFields = isDocument(spec.sortBy) ? keysOf(spec.sortBy).length : 0;
  for (const field of keysOf(spec.output)) {
    const output = spec.output[field];
    if (!isDocument(output)) continue;
    const keys = keysOf(output);
    const operator = keys.find((key) => key.startsWith("$"));
    if (operator === undefined) continue;
    const argument = output[operator];
    const others = keys.filter((key) => key !== operator);
    if (rankStyle.has(operator)) {
      checkRank(operator, argument, others, sortFields);
      continue;
    }
    if (operator === "$shift") {
      checkShift(argument, others, sortFields);
      continue;
    }
    if (operator === "$expMovingAvg") {
      checkExpMovingAvg(argument, others, sortFields);
      continue;
    }
    if (bySortValues.has(operator)) checkBySortValues(operator, argument, output.window, sortFields);
    if (others.includes("window")) checkWindow(output.window, sortFields, constant);
  }
}

function checkRank(operator: string, argument: unknown, others: string[], sortFields: number): void {
  if (others.length > 0) throw errors.mongo("Rank style window functions take no other arguments");
  if (!isDocument(argument) || keysOf(argument).length > 0)
    throw errors.mongo(`${operator} must be specified with '{}' as the value`);
  if (sortFields !== 1)
    throw errors.mongo(`${operator} must be specified with a top level sortBy expression with exactly one element`);
}

function checkShift(argument: unknown, others: string[], sortFields: number): void {
  if (others.includes("window")) throw errors.mongo("$shift does not accept a 'window' field");
  if (others.length > 0) throw errors.mongo(`Window function found an unknown argument: ${others[0]}`);
  if (!isDocument(argument)) throw errors.mongo("Argument to $shift must be an object");
  for (const key of keysOf(argument))
    if (key !== "output" && key !== "by" && key !== "default") throw errors.mongo("Unknown argument in $shift");
  if (!("output" in argument)) throw errors.mongo("$shift requires an 'output' expression.");
  if (!("by" in argument)) throw errors.mongo("$shift requires 'by' as an integer value.");
  const by = argument.by;
  // (A Decimal128 holding a whole number is one too.)
  const whole = isInteger(by) || (isDecimal(by) && Number.isInteger(doubleOf(by)));
  const within = whole && Math.abs(doubleOf(by)) <= 0x7fffffff;
  if (!within) throw errors.mongo(`'$shift:by' field must be an integer, but found  by: ${shellText(by)}`);
  if ("default" in argument && !isConstantExpression(argument.default))
    throw errors.mongo("'$shift:default' expression must yield a constant value.");
  if (sortFields === 0) throw errors.mongo("'$shift' requires a sortBy");
}

const emaShape =
  "$expMovingAvg sub object must have exactly two fields: An 'input' field, and either an 'N' field or an 'alpha' field";

function checkExpMovingAvg(argument: unknown, others: string[], sortFields: number): void {
  if (others.length > 0 || !isDocument(argument))
    throw errors.mongo("$expMovingAvg must have exactly one argument that is an object");
  const keys = keysOf(argument);
  for (const key of keys)
    if (key !== "input" && key !== "N" && key !== "alpha")
      throw errors.mongo(`Got unrecognized field in $expMovingAvg${emaShape}`);
  if (keys.length !== 2 || !("input" in argument)) throw errors.mongo(emaShape);
  if (sortFields === 0) throw errors.mongo("$expMovingAvg requires an explicit 'sortBy'");
  if ("N" in argument) {
    const n = argument.N;
    if (!isNumeric(n)) throw errors.mongo(`'N' field must be an integer, but found type ${bsonTypeAlias(n)}`);
    if (!isInteger(n) && !(isDecimal(n) && Number.isInteger(doubleOf(n))))
      throw errors.mongo(
        `'N' field must be an integer, but found  N: ${shellText(n)}. To use a non-integer, use the 'alpha' argument instead`,
      );
    if (doubleOf(n) <= 0) throw errors.mongo(`'N' must be greater than zero. Got ${shellText(n)}`);
    return;
  }
  const alpha = argument.alpha;
  if (!isNumeric(alpha)) throw errors.mongo("'alpha' must be a number");
  const a = doubleOf(alpha);
  if (!(a > 0 && a < 1))
    throw errors.mongo(`'alpha' must be between 0 and 1 (exclusive), found alpha: ${shellText(alpha)}`);
}

function checkBySortValues(operator: string, argument: unknown, window: unknown, sortFields: number): void {
  if (!isDocument(argument)) throw errors.mongo(`${operator} expects an object, but got a ${bsonTypeAlias(argument)}`);
  for (const key of keysOf(argument))
    if (key !== "input" && key !== "unit") throw errors.mongo(`${operator} got unexpected argument: ${key}`);
  if (!("input" in argument)) throw errors.mongo(`${operator} requires an 'input' expression`);
  if (sortFields === 0) throw errors.mongo(`${operator} requires a sortBy`);
  if (sortFields > 1) throw errors.mongo(`${operator} requires a non-compound sortBy`);
  if ("unit" in argument && !fixedUnits.has(timeUnit(argument.unit)))
    throw errors.mongo("unit must be 'week' or smaller");
  if (operator === "$derivative" && window === undefined)
    throw errors.mongo("$derivative requires explicit window bounds");
}

const boundText = "Window bounds must be 'unbounded', 'current', or a number.";

/** A window's bound as a number (`current` 0), `unbounded` as null; refused when it is neither. */
function bound(value: unknown, kind: "documents" | "range", constant: Constant): number | null {
  if (value === "unbounded") return null;
  if (value === "current") return 0;
  if (typeof value === "string") throw errors.mongo(boundText);
  if (!isNumeric(value) && !isDocument(value)) {
    if (kind === "range") throw errors.mongo("Range-based bounds expression must be a number");
    throw errors.mongo("Numeric document-based bounds must be an integer");
  }
  let number = value;
  if (isDocument(value)) {
    if (!isConstantExpression(value)) throw errors.mongo("Window bounds expression must be a constant.");
    number = constant(value);
    if (!isNumeric(number)) {
      if (kind === "range") throw errors.mongo("Range-based bounds expression must be a number");
      throw errors.mongo(boundText);
    }
  }
  if (!isNumeric(number)) throw errors.mongo(boundText);
  const n = doubleOf(number);
  // (An int32: MongoDB reads a document bound into one.)
  if (kind === "documents" && !(Number.isInteger(n) && Math.abs(n) <= 0x7fffffff))
    throw errors.mongo("Numeric document-based bounds must be an integer");
  return n;
}

function checkWindow(window: unknown, sortFields: number, constant: Constant): void {
  if (!isDocument(window)) throw errors.mongo("'window' field must be an object");
  const keys = keysOf(window);
  if ("documents" in window && "range" in window)
    throw errors.mongo("Window bounds can specify either 'documents' or 'unit', not both.");
  if ("documents" in window && "unit" in window)
    throw errors.mongo("Window bounds can only specify 'unit' with range-based bounds.");
  const kind = "documents" in window ? "documents" : "range" in window ? "range" : null;
  const others = keys.filter((key) => key !== "documents" && key !== "range" && key !== "unit");
  if (kind === "documents" && others.length > 0)
    throw errors.mongo("'window' field that specifies documents cannot have other fields");
  if (kind === "range" && others.length > 0)
    throw errors.mongo(
      "unit" in window
        ? "'window' field that specifies unit cannot have other fields besides 'range'"
        : "'window' field that specifies range cannot have other fields besides 'unit'",
    );
  if (kind === null && "unit" in window)
    throw errors.mongo("Window bounds can only specify 'unit' with range-based bounds.");
  if (others.length > 0)
    throw errors.mongo(
      "'window' field can only contain 'documents' as the only argument or 'range' with an optional 'unit' field",
    );
  if (kind === null) return;
  const bounds = window[kind];
  if (!Array.isArray(bounds) || bounds.length !== 2)
    throw errors.mongo(`Window bounds must be a 2-element array: ${kind}: ${shellText(bounds)}`);
  const lower = bound(bounds[0], kind, constant);
  const upper = bound(bounds[1], kind, constant);
  if (kind === "range") {
    if (sortFields !== 1) throw errors.mongo("Range-based bounds require sortBy a single field");
    if ("unit" in window) {
      timeUnit(window.unit);
      for (const value of [lower, upper])
        if (value !== null && !Number.isInteger(value))
          throw errors.mongo("With 'unit', range-based bounds must be an integer");
    }
  } else if ((lower !== null || upper !== null) && sortFields === 0)
    throw errors.mongo("Document-based bounds require a sortBy");
  if (lower !== null && upper !== null && lower > upper)
    throw errors.mongo(`Lower bound must not exceed upper bound: [${lower}, ${upper}]`);
}
