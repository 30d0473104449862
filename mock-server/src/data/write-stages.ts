/**
 * The stages that write an aggregation's results into a collection, `$out` and `$merge`
 * (docs/decisions/0054-out-and-merge.md): their specifications parsed as MongoDB parses them, with
 * its texts, and the texts of the results they refuse (merge-writes.ts has what a `$merge` result
 * asks of the target). A system user's pipeline may end with one (an app user's may not:
 * mongo-actions.ts); the action runs the stages before it, then writes (mongo-actions.ts
 * `MongoService.aggregate`).
 */
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { bsonTypeAlias } from "./bson-order.ts";
import { type Document, isDocument } from "./documents.ts";
import { namespaceError } from "./namespaces.ts";
import { ownField } from "./own-fields.ts";
import { isRegexValue } from "./regex.ts";
import { shellText } from "./shell-text.ts";
import { checkVariableName } from "./variable-names.ts";
import { keysOf } from "./wide-keys.ts";

/** The stages that write, each only last in a top-level pipeline. */
export const writeStages = new Set(["$out", "$merge"]);

/** Where a writing stage writes. */
export interface Target {
  database: string;
  collection: string;
}

export interface OutSpec extends Target {
  kind: "$out";
}

export type WhenMatched = "replace" | "keepExisting" | "merge" | "fail" | Document[];
export type WhenNotMatched = "insert" | "discard" | "fail";

export interface MergeSpec extends Target {
  kind: "$merge";
  /** The fields that identify a result's document in the target (`_id` unless given). */
  on: string[];
  /** The variables a `whenMatched` pipeline sees, as expressions over the result (`new`: the result). */
  let?: Document;
  whenMatched: WhenMatched;
  whenNotMatched: WhenNotMatched;
}

export type WriteStage = OutSpec | MergeSpec;

const wrongType = (field: string, value: unknown, expected: string) =>
  errors.mongo(`BSON field '${field}' is the wrong type '${bsonTypeAlias(value)}', expected type '${expected}'`);

/** `$out`'s target as MongoDB checks it (DocumentSourceOut). */
function outTarget(database: string, collection: string): Target {
  if (collection === "" || namespaceError(database, collection) !== undefined)
    throw errors.mongo(`Invalid $out target namespace, ${database}.${collection}`);
  if (internalDatabases.has(database)) throw errors.mongo(`Can't $out to internal database: ${database}`);
  if (collection.startsWith("system.")) throw errors.mongo(`Can't $out to special collection: ${collection}`);
  return { database, collection };
}

/** `$merge`'s target as MongoDB checks it (DocumentSourceMerge). */
function mergeTarget(database: string, collection: string): Target {
  if (namespaceError(database, collection) !== undefined)
    throw errors.mongo(`Invalid $merge target namespace: '${database}.${collection}'`);
  if (internalDatabases.has(database)) throw errors.mongo(`Cannot $merge to internal database: ${database}`);
  if (collection.startsWith("system.")) throw errors.mongo(`Cannot $merge to special collection: ${collection}`);
  return { database, collection };
}

const internalDatabases = new Set(["admin", "config", "local"]);

/** Refuses the fields of a `{db, coll}` document other than `allowed`, as MongoDB's IDL parser does. */
function onlyFields(field: string, spec: Document, allowed: string[]): void {
  for (const key of keysOf(spec))
    if (!allowed.includes(key)) throw errors.mongo(`BSON field '${field}.${key}' is an unknown field.`);
}

/** `$out`'s specification: a collection of the pipeline's database, or `{db, coll}`. */
export function parseOut(spec: unknown, database: string): OutSpec {
  if (typeof spec === "string") return { kind: "$out", ...outTarget(database, spec) };
  if (!isDocument(spec))
    throw errors.mongo(`$out only supports a string or object argument, but found ${bsonTypeAlias(spec)}`);
  onlyFields("$out", spec, ["db", "coll", "timeseries"]);
  for (const key of ["db", "coll"]) {
    if (spec[key] === undefined) throw errors.mongo(`BSON field '$out.${key}' is missing but a required field`);
    if (typeof spec[key] !== "string") throw wrongType(`$out.${key}`, spec[key], "string");
  }
  if (spec.timeseries !== undefined)
    throw errors.mongo("$out to a time-series collection is not supported by this server");
  return { kind: "$out", ...outTarget(spec.db as string, spec.coll as string) };
}

/** `$merge`'s `into`: a collection of the pipeline's database, or `{db, coll}` (`db` that one unless given). */
function mergeInto(into: unknown, database: string): Target {
  if (typeof into === "string") {
    if (into === "") throw errors.mongo("$merge 'into' field cannot be an empty string");
    return mergeTarget(database, into);
  }
  if (!isDocument(into))
    throw errors.mongo(`$merge 'into' field  must be either a string or an object, but found ${bsonTypeAlias(into)}`);
  onlyFields("into", into, ["db", "coll"]);
  if (typeof into.coll !== "string" || into.coll === "")
    throw errors.mongo("$merge 'into' field must specify a 'coll' that is not empty, null or undefined");
  if (into.db !== undefined && typeof into.db !== "string") throw wrongType("into.db", into.db, "string");
  return mergeTarget((into.db as string | undefined) ?? database, into.coll);
}

