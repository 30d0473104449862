/**
 * A pipeline checked as MongoDB parses it before it runs a stage
 * (docs/decisions/0046-stage-specifications.md): first the whole pipeline's shape (each stage one
 * field naming a stage MongoDB knows; `$lookup`'s source and `$facet`'s sub-pipelines), then each
 * stage's arguments in order (`$limit`, `$skip`, `$count`, `$sort`, `$sample`, `$project`,
 * `$unset`, `$sortByCount`, `$lookup`, `$replaceRoot`, `$group`), sub-pipelines included, with
 * MongoDB's texts. mingo took most malformed stages (`$limit: 0` answered nothing, `$sort: {a: 2}`
 * sorted, `$project: {}` kept every field, `$lookup` without `as` wrote a field "undefined"), or
 * refused them in its own words.
 */
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { bsonTypeAlias } from "./bson-order.ts";
import { checkDensify } from "./densify-stage.ts";
import { isDocument } from "./documents.ts";
import { checkFill } from "./fill-spec.ts";
import { checkGraphLookup } from "./graph-lookup.ts";
import { doubleOf, isDecimal, isLong, isNumeric } from "./numeric-operators.ts";
import { forbiddenPath } from "./own-fields.ts";
import { checkProjectionSpec, fieldPathFailure } from "./projection-spec.ts";
import { bsonElementText } from "./shell-text.ts";
import { finish } from "./turns.ts";
import { checkVariableName } from "./variable-names.ts";
import { keysOf } from "./wide-keys.ts";
import { checkWindowFields } from "./window-spec.ts";
import { checkWriteStage, misplaced, writeStages } from "./write-stages.ts";

/** Every stage MongoDB 8.0 recognises in an aggregation. */
const knownStages = new Set([
  "$addFields",
  "$bucket",
  "$bucketAuto",
  "$changeStream",
  "$changeStreamSplitLargeEvent",
  "$collStats",
  "$count",
  "$currentOp",
  "$densify",
  "$documents",
  "$facet",
  "$fill",
  "$geoNear",
  "$graphLookup",
  "$group",
  "$indexStats",
  "$limit",
  "$listLocalSessions",
  "$listSampledQueries",
  "$listSearchIndexes",
  "$listSessions",
  "$lookup",
  "$match",
  "$merge",
  "$out",
  "$planCacheStats",
  "$project",
  "$querySettings",
  "$redact",
  "$replaceRoot",
  "$replaceWith",
  "$sample",
  "$search",
  "$searchMeta",
  "$set",
  "$setWindowFields",
  "$shardedDataDistribution",
  "$skip",
  "$sort",
  "$sortByCount",
  "$unionWith",
  "$unset",
  "$unwind",
  "$vectorSearch",
]);

/** Stages a `$facet` sub-pipeline may not hold. */
const notInFacet = new Set([
  "$out",
  "$merge",
  "$facet",
  "$geoNear",
  "$changeStream",
  "$collStats",
  "$indexStats",
  "$search",
  "$searchMeta",
  "$vectorSearch",
  "$documents",
]);

/** What the engine checks itself: whether it runs a stage, a `$group`'s specification, an expression's name. */
export interface StageEngine {
  runs(name: string): boolean;
  checkGroup(spec: unknown): void;
  isExpression(name: string): boolean;
  /** The value of a constant expression (a window's bound written as one). */
  constant(expr: unknown): unknown;
  /** The database the pipeline runs in (a writing stage's target is in it unless named). */
  database?: string;
}

/** A stage's one field and its value. */
function stageOf(stage: unknown): { name: string; spec: unknown } {
  if (!isDocument(stage)) throw errors.mongo("Each element of the 'pipeline' array must be an object");
  const keys = keysOf(stage);
  if (keys.length !== 1) throw errors.mongo("A pipeline stage specification object must contain exactly one field.");
  const name = keys[0]!;
  // The service's text ends with a period (the reference's record of its answers); MongoDB's does not.
  if (!knownStages.has(name)) throw errors.mongo(`Unrecognized pipeline stage name: '${name}'.`);
  return { name, spec: stage[name] };
}

