/**
 * `$densify` as MongoDB runs it (document_source_densify.cpp; its JavaScript model in the jstests,
 * densify_in_js.js): the documents sorted by their partition and the field, then, in each
 * partition, a document made for every step of the range the partition lacks — `full`: from the
 * smallest value of all partitions to the largest, `partition`: the partition's own, `[lower,
 * upper]`: from `lower` up to (not including) `upper`, also past the last document and over no
 * documents at all. Steps are counted from the range's start whatever values lie between; a
 * document with a null or missing field passes through. Dates step by calendar units as
 * `$dateAdd` adds them (January 31 plus a month is February 29), numbers of every type (a
 * Decimal128 step or value makes Decimal128s). At most 500,000 documents are made, as MongoDB's
 * `internalQueryMaxAllowedDensifyDocs`. The specification is checked with MongoDB's texts.
 *
 * mingo's refused numbers as partition values, filled no partition past its last document for
 * `[lower, upper]` bounds, nothing over an empty input, stepped months by JavaScript's date
 * arithmetic (January 31 plus a month was March 2), refused Decimal128 values, wrote a dotted
 * field as one flat key and, without bounds or with a negative step, generated without end.
 */
import { Lazy } from "mingo/lazy";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { bsonTypeAlias, compareBson, equalityKey } from "./bson-order.ts";
import { utc } from "./calendar.ts";
import { addUnits, isUnit, type Unit } from "./date-operators.ts";
import { add, toDecimal128 } from "./decimal.ts";
import { type Document, isDocument } from "./documents.ts";
import { decOf, doubleOf, isDecimal, isNumeric } from "./numeric-operators.ts";
import { ownField, setOwnField } from "./own-fields.ts";
import { step as budgetStep, charge } from "./query-limits.ts";
import { keysOf } from "./wide-keys.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

/** MongoDB's `internalQueryMaxAllowedDensifyDocs`. */
const maxGenerated = 500_000;

const typeMismatch = (path: string, value: unknown, expected: string) =>
  errors.mongo(`BSON field '$densify.${path}' is the wrong type '${bsonTypeAlias(value)}', expected ${expected}`);
const missing = (path: string) => errors.mongo(`BSON field '$densify.${path}' is missing but a required field`);
const dollarPath = "FieldPath field names may not start with '$'. Consider using $getField or $setField.";

