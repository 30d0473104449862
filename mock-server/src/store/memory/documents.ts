/**
 * An app's MongoDB data in memory: databases of collections of documents keyed by `_id`, in
 * insertion order. Writes to a collection take turns (a promise chain per collection), so a plan's
 * read and its changes are one step; every change is published to the app's change-stream
 * listeners.
 */
import type { AppLimits } from "../../config/app-config.ts";
import { type ChangeEvent, cloneValue, type Document, idKey, isDocument, toEJSONText } from "../../data/documents.ts";
import { storeDocument } from "../../data/ejson-text.ts";
import {
  type AppliedChanges,
  type CollectionInfo,
  type DocumentChange,
  type DocumentStore,
  QuotaExceededError,
  type WritePlan,
  type WriteView,
} from "../store.ts";

/** What a document counts against the app's `documentBytes` limit: its canonical Extended JSON in UTF-8. */
export const documentBytes = (doc: Document) => Buffer.byteLength(toEJSONText(doc));

/** The most fields of one collection kept indexed (a query on another field scans). */
const maxIndexedFields = 8;

/**
 * The `field: "string"` conditions a query requires of every match (at its top level or under
 * `$and`; `{$eq: "…"}` too): each narrows a read to the documents whose top-level field is that
 * string or an array holding it.
 */
export function stringEqualities(query: Document, into: [string, string][] = []): [string, string][] {
  for (const [field, condition] of Object.entries(query)) {
    if (field === "$and" && Array.isArray(condition)) {
      for (const part of condition) if (isDocument(part)) stringEqualities(part, into);
    } else if (field !== "" && !field.startsWith("$") && !field.includes(".")) {
      if (typeof condition === "string") into.push([field, condition]);
      else if (isDocument(condition) && typeof condition.$eq === "string" && Object.keys(condition).length === 1)
        into.push([field, condition.$eq]);
    }
  }
  return into;
}

/** The string values a document's top-level field can be matched by (an array's strings too). */
function stringValues(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string");
  return [];
}

export class Collection {
  private readonly docs = new Map<string, Document>();
  /** Each document's place in insertion order (a replace keeps it), by `_id` key. */
  private readonly places = new Map<string, number>();
  private nextPlace = 0;
  /**
   * Indexes of top-level fields by string value (the `_id` keys of the documents having it), each
   * built on the first read narrowed by its field and kept by every write after.
   */
  private readonly indexes = new Map<string, Map<string, Set<string>>>();
  /** Each document's size (documentBytes), by `_id` key. */
  private readonly sizes = new Map<string, number>();
  /** The sum of `sizes`. */
  bytes = 0;
  /** Changes with every write (caches keyed on a collection's content compare it). */
  version = 0;
  constructor(
    readonly database: string,
    readonly name: string,
  ) {}

  get size(): number {
    return this.docs.size;
  }

  /** The stored documents (frozen: writes replace them; callers clone one to change it). */
  values(): Document[] {
    return [...this.docs.values()];
  }

  /**
   * The documents that may match `query`, in insertion order: by an index when the query requires
   * a field to equal a string (a user's own notes among everyone's), else all of them.
   */
  candidates(query: Document): Document[] {
    let fewest: Set<string> | undefined;
    for (const [field, value] of stringEqualities(query)) {
      const index = this.indexes.get(field) ?? this.buildIndex(field);
      if (!index) continue;
      const keys = index.get(value) ?? new Set<string>();
      if (!fewest || keys.size < fewest.size) fewest = keys;
    }
    if (!fewest) return this.values();
    const keys = [...fewest].sort((a, b) => this.places.get(a)! - this.places.get(b)!);
    return keys.map((key) => this.docs.get(key)!);
  }

  /**
   * The first document in insertion order whose top-level `field` is exactly `value` (custom user
   * data), through the field's index (a collection past its indexed fields scans).
   */
  firstWith(field: string, value: string): Document | undefined {
    const index = this.indexes.get(field) ?? this.buildIndex(field);
    if (!index) return this.values().find((doc) => doc[field] === value);
    let first: Document | undefined;
    let firstPlace = Number.POSITIVE_INFINITY;
    for (const key of index.get(value) ?? []) {
      const doc = this.docs.get(key)!;
      const place = this.places.get(key)!;
      // The index holds arrays holding the value too.
      if (place < firstPlace && doc[field] === value) {
        first = doc;
        firstPlace = place;
      }
    }
    return first;
  }

