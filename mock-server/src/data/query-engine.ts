/**
 * MongoDB query, aggregation and update semantics: mingo's, with the emulator's additions:
 *
 * - **Regular expressions** in every form MongoDB accepts (`{f: /re/}`, `$regex` with `$options`,
 *   `$in` / `$nin` / `$all` with regular expressions, `$not`, `$elemMatch`, `$match`, `$pull`,
 *   `$regexMatch` / `$regexFind` / `$regexFindAll`) run on the linear-time engine of regex.ts.
 *   Queries are rewritten before mingo sees them: each regular expression becomes a private
 *   `$mockRegex` operator holding the compiled pattern.
 * - **Limits**: every operator is wrapped to count a step and charge what it builds against the
 *   budget of query-limits.ts; `$range` (operator-fixes.ts) and `$replaceAll` check the size of
 *   their result before building it.
 * - **MongoDB's values** where mingo knows only JavaScript's (decisions 0039, 0040): the order,
 *   equality and type names of BSON values (bson-order.ts, bson-operators.ts, grouping.ts),
 *   Decimal128 and Int64 arithmetic and conversions (decimal.ts, numeric-operators.ts,
 *   bson-conversions.ts), projections and `$addFields` as MongoDB lays them out, never changing a
 *   stored document in place (projections.ts, add-fields.ts), and operators mingo lacks or
 *   answers otherwise (operator-fixes.ts).
 *
 * Everything here runs inside `withQueryLimits` (mongo-actions.ts and change-stream.ts see to it).
 */
import { BSONRegExp, Timestamp } from "bson";
import { Aggregator } from "mingo/aggregator";
import { Context, evalExpr } from "mingo/core";
import { Lazy } from "mingo/lazy";
import * as accumulatorOperators from "mingo/operators/accumulator";
import * as expressionOperators from "mingo/operators/expression";
import * as pipelineOperators from "mingo/operators/pipeline";
import * as projectionOperators from "mingo/operators/projection";
import * as queryOperators from "mingo/operators/query";
import * as windowOperators from "mingo/operators/window";
import { Query } from "mingo/query";
import { resolve } from "mingo/util";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { accumulatorExpressions, accumulators, computeOptionsClass, dropMissing } from "./accumulators.ts";
import { addFieldsStage, internalFunction, joinedAs, withValueAt } from "./add-fields.ts";
import { bitQueryOperators } from "./bit-operators.ts";
import { conversionOperators } from "./bson-conversions.ts";
import {
  comparisonExpressionOperators,
  comparisonQueryOperators,
  equalsPredicate,
  existsPredicate,
  inPredicate,
  sortDocuments,
  sortStage,
  typeQueryOperator,
} from "./bson-operators.ts";
import { bsonTypeAlias, bsonTypeNumber, surrogate } from "./bson-order.ts";
import { bucketStages } from "./bucket-stages.ts";
import { dateExpressionOperators } from "./date-operators.ts";
import { fromDecimal128, truncatedInteger } from "./decimal.ts";
import { densifyStage } from "./densify-stage.ts";
import { type Document, isDocument } from "./documents.ts";
import {
  groupKey,
  groupKeyOperator,
  guardAccumulators,
  guardExpressionOperators,
  guardPipelineOperators,
  guardQueryOperators,
  type OperatorMap,
  weighSort,
} from "./engine-guards.ts";
import {
  appliedAway,
  findProjectionType,
  type ProjectionType,
  sliceProjection,
  withNumericFlags,
  withSlicesDotted,
} from "./find-projection.ts";
import {
  byNearness,
  geoIntersectsOperator,
  geoNearStage,
  geoWithinOperator,
  nearElsewhere,
  takeNear,
} from "./geo-queries.ts";
import { graphLookupStage } from "./graph-lookup.ts";
import { groupStage, parseGroup } from "./group-stage.ts";
import { lookupByEquality, setOperators } from "./grouping.ts";
import { computesNested, namesNumericField, nestedProjection } from "./inclusion-projection.ts";
import { matchedPosition } from "./matched-position.ts";
import { isDecimal, isLong, isNumeric, numericExpressionOperators } from "./numeric-operators.ts";
import { fixedExpressionOperators, fixedPipelineOperators, withArgumentLists } from "./operator-fixes.ts";
import { somePathValue, valueHolder } from "./path-walk.ts";
import { checkProjectionSpec } from "./projection-spec.ts";
import {
  excluded,
  exclusionsOf,
  inMongoOrder,
  missingOperator,
  missingProbe,
  probingMissing,
  withoutMissing,
} from "./projections.ts";
import { actionTime, charge, checkValue, estimateBytes, precheck, step, steps } from "./query-limits.ts";
import { redactStage } from "./redact-stage.ts";
import { compileRegex, compileRegexValue, isRegexValue, MongoRegex } from "./regex.ts";
import { type SchemaCheck, schemaErrors, UnsupportedSchema } from "./schemas.ts";
import { shellText } from "./shell-text.ts";
import { checkStages, checkUpdateStages, refuseForbiddenPaths, type StageEngine } from "./stage-specs.ts";
import { stringExpressionOperators } from "./string-operators.ts";
import { exprQueryOperator, truthExpressionOperators } from "./truth.ts";
import { unwindStage } from "./unwind-stage.ts";
import { withVariableNames } from "./variable-names.ts";
import { keysOf } from "./wide-keys.ts";
import { derivative, fillStage, integral, linearFill, nullWhenEmpty, shift, windowStage } from "./window-stage.ts";

/** The private query operator a regular expression becomes. */
export const regexOperator = "$mockRegex";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

// ---------------------------------------------------------------------------------------------
// Rewriting queries: regular expressions → $mockRegex

function regexFromOperator(spec: Document): MongoRegex {
  const { $regex: regex, $options: options } = spec;
  if (regex === undefined) throw errors.mongo("$options needs a $regex");
  if (options !== undefined && typeof options !== "string") throw errors.mongo("$options has to be a string");
  if (typeof regex === "string") return compileRegex(regex, options ?? "");
  if (isRegexValue(regex) || regex instanceof MongoRegex) {
    const compiled = compileRegexValue(regex);
    if (options !== undefined && options !== "") {
      if (compiled.options !== "") throw errors.mongo("options set in both $regex and $options");
      return compileRegex(compiled.pattern, options);
    }
    return compiled;
  }
  throw errors.mongo("$regex has to be a string");
}