/** A `$densify` specification refused as MongoDB's parser refuses it, with its texts. */
export function checkDensify(spec: unknown): void {
  if (!isDocument(spec))
    throw errors.mongo(`The $densify stage specification must be an object, found ${bsonTypeAlias(spec)}`);
  for (const key of keysOf(spec))
    if (!["field", "partitionByFields", "range"].includes(key))
      throw errors.mongo(`BSON field '$densify.${key}' is an unknown field.`);
  if (spec.field === undefined) throw missing("field");
  if (typeof spec.field !== "string") throw typeMismatch("field", spec.field, "type 'string'");
  if (spec.field.startsWith("$")) throw errors.mongo(dollarPath);
  const partitions = spec.partitionByFields ?? [];
  if (!Array.isArray(partitions)) throw typeMismatch("partitionByFields", partitions, "type 'array'");
  for (const [i, partition] of partitions.entries()) {
    if (typeof partition !== "string") throw typeMismatch(`partitionByFields.${i}`, partition, "type 'string'");
    if (partition.startsWith("$")) throw errors.mongo(dollarPath);
    if (partition === spec.field || partition.startsWith(`${spec.field}.`))
      throw errors.mongo("BSON field '$densify.partitionByFields' contains the field that is being densified");
    if (spec.field.startsWith(`${partition}.`))
      throw errors.mongo("The field that is being densified contains the BSON field '$densify.partitionByFields'");
  }
  const range = spec.range;
  if (range === undefined) throw missing("range");
  if (!isDocument(range)) throw typeMismatch("range", range, "type 'object'");
  for (const key of keysOf(range))
    if (!["step", "bounds", "unit"].includes(key))
      throw errors.mongo(`BSON field '$densify.range.${key}' is an unknown field.`);
  if (range.step === undefined) throw missing("range.step");
  if (!isNumeric(range.step)) throw typeMismatch("range.step", range.step, "types '[int, decimal, double, long]'");
  if (range.bounds === undefined) throw missing("range.bounds");
  if (range.unit !== undefined) {
    if (typeof range.unit !== "string") throw typeMismatch("range.unit", range.unit, "type 'string'");
    if (!isUnit(range.unit)) throw errors.mongo(`unknown time unit value: ${range.unit}`);
  }
  if (!(doubleOf(range.step) > 0))
    throw errors.mongo("the step parameter in a range statement must be a strictly positive numeric value");
  const { bounds } = range;
  if (typeof bounds === "string") {
    if (bounds !== "full" && bounds !== "partition")
      throw errors.mongo(
        "the bounds in a range statement must be the string 'full', 'partition', or an ascending array of two numbers or two dates",
      );
    if (bounds === "partition" && partitions.length === 0)
      throw errors.mongo(
        "one may not specify the bounds as 'partition' without specifying a non-empty array of partitionByFields. You may have meant to specify 'full' bounds.",
      );
  } else if (Array.isArray(bounds)) {
    if (bounds.length !== 2) throw errors.mongo("a bounding array in a range statement must have exactly two elements");
    const [lower, upper] = bounds;
    if (isNumeric(lower) && isNumeric(upper)) {
      if (range.unit !== undefined) throw errors.mongo("numeric bounds may not have unit parameter");
    } else if (lower instanceof Date && upper instanceof Date) {
      if (range.unit === undefined) throw errors.mongo("A date bounding array must have a unit");
    } else if (lower instanceof Date || upper instanceof Date) {
      if (isNumeric(lower) || isNumeric(upper))
        throw errors.mongo("a bounding array must contain either both dates or both numeric types");
      throw errors.mongo("a bounding array must be an ascending array of either two dates or two numbers");
    } else throw errors.mongo("a bounding array must be an ascending array of either two dates or two numbers");
    if (compareBson(lower, upper) > 0)
      throw errors.mongo(
        "the bounds in a range statement must be the string 'full', 'partition', or an ascending array of two numbers or two dates",
      );
  } else
    throw errors.mongo(
      "the bounds in a range statement must be the string 'full', 'partition', or an ascending array of two numbers or two dates",
    );
  if (range.unit !== undefined && !Number.isInteger(doubleOf(range.step)))
    throw errors.mongo("The step parameter in a range satement must be a whole number when densifying a date range");
}

/** The value at a dotted path, through documents only (an array is the value). */
function valueAt(doc: unknown, parts: string[]): unknown {
  let value = doc;
  for (const part of parts) {
    if (!isDocument(value)) return undefined;
    value = ownField(value, part);
  }
  return value;
}

/** `doc` with `value` at a dotted path, sub-documents made as they are needed. */
function setAt(doc: Document, parts: string[], value: unknown): void {
  let at = doc;
  for (const part of parts.slice(0, -1)) {
    if (!isDocument(ownField(at, part))) setOwnField(at, part, {});
    at = ownField(at, part) as Document;
  }
  setOwnField(at, parts[parts.length - 1]!, value);
}