/** A `$limit`'s or `$skip`'s count, as BSONElement::parseIntegerElementToNonNegativeLong reads it. */
function countArgument(stage: "$limit" | "$skip", value: unknown): number {
  const refuse = (why: string) => errors.mongo(`invalid argument to ${stage} stage: ${why}`);
  const shown = bsonElementText(stage, value);
  if (!isNumeric(value)) throw refuse(`Expected a number in: ${shown}`);
  let count: number;
  if (typeof value === "number") {
    if (Number.isNaN(value)) throw refuse(`Expected an integer, but found NaN in: ${shown}`);
    if (value >= 2 ** 63 || value < -(2 ** 63)) throw refuse(`Cannot represent as a 64-bit integer: ${shown}`);
    if (!Number.isInteger(value)) throw refuse(`Expected an integer: ${shown}`);
    count = value;
  } else if (isDecimal(value)) {
    const exact = doubleOf(value);
    if (!Number.isInteger(exact) || Math.abs(exact) >= 2 ** 63)
      throw refuse(`Cannot represent as a 64-bit integer: ${shown}`);
    count = exact;
  } else count = isLong(value) ? doubleOf(value) : Number(value);
  if (count < 0) throw refuse(`Expected a non-negative number in: ${shown}`);
  if (stage === "$limit" && count === 0) throw errors.mongo("the limit must be positive");
  return count;
}

function checkCount(spec: unknown): void {
  if (typeof spec !== "string" || spec === "") throw errors.mongo("the count field must be a non-empty string");
  if (spec.startsWith("$")) throw errors.mongo("the count field cannot be a $-prefixed path");
  if (spec.includes("\0")) throw errors.mongo("the count field cannot contain a null byte");
  if (spec.includes(".")) throw errors.mongo("the count field cannot contain '.'");
  if (spec === "_id") throw errors.mongo("a group's _id may only be specified once");
}

/**
 * A sort specification's keys, as MongoDB's SortPattern reads them; pausing every 1,024 keys, so
 * that a find's sort of 200,000 keys is checked in turns on the main thread (`inTurns`).
 */
export function* sortSpecChecks(spec: unknown): Generator<void, void> {
  if (!isDocument(spec)) throw errors.mongo("the $sort key specification must be an object");
  const keys = keysOf(spec);
  if (keys.length === 0) throw errors.mongo("$sort stage must have at least one sort key");
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const direction = spec[key];
    if ((i & 1023) === 1023) yield;
    if (isDocument(direction)) {
      const metaKeys = keysOf(direction);
      if (metaKeys[0] !== "$meta") throw errors.mongo("$meta is the only expression supported by $sort right now");
      if (metaKeys.length > 1) throw errors.mongo("Cannot have additional keys in a $meta sort specification");
      continue;
    }
    if (!isNumeric(direction))
      throw errors.mongo(`Illegal key in $sort specification: ${bsonElementText(key, direction)}`);
    const number = Math.trunc(doubleOf(direction));
    if (number !== 1 && number !== -1)
      throw errors.mongo("$sort key ordering must be 1 (for ascending) or -1 (for descending)");
  }
}

/** `sortSpecChecks` at once. */
export function checkSortSpec(spec: unknown): void {
  finish(sortSpecChecks(spec));
}

/** `$sample`'s size (a fractional one truncated, as MongoDB reads it). */
export function sampleSize(spec: unknown): number {
  if (!isDocument(spec)) throw errors.mongo("the $sample stage specification must be an object");
  let size: number | undefined;
  for (const key of keysOf(spec)) {
    if (key !== "size") throw errors.mongo(`unrecognized option to $sample: ${key}`);
    if (!isNumeric(spec.size)) throw errors.mongo("size argument to $sample must be a number");
    size = Math.trunc(doubleOf(spec.size)) || 0;
    if (size < 0) throw errors.mongo("size argument to $sample must not be negative");
  }
  if (size === undefined) throw errors.mongo("$sample stage must specify a size");
  return size;
}

/** A field path of `$unset`, as MongoDB's FieldPath refuses one. */
function checkUnsetPath(path: string): void {
  const failure = fieldPathFailure(path);
  if (failure !== undefined) throw errors.mongo(`Invalid $unset :: caused by :: ${failure}`);
}

function checkUnset(spec: unknown): void {
  if (typeof spec === "string") {
    checkUnsetPath(spec);
    return;
  }
  if (!Array.isArray(spec)) throw errors.mongo("$unset specification must be a string or an array");
  if (spec.length === 0)
    throw errors.mongo("$unset specification must be a string or an array with at least one field");
  if (spec.some((path) => typeof path !== "string"))
    throw errors.mongo("$unset specification must be a string or an array containing only string values");
  for (const path of spec as string[]) checkUnsetPath(path);
}