/** A field's condition: a value (equality), a regular expression, or a document of operators. */
function rewriteCondition(condition: unknown): unknown {
  if (isRegexValue(condition)) return { [regexOperator]: compileRegexValue(condition) };
  if (!isDocument(condition)) return condition;
  const keys = Object.keys(condition);
  if (keys.length === 0 || !keys[0]!.startsWith("$")) return condition;
  const out: Document = {};
  for (const key of keys) {
    const value = condition[key];
    switch (key) {
      case regexOperator:
        throw errors.mongo(`unknown operator: ${key}`);
      case "$regex":
        out[regexOperator] = regexFromOperator(condition);
        break;
      case "$options":
        if (!("$regex" in condition)) throw errors.mongo("$options needs a $regex");
        break;
      case "$in":
      case "$nin":
      case "$all":
        if (key === "$all" && Array.isArray(value)) checkAllValues(value);
        out[key] = Array.isArray(value)
          ? value.map((v) => {
              if (isRegexValue(v)) return compileRegexValue(v);
              if (key !== "$all" && isDocument(v) && Object.keys(v)[0]?.startsWith("$"))
                throw errors.mongo(`cannot nest $ under ${key}`);
              return v;
            })
          : value;
        break;
      case "$not":
        if (isRegexValue(value)) out.$not = { [regexOperator]: compileRegexValue(value) };
        else if (isDocument(value)) out.$not = rewriteCondition(value);
        else throw errors.mongo("$not needs a regex or a document");
        break;
      case "$elemMatch":
        // `{$regex, $options}` alone arrives as a regular-expression value (Extended JSON's reading).
        out.$elemMatch = isRegexValue(value)
          ? rewriteCondition(value)
          : !isDocument(value)
            ? value
            : Object.keys(value).every((k) => k.startsWith("$") && k !== "$and" && k !== "$or" && k !== "$nor")
              ? rewriteCondition(value)
              : rewriteQuery(value);
        break;
      default:
        out[key] = value;
    }
  }
  return out;
}