  private buildIndex(field: string): Map<string, Set<string>> | undefined {
    if (this.indexes.size >= maxIndexedFields) return undefined;
    const index = new Map<string, Set<string>>();
    this.indexes.set(field, index);
    for (const [key, doc] of this.docs) this.indexDocument(index, field, key, doc, true);
    return index;
  }

  private indexDocument(index: Map<string, Set<string>>, field: string, key: string, doc: Document, add: boolean) {
    for (const value of stringValues(doc[field])) {
      let keys = index.get(value);
      if (add) {
        if (!keys) {
          keys = new Set();
          index.set(value, keys);
        }
        keys.add(key);
      } else if (keys) {
        keys.delete(key);
        if (keys.size === 0) index.delete(value);
      }
    }
  }

  /** Keeps the indexes with a document stored (`doc`) or removed (`undefined`) under `key`. */
  private reindex(key: string, before: Document | undefined, after: Document | undefined): void {
    for (const [field, index] of this.indexes) {
      if (before) this.indexDocument(index, field, key, before, false);
      if (after) this.indexDocument(index, field, key, after, true);
    }
  }

  /** The size of the document with this `_id` key, undefined when there is none. */
  sizeOf(key: string): number | undefined {
    return this.sizes.get(key);
  }

  /** Stores a copy; false when the `_id` exists. */
  insert(doc: Document, bytes = documentBytes(doc)): boolean {
    const key = idKey(doc._id);
    if (this.docs.has(key)) return false;
    this.version++;
    const stored = storeDocument(cloneValue(doc));
    this.docs.set(key, stored);
    this.places.set(key, this.nextPlace++);
    this.reindex(key, undefined, stored);
    this.sizes.set(key, bytes);
    this.bytes += bytes;
    return true;
  }

  /** Replaces the document with this `_id` in place (its position in insertion order is kept). */
  replace(doc: Document, bytes = documentBytes(doc)): void {
    const key = idKey(doc._id);
    this.version++;
    const before = this.docs.get(key);
    const stored = storeDocument(cloneValue(doc));
    this.docs.set(key, stored);
    if (!this.places.has(key)) this.places.set(key, this.nextPlace++);
    this.reindex(key, before, stored);
    this.bytes += bytes - (this.sizes.get(key) ?? 0);
    this.sizes.set(key, bytes);
  }

  delete(id: unknown): boolean {
    const key = idKey(id);
    this.version++;
    this.bytes -= this.sizes.get(key) ?? 0;
    this.sizes.delete(key);
    const before = this.docs.get(key);
    if (before) this.reindex(key, before, undefined);
    this.places.delete(key);
    return this.docs.delete(key);
  }
}

export class MemoryDocuments implements DocumentStore {
  /** `limits`: the app's limits (none: unlimited). */
  constructor(private readonly limits: () => AppLimits | null = () => null) {}

  private readonly collectionsByKey = new Map<string, Collection>();
  private readonly listeners = new Set<(event: ChangeEvent) => void>();
  private readonly turns = new Map<string, Promise<void>>();

  private static key(database: string, collection: string) {
    return `${database}\u0000${collection}`;
  }

  /** The collection, created when missing (an insert creates it, as in MongoDB). */
  collection(database: string, collection: string): Collection {
    const key = MemoryDocuments.key(database, collection);
    let c = this.collectionsByKey.get(key);
    if (!c) {
      c = new Collection(database, collection);
      this.collectionsByKey.set(key, c);
    }
    return c;
  }

  existing(database: string, collection: string): Collection | undefined {
    return this.collectionsByKey.get(MemoryDocuments.key(database, collection));
  }

  list(): Collection[] {
    return [...this.collectionsByKey.values()];
  }

  async read(database: string, collection: string, prefilter: Document): Promise<Document[]> {
    return this.existing(database, collection)?.candidates(prefilter) ?? [];
  }