const whenMatchedModes = new Set(["replace", "keepExisting", "merge", "fail"]);
const whenNotMatchedModes = new Set(["insert", "discard", "fail"]);

/** The pairs of modes MongoDB runs (its merge strategy descriptors). */
function supported(whenMatched: WhenMatched, whenNotMatched: WhenNotMatched): boolean {
  if (whenMatched === "keepExisting" || whenMatched === "fail") return whenNotMatched === "insert";
  return true;
}

/** `$merge`'s specification: a collection of the pipeline's database, or its options. */
export function parseMerge(spec: unknown, database: string): MergeSpec {
  if (typeof spec === "string")
    return {
      kind: "$merge",
      ...mergeInto(spec, database),
      on: ["_id"],
      whenMatched: "merge",
      whenNotMatched: "insert",
    };
  if (!isDocument(spec))
    throw errors.mongo(`$merge requires a string or object argument, but found ${bsonTypeAlias(spec)}`);
  onlyFields("$merge", spec, ["into", "on", "let", "whenMatched", "whenNotMatched"]);
  if (spec.into === undefined) throw errors.mongo("BSON field '$merge.into' is missing but a required field");
  const whenMatched = spec.whenMatched ?? "merge";
  if (!Array.isArray(whenMatched) && typeof whenMatched !== "string")
    throw errors.mongo(
      `$merge 'whenMatched' field  must be either a string or an array, but found ${bsonTypeAlias(whenMatched)}`,
    );
  if (typeof whenMatched === "string" && !whenMatchedModes.has(whenMatched))
    throw errors.mongo(`Enumeration value '${whenMatched}' for field 'whenMatched' is not a valid value.`);
  const whenNotMatched = spec.whenNotMatched ?? "insert";
  if (typeof whenNotMatched !== "string") throw wrongType("$merge.whenNotMatched", whenNotMatched, "string");
  if (!whenNotMatchedModes.has(whenNotMatched))
    throw errors.mongo(`Enumeration value '${whenNotMatched}' for field 'whenNotMatched' is not a valid value.`);
  if (spec.let !== undefined && !isDocument(spec.let)) throw wrongType("$merge.let", spec.let, "object");
  const place = mergeInto(spec.into, database);
  const on = mergeOn(spec.on);
  const matched = whenMatched as WhenMatched;
  const notMatched = whenNotMatched as WhenNotMatched;
  if (!supported(matched, notMatched))
    throw errors.mongo(
      `Combination of $merge modes 'whenMatched: ${matched}' and 'whenNotMatched: ${notMatched}' is not supported`,
    );
  const lets = spec.let as Document | undefined;
  if (lets !== undefined) {
    if (!Array.isArray(matched)) throw errors.mongo(`Cannot use 'let' variables with 'whenMatched: ${matched}' mode`);
    for (const variable of keysOf(lets)) checkVariableName(variable);
    if (lets.new !== undefined && lets.new !== "$$ROOT")
      throw errors.mongo("'let' may not define a value for the reserved 'new' variable other than '$$ROOT'");
  }
  return {
    kind: "$merge",
    ...place,
    on,
    // (A pipeline's upsert inserts `$$new`, which is there whatever `let` names.)
    ...(lets !== undefined ? { let: notMatched === "insert" ? { new: "$$ROOT", ...lets } : lets } : {}),
    whenMatched: matched,
    whenNotMatched: notMatched,
  };
}

/** `$merge`'s `on`: a field or a list of distinct fields (`_id` when not given). */
function mergeOn(on: unknown): string[] {
  if (on === undefined) return ["_id"];
  if (typeof on === "string") return [on];
  if (!Array.isArray(on))
    throw errors.mongo(
      `$merge 'on' field  must be either a string or an array of strings, but found ${bsonTypeAlias(on)}`,
    );
  const bad = on.find((field) => typeof field !== "string");
  if (bad !== undefined)
    throw errors.mongo(`$merge 'on' array elements must be strings, but found ${bsonTypeAlias(bad)}`);
  if (on.length === 0) throw errors.mongo("If explicitly specifying $merge 'on', must include at least one field");
  const seen = new Set<string>();
  for (const field of on as string[]) {
    if (seen.has(field)) throw errors.mongo(`Found a duplicate field '${field}'`);
    seen.add(field);
  }
  return on as string[];
}