/** A query (filter) document with its regular expressions compiled. */
export function rewriteQuery(query: Document): Document {
  const out: Document = {};
  for (const [key, value] of Object.entries(query)) {
    if (key === "$and" || key === "$or" || key === "$nor") {
      if (!Array.isArray(value)) throw errors.mongo(`${key} must be an array`);
      if (value.length === 0) throw errors.mongo("$and/$or/$nor must be a nonempty array");
      for (const q of value) if (!isDocument(q)) throw errors.mongo(`$or/$and/$nor entries need to be full objects`);
      out[key] = value.map((q) => rewriteQuery(q as Document));
    } else if (key === "$comment") {
      // A note for the server's logs: it matches everything.
    } else if (key === "$text") {
      // No text index exists here (none can be declared), as MongoDB answers a collection without one.
      throw errors.mongo("text index required for $text query");
    } else if (key === regexOperator) {
      throw errors.mongo(`unknown top level operator: ${key}.`);
    } else if (key === "$where") {
      // Server-side JavaScript runs nowhere here (mingo's refusal named its own option).
      throw errors.mongo("$where is not allowed in this context");
    } else if (key.startsWith("$")) {
      out[key] = value;
    } else {
      out[key] = rewriteCondition(value);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Query operators

function valueMatches(value: unknown, regexes: MongoRegex[]): boolean {
  if (typeof value === "string") {
    steps(value.length >> 8);
    for (const re of regexes) if (re.test(value)) return true;
    return false;
  }
  if (value instanceof BSONRegExp || value instanceof RegExp) return regexes.some((re) => re.sameAs(value));
  return false;
}

/**
 * MongoDB's regex match of a field: a string matching, or an equal regular-expression value,
 * among the values the path reaches (path-walk.ts).
 */
function regexPredicate(selector: string, regexes: MongoRegex[]) {
  const parts = selector.split(".");
  return (doc: unknown): boolean => somePathValue(doc, parts, (value) => valueMatches(value, regexes));
}

const mingoQuery = queryOperators as unknown as OperatorMap;

function regexQueryOperator(selector: string, value: unknown) {
  const re = value instanceof MongoRegex ? value : isRegexValue(value) ? compileRegexValue(value) : null;
  if (!re) throw errors.mongo("$regex has to be a string");
  return regexPredicate(selector, [re]);
}

function inOperator(selector: string, values: unknown) {
  if (!Array.isArray(values)) throw errors.mongo("$in needs an array");
  const regexes = values.filter((v): v is MongoRegex => v instanceof MongoRegex);
  if (regexes.length === 0) return inPredicate(selector, values);
  const rest = inPredicate(
    selector,
    values.filter((v) => !(v instanceof MongoRegex)),
  );
  const matches = regexPredicate(selector, regexes);
  return (doc: unknown) => rest(doc) || matches(doc);
}

function ninOperator(selector: string, values: unknown) {
  if (!Array.isArray(values)) throw errors.mongo("$nin needs an array");
  const matches = inOperator(selector, values);
  return (doc: unknown) => !matches(doc);
}

/** The names MongoDB's query parser reads as operators of a path (`parsePathAcceptingKeyword`). */
const pathOperators = new Set(
  "all bitsAllClear bitsAllSet bitsAnyClear bitsAnySet elemMatch eq exists geoIntersects geoNear geoWithin gt gte in lt lte mod ne near nearSphere nin not options regex size type within"
    .split(" ")
    .map((name) => `$${name}`),
);

const firstKey = (value: unknown) => (isDocument(value) ? keysOf(value)[0] : undefined);

/**
 * Refuses an `$all` as MongoDB's parser does: a list of `$elemMatch` documents, or values none of
 * which is a query operator's document (another `$` name is a document to compare with).
 */
function checkAllValues(values: unknown[]): void {
  if (firstKey(values[0]) === "$elemMatch") {
    if (values.some((value) => firstKey(value) !== "$elemMatch"))
      throw errors.mongo("$all/$elemMatch has to be consistent");
    return;
  }
  if (values.some((value) => pathOperators.has(firstKey(value) ?? ""))) throw errors.mongo("no $ expressions in $all");
}

/**
 * `$all`: each of its values matched as `$eq` (or `$elemMatch`, or a regular expression) would;
 * an empty list matches nothing.
 */
function allOperator(selector: string, values: unknown, options: unknown) {
  if (!Array.isArray(values)) throw errors.mongo("$all needs an array");
  const predicates = values.map((v): AnyFn => {
    if (v instanceof MongoRegex) return regexPredicate(selector, [v]);
    if (isDocument(v) && Object.keys(v)[0] === "$elemMatch") return elemMatchOperator(selector, v.$elemMatch, options);
    return equalsPredicate(selector, v);
  });
  return (doc: unknown) => predicates.length > 0 && predicates.every((p) => p(doc));
}

/** A number's integer part toward zero as a BigInt (null: not a finite number). */
function truncated(value: unknown): bigint | null {
  if (typeof value === "number") return Number.isFinite(value) ? BigInt(Math.trunc(value)) : null;
  if (isLong(value)) return BigInt(String(value));
  if (isDecimal(value)) {
    return truncatedInteger(fromDecimal128(value as never));
  }
  return null;
}

/**
 * `$mod: [divisor, remainder]`: a number (of any type, its integer part toward zero) whose
 * remainder by the divisor is the remainder; anything else never matches (mingo took null as 0).
 */
function modOperator(selector: string, operand: unknown) {
  if (!Array.isArray(operand)) throw errors.mongo("malformed mod, needs to be an array");
  if (operand.length < 2) throw errors.mongo("malformed mod, not enough elements");
  if (operand.length > 2) throw errors.mongo("malformed mod, too many elements");
  if (!isNumeric(operand[0])) throw errors.mongo("malformed mod, divisor not a number");
  if (!isNumeric(operand[1])) throw errors.mongo("malformed mod, remainder not a number");
  const divisor = truncated(operand[0]);
  const remainder = truncated(operand[1]);
  if (divisor === null)
    throw errors.mongo(
      "malformed mod, divisor value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type",
    );
  if (remainder === null)
    throw errors.mongo(
      "malformed mod, remainder value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type",
    );
  if (divisor === 0n) throw errors.mongo("divisor cannot be 0");
  const parts = selector.split(".");
  return (doc: unknown): boolean =>
    somePathValue(doc, parts, (value) => {
      const n = truncated(value);
      return n !== null && n % divisor === remainder;
    });
}

/**
 * `$size`: an array the path reaches (not an array's elements) of that many elements; MongoDB's
 * refusals of an operand that is no whole, non-negative number.
 */
function sizeOperator(selector: string, operand: unknown) {
  if (!isNumeric(operand)) throw errors.mongo("$size needs a number");
  const n = Number(String(operand));
  if (!Number.isInteger(n)) throw errors.mongo("$size must be a whole number");
  if (n < 0) throw errors.mongo("$size may not be negative");
  const parts = selector.split(".");
  return (doc: unknown): boolean =>
    somePathValue(doc, parts, (value) => Array.isArray(value) && value.length === n, false);
}

/**
 * `$jsonSchema`: documents that satisfy a JSON Schema with `bsonType` (schemas.ts, the validator of
 * the apps' collection schemas). mingo needed an option naming a validator it had none of.
 */
function jsonSchemaOperator(_selector: string, schema: unknown): (doc: unknown) => boolean {
  if (!isDocument(schema)) throw errors.mongo("$jsonSchema must be an object");
  const check: SchemaCheck = {
    nullable: false,
    expansions: { user: () => undefined, args: () => [], values: {}, environment: {}, request: () => ({}) },
  };
  return (doc) => {
    try {
      return schemaErrors(doc as Document, schema, check).length === 0;
    } catch (error) {
      if (error instanceof UnsupportedSchema) {
        // MongoDB's words for the two it names; the validator's own for the rest.
        const type = /^the (?:bsonType|type) "(.*)"$/.exec(error.message);
        const keyword = /^the keyword (.*)$/.exec(error.message);
        throw errors.mongo(
          type
            ? `Unknown type name alias: ${type[1]}`
            : keyword
              ? `Unknown $jsonSchema keyword: ${keyword[1]}`
              : `$jsonSchema cannot evaluate ${error.message}`,
        );
      }
      throw error;
    }
  };
}

/** The top-level operators of a query (an `$elemMatch` of them tests documents, not values). */
const queryLevelOperators = new Set(["$and", "$or", "$nor", "$expr", "$where", "$text", "$comment", "$jsonSchema"]);

/**
 * `$elemMatch`: an element of an array the path reaches (the array itself, not its elements)
 * matching every condition: of operators (`{$gt: 1, $lt: 3}`), the element as a value; of fields,
 * the element as a document — elements that are neither documents nor arrays never match.
 */
function elemMatchOperator(selector: string, criteria: unknown, options: unknown) {
  if (!isDocument(criteria)) throw errors.mongo("$elemMatch needs an Object");
  const test = elementTest(criteria, options);
  const parts = selector.split(".");
  return (doc: unknown): boolean =>
    somePathValue(doc, parts, (value) => Array.isArray(value) && value.some(test), false);
}

/** Whether an array's element matches `$elemMatch`'s conditions (see elemMatchOperator). */
function elementTest(criteria: Document, options: unknown): (element: unknown) => boolean {
  const keys = Object.keys(criteria);
  const ofValues = keys.length > 0 && keys.every((k) => k.startsWith("$") && !queryLevelOperators.has(k));
  const query = new Query(ofValues ? { field: criteria } : criteria, options as never);
  return ofValues
    ? (element: unknown) => query.test(valueHolder("field", element))
    : (element: unknown) => (isDocument(element) || Array.isArray(element)) && query.test(element as never);
}

// ---------------------------------------------------------------------------------------------
// Expression operators

/** `$regexMatch` / `$regexFind` / `$regexFindAll`'s arguments, or null when input or regex is null. */
function regexArguments(
  op: string,
  obj: unknown,
  expr: unknown,
  options: unknown,
): { input: string; re: MongoRegex } | null {
  if (!isDocument(expr))
    throw errors.mongo(`${op} expects an object of named arguments but found: ${bsonTypeAlias(expr)}`);
  for (const key of Object.keys(expr)) {
    if (key !== "input" && key !== "regex" && key !== "options")
      throw errors.mongo(`${op} found an unknown argument: ${key}`);
  }
  if (!("input" in expr)) throw errors.mongo(`${op} requires 'input' parameter`);
  if (!("regex" in expr)) throw errors.mongo(`${op} requires 'regex' parameter`);
  const evaluate = (e: unknown) => evalExpr(obj, e, options as never) as unknown;
  const input = evaluate(expr.input);
  const regex = evaluate(expr.regex);
  const flags = "options" in expr ? evaluate(expr.options) : undefined;
  if (flags !== undefined && flags !== null && typeof flags !== "string")
    throw errors.mongo(`${op} needs 'options' to be of type string`);
  if (regex !== undefined && regex !== null && typeof regex !== "string" && !isRegexValue(regex))
    throw errors.mongo(`${op} needs 'regex' to be of type string or regex`);
  let re: MongoRegex | null = null;
  if (typeof regex === "string") re = compileRegex(regex, (flags as string | null | undefined) ?? "", op);
  else if (isRegexValue(regex)) {
    const own = compileRegexValue(regex, op);
    if (typeof flags === "string" && flags !== "") {
      if (own.options !== "")
        throw errors.mongo(`${op}: found regex option(s) specified in both 'regex' and 'option' fields`);
      re = compileRegex(own.pattern, flags, op);
    } else re = own;
  }
  if (input === undefined || input === null) return null;
  if (typeof input !== "string") throw errors.mongo(`${op} needs 'input' to be of type string`);
  if (re === null) return null;
  steps(input.length >> 8);
  return { input, re };
}

/** MongoDB reports positions in code points; JavaScript in UTF-16 units. */
function codePoints(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < to) i++;
    n++;
  }
  return n;
}

function matchResult(m: RegExpExecArray, idx: number): Document {
  const captures: unknown[] = [];
  for (let i = 1; i < m.length; i++) captures.push(m[i] ?? null);
  return { match: m[0], idx, captures };
}

const regexMatch: AnyFn = (obj, expr, options) => {
  const args = regexArguments("$regexMatch", obj, expr, options);
  return args ? args.re.test(args.input) : false;
};

const regexFind: AnyFn = (obj, expr, options) => {
  const args = regexArguments("$regexFind", obj, expr, options);
  if (!args) return null;
  const m = args.re.exec(args.input);
  return m ? matchResult(m, codePoints(args.input, 0, m.index)) : null;
};

const regexFindAll: AnyFn = (obj, expr, options) => {
  const args = regexArguments("$regexFindAll", obj, expr, options);
  if (!args) return [];
  const out: Document[] = [];
  let unit = 0;
  let point = 0;
  for (const m of args.re.matchAll(args.input)) {
    // (MongoDB looks for no match past the last character: regex.js.)
    if (m.index === args.input.length && args.input.length > 0) break;
    point += codePoints(args.input, unit, m.index);
    unit = m.index;
    out.push(matchResult(m, point));
    charge(32 + m[0].length * 2, "$regexFindAll");
    step();
  }
  return out;
};

const mingoExpression = expressionOperators as unknown as OperatorMap;

/**
 * `$replaceOne` / `$replaceAll`'s arguments: each a string or nothing — anything else refused
 * before a null answers null, as MongoDB checks them (input, find, replacement) — or null.
 */
function replaceArguments(
  name: string,
  obj: unknown,
  expr: unknown,
  options: unknown,
): [string, string, string] | null {
  if (!isDocument(expr)) throw errors.mongo(`${name} requires an object as an argument, found: ${bsonTypeAlias(expr)}`);
  for (const key of Object.keys(expr))
    if (key !== "input" && key !== "find" && key !== "replacement")
      throw errors.mongo(`${name} found an unknown argument: ${key}`);
  const keys = ["input", "find", "replacement"] as const;
  for (const key of keys) if (!(key in expr)) throw errors.mongo(`${name} requires '${key}' to be specified`);
  const values = keys.map((key) => evalExpr(obj, expr[key], options as never) as unknown);
  keys.forEach((key, i) => {
    const value = values[i];
    if (value !== null && value !== undefined && typeof value !== "string")
      throw errors.mongo(`${name} requires that '${key}' be a string, found: ${shellText(value)}`);
  });
  return values.every((value) => typeof value === "string") ? (values as [string, string, string]) : null;
}

/** `$replaceOne`: the first occurrence replaced (an empty `find` occurs at the start). */
const replaceOne: AnyFn = (obj, expr, options) => {
  const args = replaceArguments("$replaceOne", obj, expr, options);
  if (!args) return null;
  const [input, find, replacement] = args;
  const at = input.indexOf(find);
  return at < 0 ? input : input.slice(0, at) + replacement + input.slice(at + find.length);
};

/**
 * `$replaceAll`: every occurrence replaced; an empty `find` occurs before each code point and at
 * the end (replace_all.js). The result's size is checked before it is built.
 */
const replaceAll: AnyFn = (obj, expr, options) => {
  const args = replaceArguments("$replaceAll", obj, expr, options);
  if (!args) return null;
  const [input, find, replacement] = args;
  const pieces = find === "" ? [...input] : input.split(find);
  const count = find === "" ? pieces.length + 1 : pieces.length - 1;
  precheck((input.length + count * (replacement.length - find.length)) * 2, "$replaceAll");
  return find === "" ? replacement + pieces.map((piece) => piece + replacement).join("") : pieces.join(replacement);
};

// ---------------------------------------------------------------------------------------------
// Pipeline stages that carry queries

const mingoPipeline = pipelineOperators as unknown as OperatorMap;

/**
 * `$project`, its documents laid out as MongoDB does; an exclusion made here, copying what it
 * changes (projections.ts).
 */
const projectStage: AnyFn = (collection, expr, options) => {
  if (!isDocument(expr)) return mingoPipeline.$project!(collection, expr, options);
  const exclusions = exclusionsOf(expr);
  if (exclusions)
    return (collection as { map(f: (doc: unknown) => unknown): unknown }).map((doc) => excluded(doc, exclusions));
  const nested = computesNested(expr) || namesNumericField(expr) ? nestedProjection(expr, options) : null;
  if (nested)
    return (collection as { map(f: (doc: unknown) => unknown): unknown }).map((doc) => nested(doc as Document));
  const order = inMongoOrder(expr, false);
  const probing = probingMissing(expr);
  return (collection as { transform(f: (docs: unknown[]) => unknown): unknown }).transform((docs) => {
    const projected = mingoPipeline.$project!(Lazy(docs), probing, options).collect() as unknown[];
    return Lazy(projected.map((doc, i) => order(docs[i], withoutMissing(doc, expr))));
  });
};

/** `$unset`: an exclusion `$project` of its fields. */
const unsetStage: AnyFn = (collection, expr, options) => {
  const names = Array.isArray(expr) ? expr : [expr];
  if (names.length === 0 || !names.every((name) => typeof name === "string"))
    throw errors.mongo("$unset specification must be a string or an array of strings");
  return projectStage(collection, Object.fromEntries(names.map((name) => [name, 0])), options);
};

const match: AnyFn = (collection, expr, options) =>
  mingoPipeline.$match!(collection, isDocument(expr) ? rewriteQuery(expr) : expr, options);

const graphLookup: AnyFn = joinedAs(graphLookupStage((query) => compileQuery(query)));

// ---------------------------------------------------------------------------------------------
// The budget around every operator

function chargeResult(out: unknown, name: string): void {
  const bytes = estimateBytes(out);
  if (bytes > 0) charge(bytes, name);
  // What it built may hold other values any number of times: its logical size is checked too.
  if (out !== null && typeof out === "object") checkValue(out, name);
}

function wrapValueOperators(ops: OperatorMap): OperatorMap {
  const out: OperatorMap = {};
  for (const [name, fn] of Object.entries(ops)) {
    out[name] = (a: unknown, b: unknown, c: unknown, d: unknown) => {
      step();
      const result = fn(a, b, c, d);
      chargeResult(result, name);
      return result;
    };
  }
  return out;
}

function wrapQueryOperators(ops: OperatorMap): OperatorMap {
  const out: OperatorMap = {};
  for (const [name, fn] of Object.entries(ops)) {
    out[name] = (selector: string, value: unknown, options: unknown) => {
      const predicate = fn(selector, value, options) as (doc: unknown) => boolean;
      return (doc: unknown) => {
        step();
        return predicate(doc);
      };
    };
  }
  return out;
}

/**
 * Each document a stage emits is a step and 64 bytes (a `$densify` bomb stops); a
 * join's stage also the array it adds (`$lookup` of every document into every document stops); and
 * its logical size is checked (a stage that nests `$$ROOT` in itself, stage after stage, stops).
 */
function wrapPipelineOperators(ops: OperatorMap): OperatorMap {
  const out: OperatorMap = {};
  for (const [name, fn] of Object.entries(ops)) {
    const joins = name === "$lookup" || name === "$graphLookup";
    out[name] = (collection: unknown, expr: unknown, options: unknown) => {
      const as = joins && isDocument(expr) && typeof expr.as === "string" ? expr.as : null;
      return (fn(collection, expr, options) as { map(f: (d: unknown) => unknown): unknown }).map((doc) => {
        step();
        charge(as === null ? 64 : 64 + estimateBytes(resolve(doc as Document, as)), name);
        checkValue(doc, name);
        return doc;
      });
    };
  }
  return out;
}

function withoutScripts(ops: OperatorMap, names: string[]): OperatorMap {
  const out = { ...ops };
  for (const name of names) delete out[name];
  return out;
}

const engineQueryOperators = wrapQueryOperators(
  guardQueryOperators({
    ...withoutScripts(mingoQuery, ["$where"]),
    ...comparisonQueryOperators,
    [regexOperator]: regexQueryOperator,
    $regex: regexQueryOperator,
    $in: inOperator,
    $nin: ninOperator,
    $all: allOperator,
    $type: typeQueryOperator,
    $exists: existsPredicate,
    ...bitQueryOperators,
    $mod: modOperator,
    $size: sizeOperator,
    $elemMatch: elemMatchOperator,
    $expr: exprQueryOperator,
    $jsonSchema: jsonSchemaOperator,
    $geoWithin: geoWithinOperator,
    $geoIntersects: geoIntersectsOperator,
    $near: nearElsewhere,
    $nearSphere: nearElsewhere,
  }),
);

const context = Context.init({
  accumulator: wrapValueOperators(
    guardAccumulators({
      ...withoutScripts(accumulatorOperators as unknown as OperatorMap, ["$accumulator"]),
      ...accumulators,
      // (Over too few documents, null: MongoDB's, where mingo's answered 0.)
      $covariancePop: nullWhenEmpty((accumulatorOperators as unknown as OperatorMap).$covariancePop!, "accumulator"),
      $covarianceSamp: nullWhenEmpty(
        (accumulatorOperators as unknown as OperatorMap).$covarianceSamp!,
        "accumulator",
        2,
      ),
    }),
  ),
  expression: wrapValueOperators({
    ...guardExpressionOperators(
      withVariableNames(
        withArgumentLists({
          ...withoutScripts(mingoExpression, ["$function"]),
          ...accumulatorExpressions,
          ...comparisonExpressionOperators,
          ...numericExpressionOperators,
          ...conversionOperators,
          ...fixedExpressionOperators,
          ...dateExpressionOperators,
          ...stringExpressionOperators,
          ...truthExpressionOperators(mingoExpression.$filter!),
          ...setOperators,
          // MongoDB's other name of $literal (what it writes constants as, and apps copy).
          $const: mingoExpression.$literal!,
          $regexMatch: regexMatch,
          $regexFind: regexFind,
          $regexFindAll: regexFindAll,
          $replaceOne: replaceOne,
          $replaceAll: replaceAll,
          $function: internalFunction,
          [missingOperator]: missingProbe,
        }),
      ),
    ),
    [groupKeyOperator]: groupKey,
  }),
  pipeline: wrapPipelineOperators(
    guardPipelineOperators({
      ...withoutScripts(mingoPipeline, ["$out", "$merge"]),
      ...fixedPipelineOperators,
      ...bucketStages,
      $setWindowFields: windowStage,
      $redact: redactStage,
      $fill: fillStage(windowStage, addFieldsStage),
      $densify: densifyStage,
      $unwind: unwindStage,
      $match: match,
      $graphLookup: graphLookup,
      $geoNear: geoNearStage((query) => compileQuery(query)),
      $lookup: joinedAs(lookupByEquality(mingoPipeline.$lookup!, (query) => compileQuery(query))),
      $sort: sortStage,
      $group: groupStage,
      $project: projectStage,
      $unset: unsetStage,
      $addFields: addFieldsStage,
      $set: addFieldsStage,
    }),
  ),
  projection: wrapValueOperators(projectionOperators as unknown as OperatorMap),
  query: engineQueryOperators,
  window: wrapValueOperators({
    ...(windowOperators as unknown as OperatorMap),
    $linearFill: linearFill,
    $shift: shift,
    $derivative: derivative,
    $integral: integral,
  }),
} as never);

export interface EngineOptions {
  /** Resolves `$lookup` / `$unionWith` / `$graphLookup` collections by name. */
  collectionResolver?: (name: string) => Document[];
  /** Variables every expression of the pipeline sees (`$merge`'s for its `whenMatched` pipeline). */
  variables?: Document;
}

/**
 * `$$CLUSTER_TIME` (a replica set's, as Atlas's; mingo's patch asks its options for it): a
 * Timestamp of the computation's `$$NOW`, its second, so one for the statement and on the app's
 * clock as `$$NOW` is (decision 0063).
 */
const clusterTime = (now: Date) => new Timestamp({ t: Math.floor(now.getTime() / 1000), i: 1 });

function options(extra: EngineOptions = {}) {
  return {
    context,
    scriptEnabled: false,
    useStrictMode: true,
    clusterTime,
    ...(extra.collectionResolver ? { collectionResolver: extra.collectionResolver } : {}),
    ...(extra.variables ? { variables: extra.variables } : {}),
  };
}

/**
 * The options every Query and Aggregator without a collection resolver starts from, made once.
 * Given plain options, mingo copies the context's 231 operators into each query's options
 * (`ComputeOptions.init` → `Context.from`): two copies a sorted find, and in the in-memory
 * store's `find` benchmark, garbage that lived long enough to be promoted (a quarter of the
 * ~9–11 KB promoted a find, which fed major collections on the requests' core). Given an instance
 * of its ComputeOptions, it copies only the instance's locals (empty here) and shares the
 * options. mingo does not export the class: an Aggregator hands its own instance to its stages, so
 * a one-stage pipeline of a probing stage hands it over once, and its options are pointed at the
 * engine's context. If mingo ever hands over something else (no empty locals, no `options`), the
 * plain options are used as before.
 */
const sharedOptions: unknown = (() => {
  const plain = options();
  let handed: unknown;
  const probe = Context.init({
    pipeline: {
      $probe: (collection: unknown, _expr: unknown, computeOptions: unknown) => {
        handed = computeOptions;
        return collection;
      },
    },
  } as never);
  new Aggregator([{ $probe: {} }], { ...plain, context: probe } as never).run([]);
  const instance = handed as { options?: unknown; local?: unknown } | undefined;
  if (
    instance === undefined ||
    instance === null ||
    typeof instance.options !== "object" ||
    instance.options === null ||
    typeof instance.local !== "object" ||
    instance.local === null ||
    Object.keys(instance.local).length > 0
  )
    return plain;
  instance.options = { ...instance.options, ...plain };
  return instance;
})();

const TimedOptions = computeOptionsClass(sharedOptions);

/**
 * The options a Query or Aggregator starts from (`base`, the shared ones by default), with the
 * statement's `$$NOW` fixed: the action's time (query-limits.ts actionTime; the app's clock's),
 * else now. mingo reads `$$NOW` from its options' `timestamp`, copied to every computation made
 * from them; left unset, each copy took the real clock at its own first use (an `$addFields` over
 * 5,000 documents saw a dozen different times).
 */
function startOptions(base: unknown = sharedOptions): unknown {
  if (TimedOptions === null) return base;
  const made = TimedOptions.init(base);
  return new TimedOptions(made.options, { ...made.local, timestamp: actionTime() ?? Date.now() });
}

/**
 * Whether a query names `$$NOW` or `$$CLUSTER_TIME` (as a value, or a path's start): a compiled
 * query keeps the time of its first use, so one that reads the time and is kept (a stream's
 * filter, a trigger's match) is compiled again for each use.
 */
export function readsTheTime(query: Document): boolean {
  const pending: unknown[] = [query];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node === "string") {
      if (/^\$\$(NOW|CLUSTER_TIME)(\.|$)/.test(node)) return true;
    } else if (Array.isArray(node)) for (const item of node) pending.push(item);
    else if (isDocument(node)) for (const key of Object.keys(node)) pending.push(node[key]);
  }
  return false;
}