function checkSortByCount(spec: unknown): void {
  const text = "the sortByCount field must be defined as a $-prefixed path or an expression inside an object";
  if (typeof spec === "string") {
    if (!spec.startsWith("$") || spec.length < 2) throw errors.mongo(text);
    return;
  }
  if (!isDocument(spec)) throw errors.mongo("the sortByCount field must be specified as a string or as an object");
  if (!(keysOf(spec)[0] ?? "").startsWith("$")) throw errors.mongo(text);
}

/** `$lookup`'s source (the lite parse). */
function checkLookupSource(spec: unknown): void {
  if (!isDocument(spec))
    throw errors.mongo(`the $lookup stage specification must be an object, but found ${bsonTypeAlias(spec)}`);
  if (!("from" in spec)) {
    const pipeline = spec.pipeline;
    if (pipeline === undefined) throw errors.mongo("must specify 'pipeline' when 'from' is empty");
    const first = Array.isArray(pipeline) && isDocument(pipeline[0]) ? keysOf(pipeline[0])[0] : undefined;
    if (first !== "$documents")
      throw errors.mongo(
        "$lookup stage without explicit collection must have a pipeline with $documents as first stage",
      );
  } else if (typeof spec.from !== "string" && !isDocument(spec.from))
    throw errors.mongo(`$lookup 'from' field must be a string, but found ${bsonTypeAlias(spec.from)}`);
  if ("pipeline" in spec && !Array.isArray(spec.pipeline))
    throw errors.mongo("'pipeline' option must be specified as an array");
}

/** `$lookup`'s arguments (its createFromBson). */
function checkLookup(spec: Record<string, unknown>): void {
  for (const key of keysOf(spec)) {
    const value = spec[key];
    if (key === "from" || key === "pipeline") continue;
    if (key === "let") {
      if (!isDocument(value))
        throw errors.mongo(
          `$lookup argument '${bsonElementText("let", value)}' must be an object, is type ${bsonTypeAlias(value)}`,
        );
      continue;
    }
    if (typeof value !== "string")
      throw errors.mongo(
        `$lookup argument '${key}' must be a string, found ${bsonElementText(key, value)}: ${bsonTypeAlias(value)}`,
      );
    if (key !== "as" && key !== "localField" && key !== "foreignField")
      throw errors.mongo(`unknown argument to $lookup: ${key}`);
  }
  if (typeof spec.as !== "string" || spec.as === "") throw errors.mongo("must specify 'as' field for a $lookup");
  const local = "localField" in spec;
  const foreign = "foreignField" in spec;
  if ("pipeline" in spec) {
    if (local !== foreign)
      throw errors.mongo("$lookup requires both or neither of 'localField' and 'foreignField' to be specified");
  } else {
    if (!local || !foreign)
      throw errors.mongo("$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified");
    if ("let" in spec) throw errors.mongo("$lookup with a 'let' argument must also specify 'pipeline'");
  }
  if (isDocument(spec.let)) for (const name of keysOf(spec.let)) checkVariableName(name);
}

function checkReplaceRoot(spec: unknown): void {
  if (!isDocument(spec))
    throw errors.mongo(`expected an object as specification for $replaceRoot stage, got ${bsonTypeAlias(spec)}`);
  for (const key of keysOf(spec))
    if (key !== "newRoot") throw errors.mongo(`BSON field '$replaceRoot.${key}' is an unknown field.`);
  if (!("newRoot" in spec)) throw errors.mongo("BSON field '$replaceRoot.newRoot' is missing but a required field");
}

/** `$facet`'s sub-pipelines (the lite parse), each then as a pipeline of its own. */
function facetPipelines(spec: unknown): unknown[][] {
  if (!isDocument(spec) || keysOf(spec).length === 0)
    throw errors.mongo(
      `the $facet specification must be a non-empty object, but found: ${bsonElementText("$facet", spec)}`,
    );
  const pipelines: unknown[][] = [];
  for (const name of keysOf(spec)) {
    const pipeline = spec[name];
    // (An output is a field name: MongoDB's FieldPath checks, then its own.)
    if (name === "") throw errors.mongo("FieldPath field names may not be empty strings.");
    if (name.startsWith("$"))
      throw errors.mongo("FieldPath field names may not start with '$'. Consider using $getField or $setField.");
    if (name.includes(".")) throw errors.mongo("FieldPath field names may not contain '.'.");
    if (!Array.isArray(pipeline))
      throw errors.mongo(`arguments to $facet must be arrays, ${name} is type ${bsonTypeAlias(pipeline)}`);
    for (const [i, stage] of pipeline.entries())
      if (!isDocument(stage) || keysOf(stage).length === 0)
        throw errors.mongo(
          `elements of arrays in $facet spec must be non-empty objects, ${name} argument contained an element of type ${bsonTypeAlias(stage)}: ${bsonElementText(String(i), stage)}`,
        );
    pipelines.push(pipeline);
  }
  return pipelines;
}

