/**
 * What an update's pipeline changed, as MongoDB works it out (doc_diff's computeDiff over the
 * document before and after): the paths set or removed, down through embedded documents and
 * arrays whose type stayed, and the arrays cut shorter. MongoDB writes such an update as this
 * delta (a change stream's `update` event lists it), or, when the delta would be no smaller than
 * the document, as a replacement (a `replace` event); a document equal to the one before, field
 * order and types included, is not written at all (not modified, no event).
 *
 * The sizes compared are BSON sizes: the document after, and the delta as MongoDB's delta document
 * holds it (its sections of updates, inserts and deletes, sub-deltas, array markers), counted
 * element by element; a delta within a few bytes of the document's size may be written the other
 * way here than MongoDB writes it.
 */
import { type Document, isDocument, toEJSONText } from "./documents.ts";
import { logicalSize } from "./query-limits.ts";
import { keysOf } from "./wide-keys.ts";

export interface Delta {
  /** The paths set (their values are the document's after) or removed (absent after). */
  paths: string[];
  /** The arrays made shorter, with their new lengths. */
  truncated: { field: string; newSize: number }[];
}

/** The delta from `before` to `after`; `null` when MongoDB would write `after` whole. */
export function pipelineDelta(before: Document, after: Document): Delta | null {
  const delta: Delta = { paths: [], truncated: [] };
  const size = logicalSize(after);
  const bytes = documentDelta(before, after, "", delta, size);
  if (bytes === null || bytes >= size) return null;
  return delta;
}

/** An element's size: its type, its name and its value. */
const elementSize = (name: string, value: unknown) => 2 + Buffer.byteLength(name) + logicalSize(value);
/** A document's own bytes (its length and its end), and a section's (`u`, `i`, `d`) in a delta. */
const documentBytes = 5;
const sectionBytes = 3 + documentBytes;

/** Whether two values are the same BSON, type and field order included. */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return typeof a !== "number" || !Object.is(a, -0) === !Object.is(b, -0);
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  return toEJSONText(a) === toEJSONText(b);
}

const bothDocuments = (a: unknown, b: unknown) => isDocument(a) && isDocument(b);
const bothArrays = (a: unknown, b: unknown) => Array.isArray(a) && Array.isArray(b);

/**
 * Adds the changes from `pre` to `post` under `prefix` to `delta`; answers the delta's bytes (as
 * MongoDB's delta document: sections of updates `u`, inserts `i`, deletes `d` and sub-deltas
 * `s<field>`), or null once they pass `postSize` (MongoDB then writes the value whole).
 */
function documentDelta(pre: Document, post: Document, prefix: string, delta: Delta, postSize: number): number | null {
  const preKeys = keysOf(pre);
  const postKeys = keysOf(post);
  const deletes = new Set<string>();
  let bytes = documentBytes;
  let updates = 0;
  let inserts = 0;
  let i = 0;
  let j = 0;
  while (i < preKeys.length && j < postKeys.length) {
    if (bytes > postSize) return null;
    const key = preKeys[i]!;
    if (key !== postKeys[j]) {
      // Removed, unless it comes back later (then it is inserted where it now is).
      deletes.add(key);
      i++;
      continue;
    }
    const change = changed(pre[key], post[key], key, `${prefix}${key}`, delta);
    if (change.whole) updates++;
    bytes += change.bytes;
    i++;
    j++;
  }
  for (; i < preKeys.length; i++) deletes.add(preKeys[i]!);
  for (; j < postKeys.length; j++) {
    const key = postKeys[j]!;
    delta.paths.push(`${prefix}${key}`);
    bytes += elementSize(key, post[key]);
    inserts++;
    deletes.delete(key);
  }
  for (const key of deletes) {
    delta.paths.push(`${prefix}${key}`);
    bytes += 3 + Buffer.byteLength(key);
  }
  bytes += (updates > 0 ? sectionBytes : 0) + (inserts > 0 ? sectionBytes : 0) + (deletes.size > 0 ? sectionBytes : 0);
  return bytes < postSize ? bytes : null;
}

function arrayDelta(pre: unknown[], post: unknown[], prefix: string, delta: Delta, postSize: number): number | null {
  // (Its marker `a: true`.)
  let bytes = documentBytes + 4;
  const common = Math.min(pre.length, post.length);
  for (let i = 0; i < common; i++) {
    if (bytes > postSize) return null;
    bytes += changed(pre[i], post[i], `u${i}`, `${prefix}${i}`, delta).bytes;
  }
  for (let i = common; i < post.length; i++) {
    delta.paths.push(`${prefix}${i}`);
    bytes += elementSize(`u${i}`, post[i]);
  }
  if (pre.length > post.length) {
    delta.truncated.push({ field: prefix.slice(0, -1), newSize: post.length });
    // (Its new length, `l`.)
    bytes += 7;
  }
  return bytes < postSize ? bytes : null;
}

/**
 * Adds what changed from `a` to `b` at `path` (named `name` in the delta); answers its bytes in
 * the delta and whether the value is set whole.
 */
function changed(a: unknown, b: unknown, name: string, path: string, delta: Delta): { bytes: number; whole: boolean } {
  if (sameValue(a, b)) return { bytes: 0, whole: false };
  if (bothDocuments(a, b) || bothArrays(a, b)) {
    // The value's own delta, kept when it is smaller than the value; else the value whole.
    const inner: Delta = { paths: [], truncated: [] };
    const size = logicalSize(b);
    const bytes = Array.isArray(a)
      ? arrayDelta(a, b as unknown[], `${path}.`, inner, size)
      : documentDelta(a as Document, b as Document, `${path}.`, inner, size);
    if (bytes !== null) {
      for (const inside of inner.paths) delta.paths.push(inside);
      for (const cut of inner.truncated) delta.truncated.push(cut);
      // (Named `s<name>`.)
      return { bytes: bytes + 3 + Buffer.byteLength(name), whole: false };
    }
  }
  delta.paths.push(path);
  return { bytes: elementSize(name, b), whole: true };
}