/** A compiled query; `test` runs it against one document. */
export function compileQuery(query: Document): { test(doc: unknown): boolean } {
  return new Query(rewriteQuery(query), startOptions() as never);
}

/** A find's query compiled to check it: its `$near`/`$nearSphere`, which only a find takes, apart. */
export function compileFindQuery(query: Document): { test(doc: unknown): boolean } {
  return compileQuery(takeNear(query)?.rest ?? query);
}

export interface FindOptions {
  projection?: Document;
  sort?: Document;
  limit?: number;
}

export function find(docs: Document[], query: Document, findOptions: FindOptions = {}): Document[] {
  const near = takeNear(query);
  if (near) {
    // Every match, nearest first; a sort of the find's own orders them instead.
    const sorted = findOptions.sort !== undefined && keysOf(findOptions.sort).length > 0;
    const matched = find(docs, near.rest, sorted ? { sort: findOptions.sort } : {});
    const placed = byNearness(matched, near);
    const within = new Set(placed);
    const kept = sorted ? matched.filter((doc) => within.has(doc)) : placed;
    const limited = findOptions.limit !== undefined ? kept.slice(0, findOptions.limit) : kept;
    return findOptions.projection && Object.keys(findOptions.projection).length > 0
      ? project(limited, findOptions.projection, near.rest)
      : limited;
  }
  const q = new Query(rewriteQuery(query), startOptions() as never);
  const projection =
    findOptions.projection && Object.keys(findOptions.projection).length > 0 ? findOptions.projection : undefined;
  const sort = findOptions.sort && Object.keys(findOptions.sort).length > 0 ? findOptions.sort : undefined;
  let found: Document[];
  if (sort) {
    // Matched first, so the sort is weighed before it starts (engine-guards.ts).
    const matched = q.find(docs).all() as Document[];
    weighSort(matched, sort, "$sort");
    found = sortDocuments(matched, sort);
    if (findOptions.limit !== undefined && found.length > findOptions.limit) found = found.slice(0, findOptions.limit);
  } else {
    let cursor = q.find(docs);
    if (findOptions.limit !== undefined) cursor = cursor.limit(findOptions.limit);
    found = cursor.all() as Document[];
  }
  return projection ? project(found, projection, query) : found;
}

