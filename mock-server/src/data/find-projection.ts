/**
 * A find projection's `$slice`s and its type, as MongoDB's projection parser and executor settle
 * them (projection_parser.cpp, projection_executor_utils.cpp). A find `$slice` or `$elemMatch`
 * neither includes nor excludes: the projection's other fields decide, else `$slice` makes an
 * exclusion (unless `_id: 1`) and `$elemMatch` an inclusion. Each slice is applied to the document
 * first, at any depth and through arrays of documents, then the path is included (an inclusion)
 * or left as it is (an exclusion), so `{comments: {$slice: 5}, body: 0}` and
 * `{"a.b": {$slice: [1, 1]}}` over `a: [{b: […]}]` answer as MongoDB does.
 */
import { type Document, isDocument } from "./documents.ts";
import { isDecimal, isLong, isNumeric } from "./numeric-operators.ts";
import { keysOf } from "./wide-keys.ts";

export type ProjectionType = "inclusion" | "exclusion";

const operatorOf = (value: unknown): string | undefined => {
  if (!isDocument(value)) return undefined;
  const first = keysOf(value)[0];
  return first?.startsWith("$") ? first : undefined;
};

/** Whether a value is a projection's flag: a boolean or a number of any of MongoDB's types. */
const isFlag = (value: unknown): boolean => typeof value === "boolean" || isNumeric(value);

/** A flag's truth as MongoDB's `trueValue()` reads it: a zero of any type is false, NaN true. */
const flagTruth = (value: unknown): boolean => {
  if (typeof value === "boolean") return value;
  if (typeof value === "number") return value !== 0;
  return Number(String(value)) !== 0;
};

/**
 * The projection with its Int64 and Decimal128 flags written as 1 or 0 and a NaN flag as 1 (MongoDB
 * reads every number as a flag, `{a: NumberDecimal("0")}` excluding `a`); the same object when it
 * holds none.
 */
export function withNumericFlags(spec: Document): Document {
  let out: Document | undefined;
  for (const key of keysOf(spec)) {
    const value = spec[key];
    let next = value;
    if (isLong(value) || isDecimal(value) || Number.isNaN(value)) next = flagTruth(value) ? 1 : 0;
    else if (isDocument(value) && operatorOf(value) === undefined) next = withNumericFlags(value);
    if (next === value) continue;
    out ??= { ...spec };
    out[key] = next;
  }
  return out ?? spec;
}

const isFindSlice = (value: unknown): boolean => {
  if (operatorOf(value) !== "$slice") return false;
  const slice = (value as Document).$slice;
  return isNumeric(slice) || (Array.isArray(slice) && slice.length === 2);
};

function holdsSlice(spec: Document): boolean {
  return keysOf(spec).some((key) => {
    const value = spec[key];
    return isFindSlice(value) || (isDocument(value) && operatorOf(value) === undefined && holdsSlice(value));
  });
}

/**
 * The projection with every sub-projection that holds a find `$slice` written as dotted paths
 * (`{a: {b: {$slice: 1}, c: 0}}` as `{"a.b": {$slice: 1}, "a.c": 0}`); the same object otherwise.
 */
export function withSlicesDotted(spec: Document, prefix = ""): Document {
  if (prefix === "" && !holdsSlice(spec)) return spec;
  const out: Document = {};
  for (const key of keysOf(spec)) {
    const value = spec[key];
    const path = prefix + key;
    if (isDocument(value) && operatorOf(value) === undefined && holdsSlice(value))
      Object.assign(out, withSlicesDotted(value, `${path}.`));
    else out[path] = value;
  }
  return out;
}

