/**
 * The geospatial query operators and stage over geo.ts's locations and measures
 * (docs/decisions/0048-geospatial-queries.md): `$geoWithin` and `$geoIntersects` wherever queries
 * run; `$near`/`$nearSphere`, which only a find takes (`takeNear` lifts them out of its query and
 * `byNearness` orders its matches); and the `$geoNear` stage.
 */
import { Lazy } from "mingo/lazy";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { conditionsPerStep } from "../store/exact-query.ts";
import { withValueAt } from "./add-fields.ts";
import { type Document, isDocument } from "./documents.ts";
import {
  distanceOf,
  geoJson,
  intersects,
  locationsOf,
  type Nearness,
  nearnessOf,
  weighShape,
  withinBounds,
  withinShape,
} from "./geo.ts";
import { somePathValue } from "./path-walk.ts";
import { steps } from "./query-limits.ts";
import { finish, inTurns } from "./turns.ts";
import { keysOf } from "./wide-keys.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

/** `$geoWithin`: a location the path reaches lies within the shape (geo.ts). */
export function geoWithinOperator(selector: string, operand: unknown): (doc: unknown) => boolean {
  const test = withinShape(operand);
  const parts = selector.split(".");
  return (doc) => somePathValue(doc, parts, (value) => locationsOf(value).some(test), false);
}

/** `$geoIntersects`: a location the path reaches shares a point with the geometry. */
export function geoIntersectsOperator(selector: string, operand: unknown): (doc: unknown) => boolean {
  const geometry = isDocument(operand) ? geoJson(operand.$geometry) : null;
  if (!geometry) throw errors.mongo("$geoIntersects not an object with a $geometry");
  weighShape(geometry, "$geoIntersects");
  const parts = selector.split(".");
  return (doc) =>
    somePathValue(
      doc,
      parts,
      (value) => locationsOf(value).some((located) => intersects(located.geometry, geometry)),
      false,
    );
}

/** `$near` / `$nearSphere` where no find orders by them (`find` takes them out first). */
export function nearElsewhere(): never {
  throw errors.mongo("$geoNear, $near, and $nearSphere are not allowed in this context");
}

const nearOperators = ["$near", "$nearSphere"] as const;

/** A find's `$near`/`$nearSphere` condition (top level, or in a top-level `$and`), taken out of its query. */
export interface NearQuery {
  rest: Document;
  field: string;
  nearness: Nearness;
}

function nearOf(condition: unknown): "$near" | "$nearSphere" | undefined {
  if (!isDocument(condition)) return undefined;
  return nearOperators.find((op) => op in condition);
}

/**
 * Whether a query holds a `$near`/`$nearSphere` condition, at its top level or in a top-level
 * `$and`: a look at each field's condition, nothing copied, yielding between slices of conditions
 * (a query of 200,000 conditions is looked at on the main thread).
 */
function* holdsNearSteps(query: Document): Generator<void, boolean> {
  let looked = 0;
  for (const key of keysOf(query)) {
    if (++looked % conditionsPerStep === 0) yield;
    const value = query[key];
    if (key === "$and") {
      if (Array.isArray(value))
        for (const clause of value) if (isDocument(clause) && (yield* holdsNearSteps(clause))) return true;
    } else if (!key.startsWith("$") && nearOf(value) !== undefined) return true;
  }
  return false;
}

const holdsNear = (query: Document): boolean => finish(holdsNearSteps(query));

/** The query without its one geo-near condition, and that condition; undefined when it has none. */
export function takeNear(query: Document): NearQuery | undefined {
  if (!holdsNear(query)) return undefined;
  let found: NearQuery | undefined;
  const without = (q: Document): Document => {
    const out: Document = {};
    for (const key of keysOf(q)) {
      const value = q[key];
      const operator = key.startsWith("$") ? undefined : nearOf(value);
      if (operator) {
        if (found) throw errors.mongo("Too many geoNear expressions");
        const condition = value as Document;
        found = { rest: {}, field: key, nearness: nearnessOf(operator, condition) };
        const others: Document = {};
        for (const op of keysOf(condition))
          if (op !== operator && op !== "$maxDistance" && op !== "$minDistance") others[op] = condition[op];
        if (keysOf(others).length > 0) out[key] = others;
      } else if (key === "$and" && Array.isArray(value)) {
        out.$and = value
          .map((q) => (isDocument(q) ? without(q) : q))
          .filter((q) => !isDocument(q) || keysOf(q).length > 0);
        if ((out.$and as unknown[]).length === 0) delete out.$and;
      } else out[key] = value;
    }
    return out;
  };
  const rest = without(query);
  if (found) found.rest = rest;
  return found;
}

/**
 * Whether a find's query holds a `$near` or `$nearSphere` (it then reads every candidate, to order
 * them), found between other requests' turns.
 */