/** A find's projection of each document, laid out as MongoDB does (projections.ts). */
const positionalMissing = "positional operator '.$' couldn't find a matching element in the array";

/**
 * A find projection's positional `"items.$": 1`, as MongoDB applies it: the first array on the
 * path cut to the element the query matched (update-paths.ts' `matchedPosition`, as MongoDB's
 * matcher records it), and the path included in its place. A path that meets no array (missing,
 * or through values) is included as it is; an array with no element matched is MongoDB's refusal.
 */
function positionalProjection(
  docs: Document[],
  projection: Document,
  query: Document,
): { docs: Document[]; projection: Document } {
  const positional = keysOf(projection).filter((key) => key.endsWith(".$"));
  if (positional.length === 0) return { docs, projection };
  if (positional.length > 1) throw errors.mongo("Cannot specify more than one positional projection per query.");
  const key = positional[0]!;
  const path = key.slice(0, -2).split(".");
  const rest: Document = {};
  for (const name of keysOf(projection))
    rest[name === key ? key.slice(0, -2) : name] = name === key ? 1 : projection[name];
  const cut = docs.map((doc) => {
    let value: unknown = doc;
    let depth = 0;
    for (; depth < path.length && isDocument(value); depth++) {
      value = value[path[depth]!];
      if (Array.isArray(value)) break;
    }
    if (!Array.isArray(value)) return doc;
    const position = matchedPosition(doc, query, compileQuery);
    if (position === undefined || position >= value.length) throw errors.mongo(positionalMissing);
    return withValueAt(doc, path.slice(0, depth + 1), [value[position]]) as Document;
  });
  return { docs: cut, projection: rest };
}