/** The sub-pipelines a stage holds (`$facet`'s, `$lookup`'s, `$unionWith`'s). */
function subPipelines(name: string, spec: unknown): unknown[][] {
  if (name === "$facet") return facetPipelines(spec);
  if ((name === "$lookup" || name === "$unionWith") && isDocument(spec) && Array.isArray(spec.pipeline))
    return [spec.pipeline];
  return [];
}

/** The shape of a pipeline and of those within it, as MongoDB's lite parse checks them. */
function liteParse(pipeline: unknown[], inFacet: boolean): void {
  for (const element of pipeline) {
    const { name, spec } = stageOf(element);
    if (inFacet && notInFacet.has(name)) throw errors.mongo(`${name} is not allowed to be used within a $facet stage`);
    if (name === "$lookup") checkLookupSource(spec);
    for (const inner of subPipelines(name, spec)) liteParse(inner, name === "$facet");
  }
}

/** MongoDB's `internalPipelineLengthLimit` (a release build's): stages as written, and once parsed. */
const maxPipelineLength = 1000;
/** MongoDB's `internalMaxSubPipelineViewDepth`: `$lookup`, `$unionWith`, `$graphLookup` within one another. */
const maxSubPipelineDepth = 20;
/** The stages that open a sub-pipeline context of their own (a `$facet`'s share its stage's). */
const deeper = new Set(["$lookup", "$unionWith", "$graphLookup"]);

/** `$setWindowFields`' stages: a `$sort` first when it sorts or partitions. */
const windowStages = (sorted: boolean) =>
  sorted ? ["$sort", "$_internalSetWindowFields"] : ["$_internalSetWindowFields"];

/**
 * The stages a stage becomes once MongoDB parses it (its desugaring), by their source names: what
 * the pipeline's parsed length counts and an update's pipeline is checked against.
 */
function parsedStages(name: string, spec: unknown): string[] {
  const given = (key: string) => isDocument(spec) && spec[key] !== undefined;
  switch (name) {
    case "$bucket":
    case "$sortByCount":
      return ["$group", "$sort"];
    case "$count":
      return ["$group", "$project"];
    case "$densify":
      return ["$sort", "$_internalDensify"];
    case "$setWindowFields":
      return windowStages(given("sortBy") || given("partitionBy"));
    case "$fill": {
      const outputs = isDocument(spec) && isDocument(spec.output) ? Object.values(spec.output) : [];
      const methods = outputs.some((o) => isDocument(o) && o.method !== undefined);
      const values = outputs.some((o) => isDocument(o) && o.value !== undefined);
      const window = methods ? windowStages(given("sortBy") || given("partitionBy") || given("partitionByFields")) : [];
      return values ? [...window, "$addFields"] : window;
    }
    default:
      return [name];
  }
}

/**
 * Each stage's arguments, in order, sub-pipelines as their stage is reached (`depth`: the
 * sub-pipeline contexts this pipeline is within; `within`, the stage whose sub-pipeline it is);
 * then what MongoDB checks of the parsed pipeline.
 */