/** The projection's type, as MongoDB's parser settles it (`computeProjectionType`). */
export function findProjectionType(spec: Document): ProjectionType {
  let slice = false;
  let elemMatch = false;
  let meta = false;
  let idIncluded = false;
  for (const key of keysOf(spec)) {
    const value = spec[key];
    if (key === "_id" && isFlag(value)) {
      idIncluded = flagTruth(value);
      continue;
    }
    const operator = operatorOf(value);
    if (operator === "$slice" && isFindSlice(value)) slice = true;
    else if (operator === "$elemMatch") elemMatch = true;
    else if (operator === "$meta") meta = true;
    else if (operator !== undefined) return "inclusion";
    else if (isDocument(value)) return findProjectionType(value) === "inclusion" ? "inclusion" : "exclusion";
    else if (isFlag(value)) return flagTruth(value) ? "inclusion" : "exclusion";
    // (A literal, or a positional path: an inclusion.)
    else return "inclusion";
  }
  if (slice || meta) return idIncluded ? "inclusion" : "exclusion";
  if (elemMatch) return "inclusion";
  return idIncluded ? "inclusion" : "exclusion";
}

/** A number as MongoDB's `safeNumberInt` reads it: truncated, within 32 bits, NaN as 0. */
function int32(value: unknown): number {
  const n = Number(isNumeric(value) && typeof value !== "number" ? String(value) : value);
  if (Number.isNaN(n)) return 0;
  return Math.trunc(Math.min(2 ** 31 - 1, Math.max(-(2 ** 31), n)));
}

/** An array cut by a find `$slice` of `n` (`[skip, limit]`). */
function slicedArray(array: unknown[], slice: unknown): unknown[] {
  if (!Array.isArray(slice)) {
    const n = int32(slice);
    return n >= 0 ? array.slice(0, n) : array.slice(Math.max(0, array.length + n));
  }
  const skip = int32(slice[0]);
  const limit = int32(slice[1]);
  const start = skip >= 0 ? skip : Math.max(0, array.length + skip);
  return array.slice(start, start + limit);
}

/**
 * `value` with the array at `path` (from `at`) sliced, through documents and the documents of
 * arrays; copied where it changes.
 */
function slicedAt(value: unknown, path: string[], at: number, slice: unknown): unknown {
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    value.forEach((element, i) => {
      // (Only one level deep: an array in the array is left as it is.)
      const next = isDocument(element) ? slicedAt(element, path, at, slice) : element;
      if (next === element) return;
      out ??= value.slice();
      out[i] = next;
    });
    return out ?? value;
  }
  if (!isDocument(value)) return value;
  const key = path[at]!;
  if (!Object.hasOwn(value, key)) return value;
  const child = value[key];
  const next =
    at === path.length - 1
      ? Array.isArray(child)
        ? slicedArray(child, slice)
        : child
      : slicedAt(child, path, at + 1, slice);
  return next === child ? value : { ...value, [key]: next };
}

/**
 * Each document with the projection's find `$slice`s applied, and the projection with each slice's
 * path included (an inclusion) or left out (an exclusion: the document keeps it as sliced).
 */
export function sliceProjection(
  docs: Document[],
  projection: Document,
  type: ProjectionType,
): { docs: Document[]; projection: Document } {
  const slices = keysOf(projection).filter((key) => isFindSlice(projection[key]));
  if (slices.length === 0) return { docs, projection };
  const rest = appliedAway(projection, (key) => slices.includes(key), type);
  const cut = docs.map((doc) => {
    let out: unknown = doc;
    for (const key of slices) out = slicedAt(out, key.split("."), 0, (projection[key] as Document).$slice);
    return out as Document;
  });
  return { docs: cut, projection: rest };
}

/**
 * A projection without the find operators already applied to the documents (`applied`): each
 * such path included (an inclusion) or left out (an exclusion: the documents keep it as applied).
 */
export function appliedAway(projection: Document, applied: (key: string) => boolean, type: ProjectionType): Document {
  const rest: Document = {};
  for (const key of keysOf(projection)) {
    if (!applied(key)) rest[key] = projection[key];
    else if (type === "inclusion") rest[key] = 1;
  }
  return rest;
}