/** Why a find's `{$slice: …}` is no find() `$slice` (MongoDB's status text), or null when it is one. */
function findSliceFailure(slice: unknown): string | null {
  const numeric = (n: unknown) => typeof n === "number" || isLong(n) || isDecimal(n);
  if (numeric(slice)) return null;
  if (!Array.isArray(slice)) return "Location31273: $slice only supports numbers and [skip, limit] arrays";
  if (slice.length !== 2) return "Location31272: $slice array argument should be of form [skip, limit]";
  const [skip, limit] = slice;
  if (!numeric(skip))
    return `Location31257: $slice expects the skip argument to be a number, got ${bsonTypeNumber(skip) ?? 0}`;
  if (!numeric(limit))
    return `Location31258: $slice expects the limit argument to be a number, got ${bsonTypeNumber(limit) ?? 0}`;
  const count = Math.trunc(Number(limit));
  return count > 0 ? null : `Location31259: $slice limit must be positive, got ${count}`;
}

/**
 * A find's projection checked as MongoDB's projection parser checks its operators; answers the
 * projection to apply. A `{$slice: …}` that is no find() `$slice` is, as in MongoDB, the
 * aggregation expression `$slice` (a computed field), or refused with both parsers' reasons.
 */
function checkFindProjection(spec: Document): Document {
  checkProjectionSpec(spec, { find: true, isExpression });
  let out: Document | undefined;
  for (const key of keysOf(spec)) {
    const value = spec[key];
    if (!isDocument(value)) continue;
    const operator = keysOf(value)[0];
    if (operator === "$elemMatch") {
      if (key.includes(".")) throw errors.mongo("Cannot use $elemMatch projection on a nested field.");
      if (!isDocument(value.$elemMatch))
        throw errors.mongo(
          `elemMatch: Invalid argument, object required, but got ${bsonTypeNumber(value.$elemMatch) ?? 0}`,
        );
    } else if (operator === "$slice") {
      const failure = findSliceFailure(value.$slice);
      if (failure === null) continue;
      const args = Array.isArray(value.$slice) ? value.$slice.length : 1;
      if (args < 2 || args > 3)
        throw errors.mongo(
          `Invalid $slice syntax. The given syntax ${shellText(value)} did not match the find() syntax because :: ` +
            `${failure} :: The given syntax did not match the expression $slice syntax. :: caused by :: ` +
            `Expression $slice takes at least 2 arguments, and at most 3, but ${args} were passed in.`,
        );
      out ??= { ...spec };
      out[key] = { $let: { vars: {}, in: value } };
    }
  }
  return out ?? spec;
}

