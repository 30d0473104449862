/**
 * How `$merge` finds and writes the target's documents its results name (mongo-actions.ts
 * `MongoService.mergeSlice`; docs/decisions/0054-out-and-merge.md): the update of each mode, the
 * prefilter of a slice of keys, and the slice's documents by key.
 */
import { type Document, idKey, isDocument } from "./documents.ts";
import { doubleOf, isNumeric } from "./numeric-operators.ts";
import { ownField } from "./own-fields.ts";
import type { UpdateOptions } from "./query-jobs.ts";
import { isRegexValue } from "./regex.ts";
import { keysOf } from "./wide-keys.ts";
import { type MergeSpec, mergeQuery } from "./write-stages.ts";

/** The update a `$merge` result makes of the document its key names, as MongoDB's modes write it. */
export function mergeUpdate(
  spec: MergeSpec,
  doc: Document,
  key: Document,
): { query: Document; update: Document | Document[]; options: UpdateOptions } {
  const query = mergeQuery(key);
  const upsert = spec.whenNotMatched === "insert";
  const matched = spec.whenMatched;
  if (Array.isArray(matched))
    return {
      query,
      update: matched,
      options: { many: false, upsert, replace: false, supplied: doc, ...(spec.let ? { let: spec.let } : {}) },
    };
  if (matched === "replace") return { query, update: doc, options: { many: false, upsert, replace: true } };
  // keepExisting, and fail (whose match is refused), insert only what matches nothing.
  const update = matched === "merge" ? { $set: doc } : { $setOnInsert: doc };
  return { query, update, options: { many: false, upsert, replace: false } };
}

/**
 * A prefilter of the target's documents a slice of keys can name (every one among them; others
 * may be too): the values of one field, else the keys' queries; the whole collection for values a
 * query reads otherwise (a regular expression, an operator-like document).
 */
export function mergeTargets(on: string[], keys: Document[]): Document {
  const literal = (value: unknown) =>
    !isRegexValue(value) && !(isDocument(value) && keysOf(value).some((k) => k.startsWith("$")));
  if (!keys.every((key) => on.every((field) => literal(key[field])))) return {};
  if (on.length === 1) return { [on[0]!]: { $in: keys.map((key) => key[on[0]!]) } };
  return { $or: keys.map(mergeQuery) };
}

/** A value's text for grouping equal values (numbers by value whatever their type; more may share one). */
function valueText(value: unknown): string {
  return isNumeric(value) ? `n:${doubleOf(value)}` : idKey(value);
}

/** The values a path reaches in a stored document, through arrays as a query's path does (each array also whole). */
function valuesAt(doc: Document, path: string): unknown[] {
  let values: unknown[] = [doc];
  for (const part of path.split(".")) {
    const next: unknown[] = [];
    for (const value of values) {
      const items = Array.isArray(value) ? value : [value];
      for (const item of items) {
        const value = isDocument(item) ? ownField(item, part) : undefined;
        if (value !== undefined) next.push(value);
      }
    }
    values = next;
  }
  return values.flatMap((value) => (Array.isArray(value) ? [value, ...value] : [value]));
}

/** Key texts a stored document may be found by, at most this many (past them, none: it is found by `_id` only). */
const keyTextsPerDocument = 256;

/**
 * The target's documents a `$merge` slice read, by the texts of their `on` values and by `_id`,
 * kept as the slice writes them: a result finds the documents its key may name (the update's own
 * match decides among them).
 */
export class MergeIndex {
  private readonly keyed = new Map<string, Document[]>();
  private readonly ids = new Map<string, Document>();

  constructor(private readonly on: string[]) {}

  private texts(doc: Document): string[] {
    let texts = [""];
    for (const field of this.on) {
      const values = valuesAt(doc, field).map(valueText);
      texts = texts.flatMap((text) => values.map((value) => `${text}\u0000${value}`));
      if (texts.length > keyTextsPerDocument) return [];
    }
    return texts;
  }

  /** A document of the target as it is now (replacing the one of its `_id`). */
  add(doc: Document): void {
    const id = idKey(doc._id);
    const old = this.ids.get(id);
    if (old !== undefined)
      for (const text of this.texts(old))
        this.keyed.set(
          text,
          (this.keyed.get(text) ?? []).filter((d) => d !== old),
        );
    this.ids.set(id, doc);
    for (const text of this.texts(doc)) this.keyed.set(text, [...(this.keyed.get(text) ?? []), doc]);
  }

  /** The documents a key may name. */
  byKey(key: Document): Document[] {
    const text = this.on.map((field) => `\u0000${valueText(key[field])}`).join("");
    return this.keyed.get(text) ?? [];
  }

  holdsId(id: unknown): boolean {
    return this.ids.has(idKey(id));
  }
}