  async findByField(database: string, name: string, field: string, value: string): Promise<Document | undefined> {
    return this.findByFieldNow(database, name, field, value);
  }

  /** findByField at once (logins and function calls read custom user data by the field's index). */
  findByFieldNow(database: string, name: string, field: string, value: string): Document | undefined {
    return this.existing(database, name)?.firstWith(field, value);
  }

  async page(database: string, name: string, skip: number, limit: number) {
    const docs = this.existing(database, name)?.values() ?? [];
    return { total: docs.length, documents: docs.slice(skip, skip + limit) };
  }

  async write<T>(database: string, name: string, plan: (view: WriteView) => Promise<WritePlan<T>>): Promise<T> {
    const key = MemoryDocuments.key(database, name);
    const before = this.turns.get(key);
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.turns.set(key, mine);
    if (before) await before;
    try {
      const decided = await plan({
        read: async (prefilter) => this.existing(database, name)?.candidates(prefilter) ?? [],
      });
      const applied = this.apply(database, name, decided.changes);
      for (const event of decided.events(applied)) this.publish(event);
      return decided.result(applied);
    } finally {
      if (this.turns.get(key) === mine) this.turns.delete(key);
      release();
    }
  }

  private apply(database: string, name: string, changes: DocumentChange[]): AppliedChanges {
    if (changes.length === 0) return { applied: 0 };
    const sizes = this.checkLimits(this.existing(database, name), changes);
    const collection = this.collection(database, name);
    for (let i = 0; i < changes.length; i++) {
      const change = changes[i]!;
      if (change.op === "insert") {
        if (!collection.insert(change.doc, sizes[i])) return { applied: i, duplicateAt: i };
      } else if (change.op === "replace") collection.replace(change.doc, sizes[i]);
      else collection.delete(change.id);
    }
    return { applied: changes.length };
  }

  /**
   * Refuses changes that would take the app past its limits (what they would apply: up to a
   * duplicate `_id`); answers the size of each inserted or replacing document.
   */
  private checkLimits(collection: Collection | undefined, changes: DocumentChange[]): (number | undefined)[] {
    const sizes: (number | undefined)[] = [];
    let documents = 0;
    let bytes = 0;
    // The size of each `_id` the changes touched, as they leave it (undefined: no document).
    const touched = new Map<string, number | undefined>();
    const sizeNow = (key: string) => (touched.has(key) ? touched.get(key) : collection?.sizeOf(key));
    for (const change of changes) {
      if (change.op === "delete") {
        const key = idKey(change.id);
        const before = sizeNow(key);
        if (before !== undefined) {
          documents--;
          bytes -= before;
          touched.set(key, undefined);
        }
        sizes.push(undefined);
        continue;
      }
      const key = idKey(change.doc._id);
      const before = sizeNow(key);
      if (change.op === "insert" && before !== undefined) break;
      const size = documentBytes(change.doc);
      sizes.push(size);
      if (before === undefined) documents++;
      bytes += size - (before ?? 0);
      touched.set(key, size);
    }
    const limits = this.limits();
    if (!limits || (documents <= 0 && bytes <= 0)) return sizes;
    let total = 0;
    let totalBytes = 0;
    for (const c of this.collectionsByKey.values()) {
      total += c.size;
      totalBytes += c.bytes;
    }
    if (documents > 0 && total + documents > limits.documents)
      throw new QuotaExceededError("documents", limits.documents);
    if (bytes > 0 && totalBytes + bytes > limits.documentBytes)
      throw new QuotaExceededError("documentBytes", limits.documentBytes);
    return sizes;
  }

  async collections(): Promise<CollectionInfo[]> {
    return this.list().map((c) => ({ database: c.database, collection: c.name, count: c.size }));
  }

  async drop(database: string, collection: string): Promise<boolean> {
    return this.collectionsByKey.delete(MemoryDocuments.key(database, collection));
  }

  clear(): void {
    this.collectionsByKey.clear();
  }

  async subscribe(listener: (event: ChangeEvent) => void): Promise<() => void> {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get listenerCount(): number {
    return this.listeners.size;
  }

  private publish(event: ChangeEvent): void {
    for (const listener of this.listeners) listener(event);
  }
}