/**
 * Refuses a find projection MongoDB's parser refuses, before anything is read or written (a
 * `findOneAnd…` writes first, then projects): its checks, then an empty document projected (what
 * no document decides: inclusion beside exclusion, unknown operators, constant expressions).
 */
export function checkProjection(spec: Document): void {
  project([{}], spec, {});
}

function project(found: Document[], spec: Document, query: Document = {}): Document[] {
  const checked = checkFindProjection(withNumericFlags(spec));
  return projectChecked(found, checked, query).map((doc) => dropMissing(doc) as Document);
}

/**
 * A find projection's `{items: {$elemMatch: …}}`: each document's array cut to its first element
 * that matches as a query's `$elemMatch` would (of operators, the element as a value; of fields,
 * the element as a document), or left out when none does or it is no array; the projection with
 * the field included in its place.
 */
function elemMatchProjection(
  docs: Document[],
  projection: Document,
  type: ProjectionType,
): { docs: Document[]; projection: Document } {
  const keys = keysOf(projection).filter(
    (key) => isDocument(projection[key]) && "$elemMatch" in (projection[key] as Document),
  );
  if (keys.length === 0) return { docs, projection };
  const tests = new Map(
    keys.map((key) => [key, elementTest((projection[key] as Document).$elemMatch as Document, sharedOptions)]),
  );
  const rest = appliedAway(projection, (key) => tests.has(key), type);
  const cut = docs.map((doc) => {
    let out: Document = doc;
    for (const [key, test] of tests) {
      const array = doc[key];
      const element = Array.isArray(array) ? array.find(test) : undefined;
      if (element !== undefined) out = withValueAt(out, [key], [element]) as Document;
      else if (Object.hasOwn(out, key)) {
        const { [key]: _, ...others } = out;
        out = others;
      }
    }
    return out;
  });
  return { docs: cut, projection: rest };
}