function fullParse(pipeline: unknown[], engine: StageEngine, depth: number, within?: string): void {
  if (pipeline.length > maxPipelineLength)
    throw errors.mongo(`Pipeline length must be no longer than ${maxPipelineLength} stages.`);
  let parsed = 0;
  for (const element of pipeline) {
    const { name, spec } = stageOf(element);
    switch (name) {
      case "$limit":
      case "$skip":
        countArgument(name, spec);
        break;
      case "$count":
        checkCount(spec);
        break;
      case "$sort":
        checkSortSpec(spec);
        break;
      case "$sample":
        sampleSize(spec);
        break;
      case "$project":
        if (!isDocument(spec)) throw errors.mongo("$project specification must be an object");
        if (keysOf(spec).length === 0)
          throw errors.mongo("Invalid $project :: caused by :: projection specification must have at least one field");
        try {
          checkProjectionSpec(spec, { find: false, isExpression: engine.isExpression });
        } catch (error) {
          throw errors.mongo(`Invalid $project :: caused by :: ${(error as Error).message}`);
        }
        break;
      case "$unset":
        checkUnset(spec);
        break;
      case "$sortByCount":
        checkSortByCount(spec);
        break;
      case "$lookup":
        checkLookup(spec as Record<string, unknown>);
        break;
      case "$graphLookup":
        checkGraphLookup(spec);
        break;
      case "$densify":
        checkDensify(spec);
        break;
      case "$fill":
        checkFill(spec);
        break;
      case "$replaceRoot":
        checkReplaceRoot(spec);
        break;
      case "$group":
        engine.checkGroup(spec);
        break;
      case "$setWindowFields":
        checkWindowFields(spec, engine.constant);
        break;
      case "$out":
      case "$merge":
        checkWriteStage(name, spec, engine.database ?? "test");
        break;
    }
    if (deeper.has(name) && depth >= maxSubPipelineDepth)
      throw errors.mongo(`Maximum number of nested sub-pipelines exceeded. Limit is ${maxSubPipelineDepth}`);
    for (const inner of subPipelines(name, spec)) {
      // (Pipeline::validateFacetPipeline, as each of them is parsed.)
      if (name === "$facet" && inner.length === 0) throw errors.mongo("sub-pipeline in $facet stage cannot be empty");
      fullParse(inner, engine, name === "$facet" ? depth : depth + 1, name === "$facet" ? within : name);
    }
    // (The writing stages are the action's to run: mongo-actions.ts.)
    if (!writeStages.has(name) && !engine.runs(name)) throw errors.mongo(`${name} is not supported by this server`);
    parsed += parsedStages(name, spec).length;
  }
  if (parsed > maxPipelineLength)
    throw errors.mongo(`Pipeline length must be no longer than ${maxPipelineLength} stages`);
  const outOfPlace = misplaced(pipeline, within);
  if (outOfPlace !== undefined) throw errors.mongo(outOfPlace);
}

/** The stages an update's pipeline may run once parsed (MongoDB's isAllowedWithinUpdatePipeline). */
const updateStages = new Set(["$addFields", "$set", "$project", "$unset", "$replaceRoot", "$replaceWith"]);

/** Refuses an update's pipeline as MongoDB does: parsed as an aggregation's, then its stages as parsed. */
export function checkUpdateStages(pipeline: unknown[], engine: StageEngine): void {
  checkStages(pipeline, engine);
  for (const element of pipeline) {
    const { name, spec } = stageOf(element);
    const refused = parsedStages(name, spec).find((parsed) => !updateStages.has(parsed));
    if (refused !== undefined) throw errors.mongo(`${refused} is not allowed to be used within an update`);
  }
}

/** Refuses a pipeline MongoDB would refuse to parse, with MongoDB's text; answers nothing otherwise. */
export function checkStages(pipeline: unknown[], engine: StageEngine): void {
  liteParse(pipeline, false);
  fullParse(pipeline, engine, 0);
}

/**
 * Refuses a field name or path through `__proto__` (or `constructor.prototype`) anywhere in a
 * pipeline, and as the path a `$densify` or an `$unset` names: the query engine would otherwise
 * pass over it in silence (an update would report a change it did not make); see own-fields.ts.
 * Once, where the pipeline is parsed (not each time it runs: an update's runs once a document).
 */
export function refuseForbiddenPaths(pipeline: unknown[]): void {
  const pending: unknown[] = [pipeline];
  while (pending.length > 0) {
    const value = pending.pop();
    if (Array.isArray(value)) for (const item of value) pending.push(item);
    else if (isDocument(value))
      for (const key of keysOf(value)) {
        const forbidden = forbiddenPath(key);
        if (forbidden !== null) throw errors.mongo(forbidden);
        const member = value[key];
        const named = key === "$unset" ? member : key === "$densify" && isDocument(member) ? member.field : undefined;
        for (const path of Array.isArray(named) ? named : [named]) {
          const refusal = typeof path === "string" ? forbiddenPath(path) : null;
          if (refusal !== null) throw errors.mongo(refusal);
        }
        pending.push(member);
      }
  }
}
