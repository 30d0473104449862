/**
 * An app's MongoDB data, in memory: databases of collections of documents keyed by `_id`, in
 * insertion order. Every change is published to the app's change-stream listeners.
 */
import { cloneValue, type Document, idKey } from "./documents.ts";

export class Collection {
  private readonly docs = new Map<string, Document>();
  /** Changes with every write (caches keyed on a collection's content compare it). */
  version = 0;
  constructor(
    readonly database: string,
    readonly name: string,
  ) {}

  get size(): number {
    return this.docs.size;
  }

  /** The stored documents (live objects: callers clone before handing them out). */
  values(): Document[] {
    return [...this.docs.values()];
  }

  byId(id: unknown): Document | undefined {
    return this.docs.get(idKey(id));
  }

  has(id: unknown): boolean {
    return this.docs.has(idKey(id));
  }

  /** Stores a copy; false when the `_id` exists. */
  insert(doc: Document): boolean {
    const key = idKey(doc._id);
    if (this.docs.has(key)) return false;
    this.version++;
    this.docs.set(key, cloneValue(doc));
    return true;
  }

  /** Replaces the document with this `_id` in place (its position in insertion order is kept). */
  replace(doc: Document): void {
    this.version++;
    this.docs.set(idKey(doc._id), cloneValue(doc));
  }

  delete(id: unknown): boolean {
    this.version++;
    return this.docs.delete(idKey(id));
  }

  clear(): void {
    this.docs.clear();
    this.version++;
  }
}

export type ChangeListener = (event: ChangeEvent) => void;

export interface ChangeEvent {
  database: string;
  collection: string;
  operationType: "insert" | "update" | "replace" | "delete";
  documentKey: { _id: unknown };
  fullDocument?: Document;
  updateDescription?: { updatedFields: Document; removedFields: string[]; truncatedArrays: unknown[] };
  /** The document before a delete (never sent; lets rules decide who may see the event). */
  before?: Document;
}

export class DataStore {
  private readonly collections = new Map<string, Collection>();
  private readonly listeners = new Set<ChangeListener>();

  private static key(database: string, collection: string) {
    return `${database}\u0000${collection}`;
  }

  collection(database: string, collection: string): Collection {
    const key = DataStore.key(database, collection);
    let c = this.collections.get(key);
    if (!c) {
      c = new Collection(database, collection);
      this.collections.set(key, c);
    }
    return c;
  }

  existing(database: string, collection: string): Collection | undefined {
    return this.collections.get(DataStore.key(database, collection));
  }

  list(): Collection[] {
    return [...this.collections.values()];
  }

  drop(database: string, collection: string): boolean {
    return this.collections.delete(DataStore.key(database, collection));
  }

  clear(): void {
    this.collections.clear();
  }

  subscribe(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get listenerCount(): number {
    return this.listeners.size;
  }

  publish(event: ChangeEvent): void {
    for (const listener of this.listeners) listener(event);
  }
}