export function hasNear(query: Document): Promise<boolean> {
  return inTurns(holdsNearSteps(query));
}

/** The documents nearest first (within the condition's bounds), as a geo-near find answers them. */
export function byNearness(docs: Document[], near: NearQuery): Document[] {
  const parts = near.field.split(".");
  const placed: { doc: Document; distance: number }[] = [];
  for (const doc of docs) {
    let distance = Number.POSITIVE_INFINITY;
    somePathValue(
      doc,
      parts,
      (value) => {
        for (const located of locationsOf(value)) distance = Math.min(distance, distanceOf(located, near.nearness));
        return false;
      },
      false,
    );
    if (Number.isFinite(distance) && withinBounds(distance, near.nearness)) placed.push({ doc, distance });
  }
  steps(placed.length);
  return placed.sort((a, b) => a.distance - b.distance).map((p) => p.doc);
}

/** The top-level fields of `docs` that hold a location: where a `$geoNear` without `key` looks. */
function locationFields(docs: unknown[]): string[] {
  const fields = new Set<string>();
  for (const doc of docs) {
    if (!isDocument(doc)) continue;
    for (const key of keysOf(doc)) if (key !== "_id" && locationsOf(doc[key]).length > 0) fields.add(key);
  }
  return [...fields];
}

const geoNearOptions = new Set([
  "near",
  "distanceField",
  "spherical",
  "maxDistance",
  "minDistance",
  "query",
  "includeLocs",
  "distanceMultiplier",
  "key",
]);

/**
 * `$geoNear`: the documents within the distances, nearest first, each with its distance (and
 * location) written in. MongoDB measures from the field of the collection's geospatial index;
 * no index is declared here, so the stage takes `key`, or the one top-level field that holds
 * locations.
 */
export const geoNearStage =
  (compileQuery: (query: Document) => { test(doc: unknown): boolean }): AnyFn =>
  (collection, expr) => {
    if (!isDocument(expr)) throw errors.mongo("$geoNear must take an object as an argument");
    for (const key of keysOf(expr))
      if (!geoNearOptions.has(key)) throw errors.mongo(`Unknown argument to $geoNear: ${key}`);
    if (expr.near === undefined) throw errors.mongo("$geoNear requires a 'near' option as an Array");
    if (typeof expr.distanceField !== "string")
      throw errors.mongo("$geoNear requires a 'distanceField' option as a String");
    const geoJsonNear = isDocument(expr.near) && "type" in expr.near;
    // GeoJSON: meters on the sphere; a legacy pair: radians with `spherical`, else planar units.
    const operator = expr.spherical === true || geoJsonNear ? "$nearSphere" : "$near";
    const bounds = { $maxDistance: expr.maxDistance, $minDistance: expr.minDistance };
    const nearness = nearnessOf(
      operator,
      geoJsonNear ? { [operator]: { $geometry: expr.near, ...bounds } } : { [operator]: expr.near, ...bounds },
    );
    const multiplier = expr.distanceMultiplier === undefined ? 1 : Number(expr.distanceMultiplier);
    const query = isDocument(expr.query) ? compileQuery(expr.query) : null;
    const distanceParts = expr.distanceField.split(".");
    const locsParts = typeof expr.includeLocs === "string" ? expr.includeLocs.split(".") : null;
    return collection.transform((docs: unknown[]) => {
      let field = typeof expr.key === "string" ? expr.key : undefined;
      if (field === undefined) {
        const fields = locationFields(docs);
        if (fields.length === 0) throw errors.mongo("$geoNear requires a 2d or 2dsphere index, but none were found");
        if (fields.length > 1)
          throw errors.mongo(
            `There is more than one 2d or 2dsphere index; unsure which to use for $geoNear (fields: ${fields.join(", ")}); name one with 'key'`,
          );
        field = fields[0]!;
      }
      const parts = field.split(".");
      const placed: { doc: Document; distance: number; location: unknown }[] = [];
      for (const doc of docs as Document[]) {
        if (query && !query.test(doc)) continue;
        let best = Number.POSITIVE_INFINITY;
        let location: unknown;
        somePathValue(
          doc,
          parts,
          (value) => {
            for (const located of locationsOf(value)) {
              const d = distanceOf(located, nearness);
              if (d < best) {
                best = d;
                location = located.source;
              }
            }
            return false;
          },
          false,
        );
        if (Number.isFinite(best) && withinBounds(best, nearness)) placed.push({ doc, distance: best, location });
      }
      steps(placed.length);
      placed.sort((a, b) => a.distance - b.distance);
      return Lazy(
        placed.map(({ doc, distance, location }) => {
          let out = withValueAt(doc, distanceParts, distance * multiplier) as Document;
          if (locsParts) out = withValueAt(out, locsParts, location) as Document;
          return out;
        }),
      );
    });
  };