function projectChecked(found: Document[], spec: Document, query: Document): Document[] {
  const dotted = withSlicesDotted(spec);
  const type = findProjectionType(dotted);
  const matched = elemMatchProjection(found, dotted, type);
  const sliced = sliceProjection(matched.docs, matched.projection, type);
  const { docs, projection } = positionalProjection(sliced.docs, sliced.projection, query);
  const exclusions = exclusionsOf(projection);
  if (exclusions) return docs.map((doc) => excluded(doc, exclusions) as Document);
  const nested =
    computesNested(projection) || namesNumericField(projection) ? nestedProjection(projection, startOptions()) : null;
  if (nested) return docs.map(nested);
  const order = inMongoOrder(projection, true);
  const projected = new Query({}, startOptions() as never).find(docs, projection as never).all() as Document[];
  return projected.map((doc, i) => order(docs[i], doc) as Document);
}

/**
 * Whether every value of `field` in `docs` is a string without surrogates (whose UTF-16 order is
 * then MongoDB's code-point order), or every one a finite number other than -0.
 */
function ofOneNativeType(docs: Document[], field: string): boolean {
  const first = docs[0]?.[field];
  if (typeof first === "string") {
    for (const doc of docs) {
      const value = doc[field];
      if (typeof value !== "string" || surrogate.test(value)) return false;
    }
    return true;
  }
  for (const doc of docs) {
    const value = doc[field];
    if (typeof value !== "number" || !Number.isFinite(value) || Object.is(value, -0)) return false;
  }
  return true;
}

/**
 * The places in `docs` of the first `limit` documents `find` answers for them with `sort` and no
 * query, under the same limits. mingo's $sort groups the documents by each field's value (from the
 * last field to the first) and, when the values are all strings or all numbers, sorts the distinct
 * values natively, each group keeping its order, and reverses the values for -1: a stable sort. So
 * for such fields (finite numbers but -0, which would group with 0) a stable sort here answers the
 * same without its iterators and groups (a user's 100 notes sorted by a number: ~1 µs a document
 * less); any other values are sorted by `find` itself.
 */
export function sortedPlaces(docs: Document[], sort: Document, limit: number): number[] {
  const fields = Object.keys(sort);
  if (docs.length === 0 || fields.length === 0 || !fields.every((field) => ofOneNativeType(docs, field))) {
    const place = new Map(docs.map((doc, i) => [doc, i]));
    return find(docs, {}, { sort, limit }).map((doc) => place.get(doc)!);
  }
  weighSort(docs, sort, "$sort");
  const directions = fields.map((field) => (sort[field] === -1 ? -1 : 1));
  const places = docs.map((_, i) => i);
  places.sort((a, b) => {
    for (let f = 0; f < fields.length; f++) {
      const x = docs[a]![fields[f]!] as number | string;
      const y = docs[b]![fields[f]!] as number | string;
      if (x !== y) return x < y ? -directions[f]! : directions[f]!;
    }
    return a - b;
  });
  return places.length > limit ? places.slice(0, limit) : places;
}

/** What the stage checks ask of the engine (stage-specs.ts). */
const isExpression = (name: string) => context.getOperator("expression" as never, name) != null;

const stageEngine: StageEngine = {
  runs: (name) =>
    context.getOperator("pipeline" as never, name) !== null &&
    context.getOperator("pipeline" as never, name) !== undefined,
  checkGroup: (spec) => parseGroup(spec, sharedOptions),
  isExpression,
  constant: (expr) => evalExpr({}, expr, sharedOptions as never),
};

/**
 * Refuses a pipeline MongoDB refuses to parse (stage-specs.ts), with MongoDB's text; `database`,
 * the one it runs in, names a writing stage's target in its refusals.
 */
export function checkAggregation(pipeline: Document[], database?: string): void {
  refuseForbiddenPaths(pipeline);
  checkStages(pipeline, database === undefined ? stageEngine : { ...stageEngine, database });
}

/** Refuses an update's pipeline MongoDB refuses (stage-specs.ts), with MongoDB's text. */
export function checkUpdatePipeline(pipeline: Document[]): void {
  refuseForbiddenPaths(pipeline);
  checkUpdateStages(pipeline, stageEngine);
}

export function aggregate(docs: Document[], pipeline: Document[], engineOptions: EngineOptions = {}): Document[] {
  checkStages(pipeline, stageEngine);
  const start = startOptions(
    engineOptions.collectionResolver || engineOptions.variables ? options(engineOptions) : sharedOptions,
  );
  // Documents that expressions built, as MongoDB builds them: no field holding nothing.
  return (new Aggregator(pipeline, start as never).run(docs) as Document[]).map((doc) => dropMissing(doc) as Document);
}
