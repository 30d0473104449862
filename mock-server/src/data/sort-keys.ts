/**
 * A document's sort key as MongoDB makes it (its SortKeyGenerator, which generates index keys):
 * the fields of a sort pattern are walked together, and where they meet an array each element
 * gives one compound key — the fields under that array taking the element's values, the others
 * their one value — and the document sorts by the least of its keys under the pattern (its
 * directions included). So `{"a.c": 1, "a.b": 1}` sorts `{a: [{b: 4, c: 1}, {b: 1, c: 2}]}` by
 * (1, 4), the values of one element, not by (1, 1).
 *
 * Along a path: a missing field, or a value that is neither a document nor an array before the
 * path's end, gives null; an array at the path's end gives each of its elements (an empty one:
 * undefined, below null), one met before the end its document elements' values (null for any
 * other element, and for an empty array); an index after an array names one element (an array
 * found that way gives its elements and itself). Two fields meeting different arrays are MongoDB's
 * "cannot sort with keys that are parallel arrays".
 */
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { compareBson } from "./bson-order.ts";
import { isDocument } from "./documents.ts";
import { ownField } from "./own-fields.ts";
import { step } from "./query-limits.ts";

const digits = /^\d+$/;

/** Where one field's walk stands: done (its value), or at an array it must expand. */
type Walk =
  | { done: true; value: unknown }
  | { done: false; array: unknown[]; rest: readonly string[]; alsoWhole: boolean };

/** Walks `parts` from `node` (a document) to a value, or to the first array met. */
function walk(node: unknown, parts: readonly string[]): Walk {
  let value = node;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    // Whether this name is an index into an array (the element it names is not expanded whole).
    const byIndex = Array.isArray(value) && digits.test(part);
    if (isDocument(value)) value = ownField(value, part);
    else if (byIndex) value = (value as unknown[])[Number(part)];
    else return { done: true, value: null };
    if (value === undefined) return { done: true, value: null };
    if (Array.isArray(value) && !(i < parts.length - 1 && digits.test(parts[i + 1]!)))
      return { done: false, array: value, rest: parts.slice(i + 1), alsoWhole: byIndex && i === parts.length - 1 };
  }
  return { done: true, value };
}

/** Compares two compound keys under the sort's directions. */
export function compareKeys(a: readonly unknown[], b: readonly unknown[], directions: readonly (1 | -1)[]): number {
  for (let i = 0; i < a.length; i++) {
    const order = compareBson(a[i], b[i]);
    if (order !== 0) return order * directions[i]!;
  }
  return 0;
}

/**
 * The least compound key of `doc` for the sort's fields (`paths`, split) under `directions`:
 * each entry the value of one field (undefined for an empty array at a path's end).
 */
export function sortKeyOf(
  doc: unknown,
  paths: readonly (readonly string[])[],
  directions: readonly (1 | -1)[],
): unknown[] {
  let best: unknown[] | undefined;
  const emit = (key: unknown[]) => {
    step();
    if (best === undefined || compareKeys(key, best, directions) < 0) best = [...key];
  };
  const key: unknown[] = new Array(paths.length);
  const generate = (walks: (Walk | null)[]): void => {
    let array: unknown[] | undefined;
    for (let f = 0; f < walks.length; f++) {
      const w = walks[f];
      if (!w) continue;
      if (w.done) key[f] = w.value;
      else if (array === undefined) array = w.array;
      else if (array !== w.array) throw errors.mongo("cannot sort with keys that are parallel arrays");
    }
    if (array === undefined) {
      emit(key);
      return;
    }
    const expanding = walks.map((w) => (w !== null && !w.done ? w : null));
    if (array.length === 0) {
      for (let f = 0; f < walks.length; f++) {
        const w = expanding[f];
        if (w) key[f] = w.rest.length === 0 ? undefined : null;
      }
      emit(key);
      return;
    }
    for (const element of array) {
      generate(
        walks.map((_walk, f) => {
          const at = expanding[f];
          if (!at) return null;
          if (at.rest.length === 0) return { done: true, value: element };
          return isDocument(element) ? walk(element, at.rest) : { done: true, value: null };
        }),
      );
    }
    // An array an index named (`a.0` reaching `[1]`): itself too, when it is the only one met.
    const expanders = expanding.flatMap((w, f) => (w ? [f] : []));
    if (expanders.length === 1 && expanding[expanders[0]!]!.alsoWhole) {
      key[expanders[0]!] = array;
      emit(key);
    }
  };
  generate(paths.map((parts) => walk(doc, parts)));
  return best!;
}