export const densifyStage: AnyFn = (collection, expr) => {
  checkDensify(expr);
  const spec = expr as Document;
  const range = spec.range as Document;
  const fieldParts = (spec.field as string).split(".");
  const partitionPaths = ((spec.partitionByFields ?? []) as string[]).map((path) => path.split("."));
  const unit = range.unit as Unit | undefined;
  const stepBy = range.step;
  const decimal = isDecimal(stepBy) || (Array.isArray(range.bounds) && range.bounds.some(isDecimal));
  const next = (value: unknown): unknown => {
    if (value instanceof Date) return new Date(addUnits(value.getTime(), unit!, doubleOf(stepBy), utc));
    if (decimal || isDecimal(value)) return toDecimal128(add(decOf(value), decOf(stepBy)));
    return doubleOf(value) + doubleOf(stepBy);
  };
  return (collection as { transform(f: (docs: unknown[]) => unknown): unknown }).transform((input) => {
    const docs = input as Document[];
    const densified = (doc: Document): unknown => {
      const value = valueAt(doc, fieldParts);
      if (value === null || value === undefined) return null;
      if (!isNumeric(value) && !(value instanceof Date))
        throw errors.mongo("Densify field type must be numeric or a date");
      if (unit !== undefined && !(value instanceof Date))
        throw errors.mongo("Encountered numeric densify value in collection when step has a date unit.");
      if (unit === undefined && value instanceof Date)
        throw errors.mongo("Encountered date densify value in collection when step does not have a date unit.");
      return value;
    };
    const entries = docs.map((doc) => ({
      doc,
      partition: partitionPaths.map((path) => valueAt(doc, path)),
      value: densified(doc),
    }));
    // Sorted as MongoDB's $sort of the partition fields and the field (null and missing first).
    entries.sort((a, b) => {
      for (let i = 0; i < a.partition.length; i++) {
        const order = compareBson(a.partition[i] ?? null, b.partition[i] ?? null);
        if (order !== 0) return order;
      }
      return compareBson(a.value, b.value);
    });
    const partitions = new Map<string, typeof entries>();
    for (const entry of entries) {
      const key = entry.partition.map((value) => equalityKey(value ?? null)).join("\u0000");
      const list = partitions.get(key);
      if (list) list.push(entry);
      else partitions.set(key, [entry]);
    }
    const valued = entries.filter((entry) => entry.value !== null);
    const bounds = range.bounds;
    // An empty input has one partition, of no documents, that explicit bounds fill.
    if (partitions.size === 0 && Array.isArray(bounds) && partitionPaths.length === 0) partitions.set("", []);
    let made = 0;
    const out: Document[] = [];
    for (const list of partitions.values()) {
      const own = list.filter((entry) => entry.value !== null);
      let start: unknown;
      let end: unknown;
      let inclusive = true;
      if (Array.isArray(bounds)) [start, end, inclusive] = [bounds[0], bounds[1], false];
      else if (bounds === "full") [start, end] = [valued[0]?.value, valued[valued.length - 1]?.value];
      else [start, end] = [own[0]?.value, own[own.length - 1]?.value];
      const generated = (value: unknown): Document => {
        if (++made > maxGenerated)
          throw errors.mongo(
            `Generated ${made} documents in $densify, which is over the limit of ${maxGenerated}. Increase the 'internalQueryMaxAllowedDensifyDocs' parameter to allow more generated documents`,
          );
        // (Counted as it is made: the documents are all made before the stage answers.)
        budgetStep();
        charge(64, "$densify");
        const doc: Document = {};
        setAt(doc, fieldParts, value);
        partitionPaths.forEach((path, i) => {
          const value = list[0]?.partition[i];
          if (value !== undefined) setAt(doc, path, value);
        });
        return doc;
      };
      const within = (value: unknown) => {
        const order = compareBson(value, end);
        return order < 0 || (inclusive && order === 0);
      };
      let grid = start;
      for (const entry of list) {
        if (entry.value !== null && grid !== undefined) {
          while (within(grid) && compareBson(grid, entry.value) < 0) {
            out.push(generated(grid));
            grid = next(grid);
          }
          if (compareBson(grid, entry.value) === 0) grid = next(grid);
        }
        out.push(entry.doc);
      }
      if (grid !== undefined)
        while (within(grid)) {
          out.push(generated(grid));
          grid = next(grid);
        }
    }
    return Lazy(out);
  });
};
