/**
 * The values a query's path reaches in a document, as MongoDB's matcher walks it (its
 * BSONElementIterator), for the query operators that compare what they reach (`$eq` … `$lte`,
 * `$in`, `$nin`, `$all`, `$type`, `$exists`, regular expressions, `$elemMatch`):
 *
 * - along documents, field by field; a missing field, or a value that is neither a document nor
 *   an array before the path's end, reaches **missing** (which compares as null);
 * - through an array met before the path's end, the rest of the path is walked in each element
 *   that is a document, and — where the next name is an index — in the element it names too;
 *   elements that are neither (numbers, strings, nested arrays not named by index) reach nothing;
 * - at the path's end an array reaches each of its elements and then itself (a nested array as a
 *   whole, not its elements).
 *
 * So `{"a.b": null}` matches `{a: [{b: 1}, {c: 2}]}` (the second element has no `b`) but not
 * `{a: [1, 2]}`, `{a: []}` nor `{a: [[{b: 7}]]}`; mingo's paths skipped the missing field and
 * reached into nested arrays.
 */
import { isDocument } from "./documents.ts";
import { ownField } from "./own-fields.ts";
import { step } from "./query-limits.ts";

/** Reaches a value: answers true to stop the walk (the operator has its answer). */
export type Visit = (value: unknown) => boolean;

/**
 * Marks a document made to test one value (`$elemMatch` of operators): its field reaches the value
 * alone, an array as a whole — MongoDB tests each condition on the element itself.
 */
export const wholeValues: unique symbol = Symbol("wholeValues");

/** `{[field]: value}`, whose field reaches the value as a whole (`wholeValues`). */
export function valueHolder(field: string, value: unknown): Record<string, unknown> {
  return Object.defineProperty({ [field]: value }, wholeValues, { value: true });
}

const digits = /^\d+$/;

/**
 * Whether `visit` answers true for some value `parts` reaches in `root` (missing: undefined).
 * `leafElements` false: a path ending at an array reaches the array alone (`$elemMatch`, `$size`).
 */
export function somePathValue(root: unknown, parts: readonly string[], visit: Visit, leafElements = true): boolean {
  // A matcher's root is a document, or (an `$elemMatch` of documents) an array element that is an
  // array, whose fields are its indexes.
  if (leafElements && (root as { [wholeValues]?: boolean } | null)?.[wholeValues] === true) leafElements = false;
  let value: unknown = root;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (isDocument(value)) value = ownField(value, part);
    else if (i === 0 && Array.isArray(value)) value = digits.test(part) ? value[Number(part)] : undefined;
    else return visit(undefined);
    if (value === undefined) return visit(undefined);
    if (Array.isArray(value) && i < parts.length - 1) return inArray(value, parts.slice(i + 1), visit, leafElements);
  }
  return atEnd(value, visit, leafElements);
}

function atEnd(value: unknown, visit: Visit, leafElements: boolean): boolean {
  if (leafElements && Array.isArray(value)) {
    for (const element of value) {
      step();
      if (visit(element)) return true;
    }
  }
  return visit(value);
}

/** The rest of a path walked through the elements of an array it met. */
function inArray(array: unknown[], rest: readonly string[], visit: Visit, leafElements: boolean): boolean {
  const index = digits.test(rest[0]!) ? rest[0] : null;
  for (let i = 0; i < array.length; i++) {
    step();
    const element = array[i];
    if (isDocument(element) && somePathValue(element, rest, visit, leafElements)) return true;
    if (index !== String(i)) continue;
    // The path names this element by its index.
    if (rest.length === 1) {
      if (visit(element)) return true;
    } else if (isDocument(element)) {
      if (somePathValue(element, rest.slice(1), visit, leafElements)) return true;
    } else if (Array.isArray(element) && inArray(element, rest.slice(1), visit, leafElements)) return true;
  }
  return false;
}