/** The writing stage a pipeline ends with, parsed (undefined: it writes nothing). */
export function writeStageOf(pipeline: Document[], database: string): WriteStage | undefined {
  const last = pipeline.at(-1);
  if (last === undefined) return undefined;
  const [name] = keysOf(last);
  if (name === "$out") return parseOut(last.$out, database);
  if (name === "$merge") return parseMerge(last.$merge, database);
  return undefined;
}

/** A writing stage's specification parsed where MongoDB parses the pipeline (its place checked after: `misplaced`). */
export function checkWriteStage(name: string, spec: unknown, database: string): void {
  if (name === "$out") parseOut(spec, database);
  else parseMerge(spec, database);
}

/** The stages that must come first in their pipeline (`$documents` as MongoDB desugars it). */
const firstOnly = new Set(["$geoNear", "$documents"]);

/**
 * The first stage of a parsed pipeline out of its place, as MongoDB's validateCommon finds it:
 * one that must be first and is not, or a writing stage that is not last; then a writing stage
 * in a `$lookup`'s or `$unionWith`'s sub-pipeline (`within`; a `$facet`'s are refused by the lite
 * parse). Undefined: every stage may be where it is.
 */
export function misplaced(pipeline: unknown[], within: string | undefined): string | undefined {
  let writes: string | undefined;
  for (const [place, stage] of pipeline.entries()) {
    const name = isDocument(stage) ? keysOf(stage)[0] : undefined;
    if (name === undefined) continue;
    if (firstOnly.has(name) && place > 0) return `${name} is only valid as the first stage in a pipeline`;
    if (!writeStages.has(name)) continue;
    if (place !== pipeline.length - 1) return `${name} can only be the final stage in the pipeline`;
    writes = name;
  }
  return writes !== undefined && within !== undefined
    ? `${writes} is not allowed within a ${within}'s sub-pipeline`
    : undefined;
}

/** The values of a result's `on` fields (a dotted field read through embedded documents). */
export function mergeKey(doc: Document, on: string[]): Document {
  const key: Document = {};
  for (const field of on) {
    let value: unknown = doc;
    for (const part of field.split(".")) value = isDocument(value) ? ownField(value, part) : undefined;
    if (Array.isArray(value)) throw errors.mongo(`$merge write error: 'on' field '${field}' is an array`);
    if (value === undefined || value === null)
      throw errors.mongo(`$merge write error: 'on' field '${field}' cannot be missing, null, undefined or an array`);
    key[field] = value;
  }
  return key;
}

/** The query of the target's document a result's key names (a regular expression or operator-like value by `$eq`). */
export function mergeQuery(key: Document): Document {
  const query: Document = {};
  for (const field of keysOf(key)) {
    const value = key[field];
    const literal = isRegexValue(value) || (isDocument(value) && keysOf(value).some((k) => k.startsWith("$")));
    query[field] = literal ? { $eq: value } : value;
  }
  return query;
}

/** The duplicate key error of a write (the service's words, as an insert's). */
export function duplicateKey(namespace: string, index: string, key: Document): string {
  const shown = keysOf(key).map((field) => `${field}: ${shellText(key[field])}`);
  return `Duplicate key error collection: ${namespace} index: ${index} dup key: { ${shown.join(", ")} }`;
}

/** Two of `$out`'s results with one `_id`: met in the temporary collection MongoDB fills. */
export function outDuplicate(target: Target, temporary: string, id: unknown): string {
  return duplicateKey(`${target.database}.${temporary}`, "_id_", { _id: id });
}

/**
 * `whenMatched: "fail"` meeting a document: the duplicate key of the unique index on the `on`
 * fields MongoDB requires (named as MongoDB names an index: `field_1`…; `_id_` for `_id`).
 */
export function mergeDuplicate(spec: MergeSpec, key: Document): string {
  const byId = spec.on.length === 1 && spec.on[0] === "_id";
  const index = byId ? "_id_" : spec.on.map((field) => `${field}_1`).join("_");
  const duplicate = duplicateKey(`${spec.database}.${spec.collection}`, index, key);
  return `$merge with whenMatched: fail found an existing document with the same values for the 'on' fields :: caused by :: ${duplicate}`;
}

/**
 * A result's write refused as MongoDB's `$merge` words it (a duplicate `_id`, a changed `_id`),
 * which the batch goes on past; any other error as it is (it ends the stage).
 */
export function mergeFailure(error: unknown): unknown {
  const message = (error as Error | undefined)?.message ?? "";
  if (message.startsWith("Duplicate key error collection: "))
    return errors.mongo(`$merge failed due to a DuplicateKey error :: caused by :: ${message}`);
  if (
    /^(After applying the update, the \(immutable\) field '_id'|Performing an update on the path '_id' would modify the immutable field '_id')/.test(
      message,
    )
  )
    return errors.mongo(
      `$merge failed to update the matching document, did you attempt to modify the _id or the shard key? :: caused by :: ${message}`,
    );
  return error;
}
