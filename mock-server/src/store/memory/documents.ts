/**
 * An app's MongoDB data in memory: databases of collections of documents keyed by `_id`, in
 * insertion order. Writes to a collection take turns (a promise chain per collection), so a plan's
 * read and its changes are one step; every change is published to the app's change-stream
 * listeners.
 */
import { ObjectId } from "bson";
import { type AppLimits, writerLimits } from "../../config/app-config.ts";
import { bsonSize, keptSize } from "../../data/bson-size.ts";
import { stampEvents } from "../../data/change-events.ts";
import { type ChangeEvent, cloneValue, type Document, idKey, isDocument, toEJSONText } from "../../data/documents.ts";
import { storeDocument } from "../../data/ejson-text.ts";
import { isBsonNumber } from "../../data/numeric-operators.ts";
import { finish, inSlices, inTurns, Turns } from "../../data/turns.ts";
import { keysOf } from "../../data/wide-keys.ts";
import { holdsWide, storeInSlices } from "../../data/wide-values.ts";
import {
  conditionsPerStep,
  exactConditionsInSlices,
  impliedConditions,
  maxExactAlternatives,
  meetsExactly,
  pathSteps,
} from "../exact-query.ts";
import {
  type AppliedChanges,
  type CollectionInfo,
  type CommitPart,
  type DocumentChange,
  type DocumentStore,
  type ExactTexts,
  type ExactTextsOptions,
  type Quota,
  QuotaExceededError,
  type ScanOptions,
  type TriggerSuspension,
  WriteConflictError,
  type WritePlan,
  WriteRateExceededError,
  type Writer,
  type WriteView,
} from "../store.ts";

/** Refuses a change that grows documents or bytes past their limits (one that does not grow them never is). */
function refuseGrowth(
  change: { documents: number; bytes: number },
  total: { documents: number; bytes: number },
  maxDocuments: number,
  maxBytes: number,
  documentsQuota: Quota,
  bytesQuota: Quota,
): void {
  if (change.documents > 0 && total.documents + change.documents > maxDocuments)
    throw new QuotaExceededError(documentsQuota, maxDocuments);
  if (change.bytes > 0 && total.bytes + change.bytes > maxBytes) throw new QuotaExceededError(bytesQuota, maxBytes);
}

/** What a document counts against the app's `documentBytes` limit: its canonical Extended JSON in UTF-8. */
export const documentBytes = (doc: Document) => Buffer.byteLength(toEJSONText(doc));

/** A written document's stored copy and its size (documentBytes), made before the write's decision. */
interface Prepared {
  stored: Document;
  size: number;
}

/** One collection's changes to check and apply, their stored copies and sizes made (`prepare`). */
interface ApplyStep {
  database: string;
  name: string;
  changes: DocumentChange[];
  prepared: (Prepared | undefined)[];
}

/**
 * The stored copies of the documents changes write, made in slices (undefined for deletes); a wide
 * document's copy, size and text are made in slices of their own (wide-values.ts).
 */
async function prepare(changes: DocumentChange[]): Promise<(Prepared | undefined)[]> {
  const prepared: (Prepared | undefined)[] = [];
  const turns = new Turns();
  for (let i = 0; i < changes.length; i++) {
    const change = changes[i]!;
    if (change.op === "delete") prepared.push(undefined);
    else if (holdsWide(change.doc)) {
      const { stored, text } = await storeInSlices(change.doc);
      prepared.push({ stored, size: Buffer.byteLength(text) });
    } else {
      const stored = storeDocument(cloneValue(change.doc));
      prepared.push({ stored, size: documentBytes(stored) });
    }
    if ((i & 63) === 63) await turns.maybe();
  }
  return prepared;
}

/** The most documents a scan hands on at once (the caller checks its deadline between batches). */
const maxBatch = 1_000;

/** Changes checked or applied between two looks at whether other requests wait. */
const applyStep = 256;

/** Documents in batches: a first of about `want` (when given), then up to 1,000 at a time. */
async function* batchesOf(docs: Document[], { want }: ScanOptions): AsyncGenerator<Document[]> {
  let size = want === undefined ? maxBatch : Math.max(1, Math.min(want, maxBatch));
  for (let from = 0; from < docs.length; ) {
    yield docs.slice(from, from + size);
    from += size;
    size = Math.min(size * 4, maxBatch);
  }
}

/** The most fields of one collection kept indexed (a query on another field scans). */
const maxIndexedFields = 8;

/**
 * A value an index keeps documents by: a string, a number (0 and -0 alike, NaN as NaN: a Map's
 * keys), a boolean, an ObjectId's `oidKey`, or `otherNumbers`.
 */
type IndexKey = string | number | boolean | typeof otherNumbers | typeof manyValues;

/**
 * The index key of the documents whose field holds an Int64 object (past 2^53) or a Decimal128:
 * they may equal a number that is not their key (`5.0` equals 5), so every read narrowed by a
 * number reads them too (and the query engine decides).
 */
const otherNumbers = Symbol("other numbers");

/**
 * The index key of the documents whose field holds an array of more than `maxKeysPerArray` values
 * it could be kept under (up to a million in 16 MB, each an index entry): every narrowed read of
 * the field reads them too, and the engine decides.
 */
const manyValues = Symbol("many values");
export const maxKeysPerArray = 1_000;

/** An ObjectId's key (a string holding the same text is kept beside it: a read of either reads both, and the engine decides). */
const oidKey = (id: ObjectId) => `\u0000$oid:${id.toHexString()}`;

/** The index key of a value a read narrows by or a document is kept under, or undefined (not indexed). */
function keyOf(value: unknown): IndexKey | undefined {
  if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") return value;
  if (value instanceof ObjectId) return oidKey(value);
  return undefined;
}

/** Equalities of top-level fields and dotted paths, each to any of its index keys, all of them required. */
type Equalities = [string, IndexKey[]][];

/**
 * What a read can narrow by: the equalities every match meets, and each `$or` whose every clause
 * requires one (a rule's `{$or: [{owner_id: …}, {shared_with: …}]}`): its clauses' equalities.
 */
interface Narrowing {
  equalities: Equalities;
  alternatives: Equalities[][];
}

/**
 * The equalities of top-level fields and dotted paths to strings, numbers, booleans and ObjectIds
 * a query requires of every match (at its top level or under `$and`; `{$eq: …}` and `{$in: […]}`
 * of up to 256 of them too, and those an `$all` or an `$elemMatch` implies), as index keys: each narrows a read to the documents whose field (or
 * a value its path reaches) is such a value (a number equal to such a number, or maybe:
 * `otherNumbers`) or an array holding one.
 */
export function indexedEqualities(query: Document): Equalities {
  return narrowingOf(query).equalities;
}

/** `indexedEqualities` and the `$or`s a read can narrow by (see `Narrowing`), kept for the query object. */
function narrowingOf(query: Document): Narrowing {
  let known = narrowings.get(query);
  if (known === undefined) {
    known = finish(findNarrowing(query));
    narrowings.set(query, known);
  }
  return known;
}

/**
 * `narrowingOf`, giving other requests a turn between steps (a very wide query's 200,000
 * equalities took 60 ms in one); kept for the query object, as queries are never changed.
 */
async function narrowingInSlices(query: Document): Promise<void> {
  if (!narrowings.has(query)) narrowings.set(query, await inTurns(findNarrowing(query)));
}

const narrowings = new WeakMap<Document, Narrowing>();

/** The index keys an equality condition (`v`, `{$eq: v}`, `{$in: [v…]}`) accepts, or undefined. */
function equalityKeys(condition: unknown): IndexKey[] | undefined {
  const key = keyOf(condition);
  if (key !== undefined) return [key];
  if (!isDocument(condition) || Object.keys(condition).length !== 1) return undefined;
  const equal = keyOf(condition.$eq);
  if (equal !== undefined) return [equal];
  const list = condition.$in;
  if (!Array.isArray(list) || list.length === 0 || list.length > maxExactAlternatives) return undefined;
  const keys = list.map(keyOf);
  return keys.every((k) => k !== undefined) ? (keys as IndexKey[]) : undefined;
}

function* findNarrowing(query: Document): Generator<void, Narrowing> {
  let looked = 0;
  function* visit(q: Document, into: Narrowing): Generator<void> {
    // (Keys, not entries: a very wide query's entries took 300 ms; its keys are kept: wide-keys.ts.)
    for (const field of keysOf(q)) {
      if (++looked % conditionsPerStep === 0) yield;
      const condition = q[field];
      if (field === "$and" && Array.isArray(condition)) {
        for (const part of condition) if (isDocument(part)) yield* visit(part, into);
      } else if (field === "$or" && Array.isArray(condition)) {
        // Each clause's own equalities (an $or inside a clause is not looked into).
        const clauses: Equalities[] = [];
        for (const clause of condition) {
          if (!isDocument(clause)) break;
          const own: Narrowing = { equalities: [], alternatives: [] };
          yield* visit(clause, own);
          if (own.equalities.length === 0) break;
          clauses.push(own.equalities);
        }
        if (clauses.length === condition.length && clauses.length > 0) into.alternatives.push(clauses);
      } else {
        for (const [path, implied] of impliedConditions(field, condition) ?? [[field, condition]]) {
          const keys = pathSteps(path) ? equalityKeys(implied) : undefined;
          if (keys !== undefined) into.equalities.push([path, keys]);
        }
      }
    }
  }
  const narrowing: Narrowing = { equalities: [], alternatives: [] };
  yield* visit(query, narrowing);
  return narrowing;
}

/**
 * The index keys a document's top-level field is kept under: its value's, an array's values', and
 * `otherNumbers` for an Int64 object or a Decimal128 (in an array too); `manyValues` alone for an
 * array of more than `maxKeysPerArray` of them.
 */
function indexKeys(value: unknown): IndexKey[] {
  const key = keyOf(value);
  if (key !== undefined) return [key];
  if (isBsonNumber(value)) return [otherNumbers];
  if (!Array.isArray(value)) return [];
  // (Once each, in linear time: an array may hold 100,000 values.)
  const keys = new Set<IndexKey>();
  for (const item of value) {
    const itemKey = keyOf(item) ?? (isBsonNumber(item) ? otherNumbers : undefined);
    if (itemKey !== undefined) keys.add(itemKey);
    if (keys.size > maxKeysPerArray) return [manyValues];
  }
  return [...keys];
}

/**
 * The most values and array elements the walk of one document's dotted path looks at: past them
 * the document is kept under `manyValues` (a million documents in an array, under eight indexed
 * paths, held the event loop 0.37 s an insert).
 */
const maxPathWalk = 4 * maxKeysPerArray;

/**
 * The index keys a document is kept under for a top-level field (`indexKeys` of its value) or a
 * dotted path: those of every value the path reaches, through arrays at each step (arrays of
 * arrays too: more than MongoDB's paths reach, which only widens what a read hands the engine);
 * `manyValues` alone past `maxKeysPerArray` of them, or when the walk passes `maxPathWalk`.
 */
function keysAt(doc: Document, field: string): IndexKey[] {
  if (!field.includes(".")) return indexKeys(doc[field]);
  let left = maxPathWalk;
  let reached: unknown[] = [doc];
  for (const step of field.split(".")) {
    const next: unknown[] = [];
    /** False once the walk is past its limit. */
    const visit = (value: unknown): boolean => {
      if (--left < 0) return false;
      if (Array.isArray(value)) {
        for (const item of value) if (!visit(item)) return false;
      } else if (isDocument(value) && Object.hasOwn(value, step)) next.push(value[step]);
      return true;
    };
    for (const value of reached) if (!visit(value)) return [manyValues];
    reached = next;
  }
  const keys = new Set<IndexKey>();
  for (const value of reached) {
    for (const key of indexKeys(value)) keys.add(key);
    if (keys.has(manyValues) || keys.size > maxKeysPerArray) return [manyValues];
  }
  return [...keys];
}

/**
 * The documents having one value of an indexed field, by `_id` key: in insertion order (the
 * collection's `places`) while `ordered`, which a document joining with an earlier place (a
 * replace that gave it this value) breaks until the next read puts them in order again.
 */
interface IndexEntry {
  docs: Map<string, Document>;
  ordered: boolean;
  /** The place of the last document that joined in order. */
  last: number;
}

/** Index entries whose documents together hold a read's candidates (`size`: their sum, with repeats). */
interface Narrowed {
  entries: IndexEntry[];
  size: number;
}

export class Collection {
  private readonly docs = new Map<string, Document>();
  /** Each document's place in insertion order (a replace keeps it), by `_id` key. */
  private readonly places = new Map<string, number>();
  private nextPlace = 0;
  /**
   * Indexes of top-level fields and dotted paths by value (the documents having it, by `_id` key),
   * each built on the first read narrowed by its field and kept by every write after.
   */
  private readonly indexes = new Map<string, Map<IndexKey, IndexEntry>>();
  /** Each document's size (documentBytes), by `_id` key. */
  private readonly sizes = new Map<string, number>();
  /** The sum of `sizes`. */
  bytes = 0;
  /** Who each owned document counts for (the user who last wrote it), by `_id` key. */
  private readonly owners = new Map<string, Writer>();
  /** Changes with every write (caches keyed on a collection's content compare it). */
  version = 0;
  constructor(
    readonly database: string,
    readonly name: string,
    /** What the app's collections hold together (this one's share kept in it). */
    private readonly held = new Holdings(),
  ) {}

  get size(): number {
    return this.docs.size;
  }

  /** Takes what this collection holds out of the app's holdings (it is dropped). */
  release(): void {
    this.held.add(-this.docs.size, -this.bytes);
    for (const [key, owner] of this.owners) this.held.own(owner, -1, -(this.sizes.get(key) ?? 0));
  }

  /** The stored documents (frozen: writes replace them; callers clone one to change it). */
  values(): Document[] {
    return [...this.docs.values()];
  }

  /**
   * The documents that may match `query`, in insertion order: by an index when the query requires
   * a field to equal a string (a user's own notes among everyone's), a number, a boolean or an
   * ObjectId, or has an `$or` each of whose clauses requires one (the clauses' documents
   * together), else all of them.
   */
  candidates(query: Document): Document[] {
    const { equalities, alternatives } = narrowingOf(query);
    let fewest = this.narrowest(equalities);
    for (const clauses of alternatives) {
      if (fewest?.size === 0) break;
      const either = this.eitherOf(clauses);
      if (either !== undefined && (!fewest || either.size < fewest.size)) fewest = either;
    }
    if (!fewest) return this.values();
    if (fewest.size === 0) return [];
    const entries = [...new Set(fewest.entries)];
    for (const entry of entries) if (!entry.ordered) this.putInOrder(entry);
    if (entries.length === 1) return [...entries[0]!.docs.values()];
    // The entries' documents, once each, in insertion order: a few sorted by their places, many
    // (a `$in` of most values) picked from the collection in order, in linear time.
    const merged = new Map<string, Document>();
    for (const entry of entries) for (const [key, doc] of entry.docs) merged.set(key, doc);
    if (merged.size * 16 > this.docs.size)
      return [...this.docs].filter(([key]) => merged.has(key)).map(([, doc]) => doc);
    return [...merged].sort(([a], [b]) => this.places.get(a)! - this.places.get(b)!).map(([, doc]) => doc);
  }

  /**
   * The index entries holding the documents that may meet any of an `$or`'s clauses (each clause's
   * own); undefined when a clause's fields have no index (past the indexed few): it could match any.
   */
  private eitherOf(clauses: Equalities[]): Narrowed | undefined {
    const either: Narrowed = { entries: [], size: 0 };
    for (const clause of clauses) {
      const own = this.narrowest(clause);
      if (own === undefined) return undefined;
      either.entries.push(...own.entries);
      either.size += own.size;
    }
    return either;
  }

  /**
   * The index entries holding the documents that may meet every one of `equalities`: those of the
   * field whose entries hold the fewest; undefined when no field's index serves.
   */
  private narrowest(equalities: Equalities): Narrowed | undefined {
    let fewest: Narrowed | undefined;
    for (const [field, values] of equalities) {
      const index = this.indexes.get(field) ?? this.buildIndex(field);
      if (!index) continue;
      const entries: IndexEntry[] = [];
      for (const value of new Set(values)) {
        const entry = index.get(value);
        if (entry) entries.push(entry);
      }
      // (A number may equal an Int64 object's or a Decimal128's value; any value may be in a long array.)
      const others = values.some((v) => typeof v === "number") ? index.get(otherNumbers) : undefined;
      if (others) entries.push(others);
      const many = index.get(manyValues);
      if (many) entries.push(many);
      const size = entries.reduce((sum, e) => sum + e.docs.size, 0);
      if (size === 0) return { entries: [], size: 0 };
      if (!fewest || size < fewest.size) fewest = { entries, size };
    }
    return fewest;
  }

  /** Puts an index entry's documents in insertion order again (each key's place looked up once). */
  private putInOrder(entry: IndexEntry): void {
    const keyed = [...entry.docs].map(([key, doc]) => ({ key, doc, place: this.places.get(key)! }));
    keyed.sort((a, b) => a.place - b.place);
    entry.docs = new Map(keyed.map(({ key, doc }) => [key, doc]));
    entry.ordered = true;
    entry.last = keyed.at(-1)?.place ?? -1;
  }

  /**
   * The first document in insertion order whose top-level `field` is exactly `value` (custom user
   * data), through the field's index (a collection past its indexed fields scans).
   */
  firstWith(field: string, value: string): Document | undefined {
    // (A name with a dot is a field's own name here, where an index's is a path.)
    const index = field.includes(".") ? undefined : (this.indexes.get(field) ?? this.buildIndex(field));
    if (!index) return this.values().find((doc) => doc[field] === value);
    const entry = index.get(value);
    if (!entry) return undefined;
    if (!entry.ordered) this.putInOrder(entry);
    // The index holds arrays holding the value too.
    for (const doc of entry.docs.values()) if (doc[field] === value) return doc;
    return undefined;
  }

  private buildIndex(field: string): Map<IndexKey, IndexEntry> | undefined {
    if (this.indexes.size >= maxIndexedFields) return undefined;
    const index = new Map<IndexKey, IndexEntry>();
    this.indexes.set(field, index);
    for (const [key, doc] of this.docs) this.reindexField(index, key, [], keysAt(doc, field), doc);
    return index;
  }

  /**
   * Keeps one field's index with the document under `key` going from the values `before` to those
   * of `doc` (`after`): it leaves the values it no longer has, and where it keeps a value it keeps
   * its position there (a Map's `set` of a key it has), joining the others at the end.
   */
  private reindexField(
    index: Map<IndexKey, IndexEntry>,
    key: string,
    before: IndexKey[],
    after: IndexKey[],
    doc: Document | undefined,
  ): void {
    const kept = before.length > 0 && after.length > 0 ? new Set(after) : undefined;
    for (const value of before) {
      if (kept?.has(value)) continue;
      const entry = index.get(value);
      if (!entry) continue;
      entry.docs.delete(key);
      if (entry.docs.size === 0) index.delete(value);
    }
    if (!doc) return;
    for (const value of after) {
      let entry = index.get(value);
      if (!entry) {
        entry = { docs: new Map(), ordered: true, last: -1 };
        index.set(value, entry);
      }
      if (!entry.docs.has(key)) {
        const place = this.places.get(key)!;
        if (place < entry.last) entry.ordered = false;
        else entry.last = place;
      }
      entry.docs.set(key, doc);
    }
  }

  /** Keeps the indexes with a document stored (`doc`) or removed (`undefined`) under `key`. */
  private reindex(key: string, before: Document | undefined, after: Document | undefined): void {
    for (const [field, index] of this.indexes) {
      this.reindexField(index, key, before ? keysAt(before, field) : [], after ? keysAt(after, field) : [], after);
    }
  }

  /** The size and owner of the document with this `_id` key, undefined when there is none. */
  stateOf(key: string): Stored | undefined {
    const size = this.sizes.get(key);
    return size === undefined ? undefined : { size, owner: this.owners.get(key) };
  }

  private ownersAt: { version: number; list: OwnerList } | undefined;

  /** The owned documents' places in `values()`, by owner (for exports; kept until the next write). */
  ownerList(): OwnerList {
    if (this.ownersAt?.version !== this.version) this.ownersAt = { version: this.version, list: this.listOwners() };
    return this.ownersAt.list;
  }

  private listOwners(): OwnerList {
    if (this.owners.size === 0) return [];
    const places = new OwnerPlaces();
    for (const key of this.docs.keys()) places.next(this.owners.get(key));
    return places.list();
  }

  /** Stores a copy (`stored`: one made already); false when the `_id` exists. */
  insert(doc: Document, bytes = documentBytes(doc), owner?: Writer, stored = storeDocument(cloneValue(doc))): boolean {
    const key = idKey(doc._id);
    if (this.docs.has(key)) return false;
    this.version++;
    this.docs.set(key, stored);
    this.places.set(key, this.nextPlace++);
    this.reindex(key, undefined, stored);
    this.sizes.set(key, bytes);
    this.bytes += bytes;
    this.held.add(1, bytes);
    this.own(key, bytes, owner);
    return true;
  }

  /**
   * Replaces the document with this `_id` in place (its position in insertion order is kept); it
   * then counts for `owner` (the writer), or no one.
   */
  replace(doc: Document, bytes = documentBytes(doc), owner?: Writer, stored = storeDocument(cloneValue(doc))): void {
    const key = idKey(doc._id);
    this.version++;
    const before = this.docs.get(key);
    this.docs.set(key, stored);
    if (!this.places.has(key)) this.places.set(key, this.nextPlace++);
    this.reindex(key, before, stored);
    this.disown(key);
    const change = bytes - (this.sizes.get(key) ?? 0);
    this.bytes += change;
    this.held.add(before ? 0 : 1, change);
    this.sizes.set(key, bytes);
    this.own(key, bytes, owner);
  }

  delete(id: unknown): boolean {
    const key = idKey(id);
    this.version++;
    this.disown(key);
    const size = this.sizes.get(key) ?? 0;
    this.bytes -= size;
    this.sizes.delete(key);
    const before = this.docs.get(key);
    if (before) {
      this.held.add(-1, -size);
      this.reindex(key, before, undefined);
    }
    this.places.delete(key);
    return this.docs.delete(key);
  }

  private own(key: string, bytes: number, owner: Writer | undefined): void {
    if (!owner) return;
    this.owners.set(key, owner);
    this.held.own(owner, 1, bytes);
  }

  private disown(key: string): void {
    const owner = this.owners.get(key);
    if (!owner) return;
    this.owners.delete(key);
    this.held.own(owner, -1, -(this.sizes.get(key) ?? 0));
  }
}

/** Whom a collection's documents count for: each owner with the places of its documents. */
export type OwnerList = { userId: string; anonymous: boolean; documents: number[] }[];

/** An `OwnerList` made as a collection's documents pass in natural order. */
export class OwnerPlaces {
  private readonly byOwner = new Map<string, OwnerList[number]>();
  private place = 0;

  /** The next document, and whom it counts for (none: the system wrote it). */
  next(owner: { userId: string; anonymous: boolean } | undefined): void {
    if (owner) {
      const id = `${owner.anonymous ? "a" : "u"}${owner.userId}`;
      let entry = this.byOwner.get(id);
      if (!entry) {
        entry = { userId: owner.userId, anonymous: owner.anonymous, documents: [] };
        this.byOwner.set(id, entry);
      }
      entry.documents.push(this.place);
    }
    this.place++;
  }

  list(): OwnerList {
    return [...this.byOwner.values()];
  }
}

/** Documents and their bytes. */
interface Usage {
  documents: number;
  bytes: number;
}

/**
 * What an app's collections hold together — documents, bytes, anonymous users' share and each
 * owner's — kept by every change of each of them, so that a write's limit check reads the totals
 * instead of walking the collections.
 */
export class Holdings implements Usage {
  documents = 0;
  bytes = 0;
  readonly anonymous: Usage = { documents: 0, bytes: 0 };
  private readonly owners = new Map<string, Usage>();

  usageOf(userId: string): Usage | undefined {
    return this.owners.get(userId);
  }

  /** Adds (negative: takes away) documents and bytes. */
  add(documents: number, bytes: number): void {
    this.documents += documents;
    this.bytes += bytes;
  }

  /** Adds (negative: takes away) documents and bytes that count for `owner`. */
  own(owner: Writer, documents: number, bytes: number): void {
    let usage = this.owners.get(owner.userId);
    if (!usage) {
      usage = { documents: 0, bytes: 0 };
      this.owners.set(owner.userId, usage);
    }
    usage.documents += documents;
    usage.bytes += bytes;
    if (usage.documents === 0) this.owners.delete(owner.userId);
    if (owner.anonymous) {
      this.anonymous.documents += documents;
      this.anonymous.bytes += bytes;
    }
  }

  clear(): void {
    this.documents = 0;
    this.bytes = 0;
    this.anonymous.documents = 0;
    this.anonymous.bytes = 0;
    this.owners.clear();
  }
}

/** A stored document's size and whom it counts for. */
interface Stored {
  size: number;
  owner: Writer | undefined;
}

/** A writer's allowance of writes: spent a document at a time, refilled at its rate (a second's worth at most). */
interface Allowance {
  left: number;
  at: number;
}

export class MemoryDocuments implements DocumentStore {
  /** `limits`: the app's limits (none: unlimited). */
  constructor(private readonly limits: () => AppLimits | null = () => null) {}

  private readonly collectionsByKey = new Map<string, Collection>();
  /** What the collections hold together (each keeps its share in it). */
  private readonly held = new Holdings();
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
      c = new Collection(database, collection, this.held);
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
    await narrowingInSlices(prefilter);
    return this.existing(database, collection)?.candidates(prefilter) ?? [];
  }

  async *scan(database: string, name: string, prefilter: Document, options: ScanOptions = {}) {
    await narrowingInSlices(prefilter);
    yield* batchesOf(this.existing(database, name)?.candidates(prefilter) ?? [], options);
  }

  /** An exact query's matches with their kept texts and sizes; the documents are their own sort keys. */
  async exactTexts(
    database: string,
    name: string,
    query: Document,
    { want, max }: ExactTextsOptions,
  ): Promise<ExactTexts | undefined> {
    const conditions = await exactConditionsInSlices(query);
    if (conditions === null) return undefined;
    await narrowingInSlices(query);
    const candidates = this.existing(database, name)?.candidates(query) ?? [];
    const ceiling = max === undefined ? Number.POSITIVE_INFINITY : max + 1;
    const found: ExactTexts = { texts: [], keys: [], sizes: [], examined: 0 };
    for (const doc of candidates) {
      if (++found.examined >= ceiling) break;
      if (!meetsExactly(doc, conditions)) continue;
      found.texts.push(toEJSONText(doc));
      found.keys.push(doc);
      found.sizes.push(keptSize(doc) ?? bsonSize(doc, new WeakMap()));
      if (want !== undefined && found.texts.length >= want) break;
    }
    return found;
  }

  async countExact(database: string, name: string, query: Document, { limit }: { limit?: number } = {}) {
    const conditions = await exactConditionsInSlices(query);
    if (conditions === null) return undefined;
    await narrowingInSlices(query);
    const collection = this.existing(database, name);
    const most = limit ?? Number.POSITIVE_INFINITY;
    if (!collection) return 0;
    if (conditions.length === 0) return Math.min(collection.size, most);
    let n = 0;
    for (const doc of collection.candidates(query)) {
      if (meetsExactly(doc, conditions) && ++n >= most) break;
    }
    return n;
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

  async write<T>(
    database: string,
    name: string,
    plan: (view: WriteView) => Promise<WritePlan<T>>,
    writer?: Writer,
  ): Promise<T> {
    return this.holding([MemoryDocuments.key(database, name)], async () => {
      const decided = await plan(this.viewOf(database, name));
      // The stored copies and their sizes are made in slices first (an insertMany of many documents
      // lets other requests run meanwhile), then the limits are checked and the changes applied.
      const prepared = await prepare(decided.changes);
      const [applied] = await this.applyInTurn([{ database, name, changes: decided.changes, prepared }], writer);
      const events = decided.events(applied!);
      stampEvents(events, false);
      await inSlices(events, (event) => this.publish(event));
      return decided.result(applied!);
    });
  }

  async commit(parts: CommitPart[], writer?: Writer): Promise<void> {
    const keys = parts.map((part) => MemoryDocuments.key(part.database, part.collection));
    await this.holding(keys, async () => {
      const decided: WritePlan<void>[] = [];
      for (const part of parts) decided.push(await part.plan(this.viewOf(part.database, part.collection)));
      const steps: ApplyStep[] = [];
      for (const [i, part] of parts.entries()) {
        const { changes } = decided[i]!;
        steps.push({ database: part.database, name: part.collection, changes, prepared: await prepare(changes) });
      }
      const applied = await this.applyInTurn(steps, writer, true);
      // (A transaction's events share its commit's cluster time.)
      const events = decided.flatMap((plan, i) => plan.events(applied[i]!));
      stampEvents(events, true);
      await inSlices(events, (event) => this.publish(event));
    });
  }

  private viewOf(database: string, name: string): WriteView {
    return {
      scan: (prefilter, options = {}) => batchesOf(this.existing(database, name)?.candidates(prefilter) ?? [], options),
    };
  }

  /**
   * Runs `work` holding the collections' turns: after the writes to any of them that came first,
   * before those that come later. A writer takes all its turns at once, so none waits in a circle.
   */
  private async holding<T>(keys: string[], work: () => Promise<T>): Promise<T> {
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const before: Promise<void>[] = [];
    for (const key of keys) {
      const previous = this.turns.get(key);
      if (previous) before.push(previous);
      this.turns.set(key, mine);
    }
    try {
      if (before.length === 1) await before[0];
      else if (before.length > 1) await Promise.all(before);
      return await work();
    } finally {
      for (const key of keys) if (this.turns.get(key) === mine) this.turns.delete(key);
      release();
    }
  }

  /** The apply of a write too large for one step, while it runs (the others' applies wait for it). */
  private applying: Promise<void> | null = null;

  /** The large apply under way, if any: a snapshot taken before it ends would hold half of it. */
  get unsettled(): Promise<void> | null {
    return this.applying;
  }

  /**
   * Checks the limits and applies the changes: at once for a few of them; in slices for many,
   * letting other requests run between them. Meanwhile no other write checks or applies (every
   * write's limit check reads the app's and the writers' totals, whole again only at the end), but
   * reads go on and may see the first documents of an insertMany before the last, as MongoDB's
   * ordered inserts may.
   */
  private async applyInTurn(steps: ApplyStep[], writer: Writer | undefined, atomic = false): Promise<AppliedChanges[]> {
    while (this.applying) await this.applying;
    const work = this.apply(steps, writer, atomic);
    // (A commit's changes are seen all at once: at most a transaction's 16 MB, in one step.)
    if (atomic || steps.reduce((n, step) => n + step.changes.length, 0) <= applyStep) return finish(work);
    let release!: () => void;
    this.applying = new Promise((resolve) => {
      release = resolve;
    });
    try {
      return await inTurns(work);
    } finally {
      this.applying = null;
      release();
    }
  }

  /**
   * Checks the limits of all the steps together, then applies them, pausing (a `yield`) every
   * `applyStep` changes. `atomic`: an insert of an existing `_id` refuses them all (WriteConflictError)
   * where a single write stops there.
   */
  private *apply(steps: ApplyStep[], writer: Writer | undefined, atomic: boolean): Generator<void, AppliedChanges[]> {
    if (steps.every((step) => step.changes.length === 0)) return steps.map(() => ({ applied: 0 }));
    // (The app's limits read once: each read makes them again from its config.)
    const limits = this.limits();
    this.checkCollections(steps, limits);
    yield* this.checkLimits(steps, writer, atomic, limits);
    const out: AppliedChanges[] = [];
    for (const { database, name, changes, prepared } of steps) {
      if (changes.length === 0) out.push({ applied: 0 });
      else out.push(yield* this.applyStep(this.collection(database, name), changes, writer, prepared));
    }
    return out;
  }

  private *applyStep(
    collection: Collection,
    changes: DocumentChange[],
    writer: Writer | undefined,
    prepared: (Prepared | undefined)[],
  ): Generator<void, AppliedChanges> {
    for (let i = 0; i < changes.length; i++) {
      if (i % applyStep === applyStep - 1) yield;
      const change = changes[i]!;
      const ready = prepared[i];
      if (change.op === "insert") {
        if (!collection.insert(change.doc, ready!.size, writer, ready!.stored)) return { applied: i, duplicateAt: i };
      } else if (change.op === "replace") collection.replace(change.doc, ready!.size, writer, ready!.stored);
      else collection.delete(change.id);
    }
    return { applied: changes.length };
  }

  /** Refuses steps that would make the app more collections than its limit lets it hold. */
  private checkCollections(steps: ApplyStep[], limits: AppLimits | null): void {
    const limit = limits?.collections;
    if (limit === undefined) return;
    const made = new Set<string>();
    for (const { database, name, changes } of steps)
      if (changes.length > 0 && !this.existing(database, name)) made.add(MemoryDocuments.key(database, name));
    const holding = this.collectionsByKey.size;
    // (Made one at a time, as on PostgreSQL, the one refused finds the limit's worth made, or more.)
    if (made.size > 0 && holding + made.size > limit)
      throw new QuotaExceededError("collections", limit, Math.max(holding, limit));
  }

  /** Writers' allowances of writes, by user id (writesPerSecondPerUser). */
  private readonly allowances = new Map<string, Allowance>();

  /**
   * Refuses changes that would take the app, the writer or anonymous users together past their
   * limits (what they would apply: up to a duplicate `_id`), or the writer past its writes a second;
   * answers the size of each inserted or replacing document. A document counts for the user who
   * last wrote it (docs/decisions/0018-fair-shares.md).
   */
  private *checkLimits(
    steps: ApplyStep[],
    writer: Writer | undefined,
    atomic: boolean,
    limits: AppLimits | null,
  ): Generator<void, void> {
    // What the changes add (negative: take away) to the app, anonymous users and the writer.
    const app = { documents: 0, bytes: 0 };
    const anonymous = { documents: 0, bytes: 0 };
    const mine = { documents: 0, bytes: 0 };
    let writes = 0;
    const count = (owner: Writer | undefined, documents: number, bytes: number) => {
      if (!owner) return;
      if (owner.anonymous) {
        anonymous.documents += documents;
        anonymous.bytes += bytes;
      }
      if (owner.userId === writer?.userId) {
        mine.documents += documents;
        mine.bytes += bytes;
      }
    };
    for (const { database, name, changes, prepared } of steps) {
      const collection = this.existing(database, name);
      // Each `_id` the changes touched, as they leave it (null: no document).
      const touched = new Map<string, Stored | null>();
      const stateNow = (key: string) => (touched.has(key) ? (touched.get(key) ?? undefined) : collection?.stateOf(key));
      for (const [i, change] of changes.entries()) {
        if (i % applyStep === applyStep - 1) yield;
        if (change.op === "delete") {
          const key = idKey(change.id);
          const before = stateNow(key);
          if (before !== undefined) {
            app.documents--;
            app.bytes -= before.size;
            count(before.owner, -1, -before.size);
            touched.set(key, null);
          }
          continue;
        }
        const key = idKey(change.doc._id);
        const before = stateNow(key);
        if (change.op === "insert" && before !== undefined) {
          if (atomic) throw new WriteConflictError();
          break;
        }
        const size = prepared[i]!.size;
        if (before === undefined) app.documents++;
        app.bytes += size - (before?.size ?? 0);
        if (before) count(before.owner, -1, -before.size);
        count(writer, 1, size);
        writes++;
        touched.set(key, { size, owner: writer });
      }
    }
    if (!limits) return;
    if (app.documents > 0 || app.bytes > 0 || anonymous.documents > 0 || anonymous.bytes > 0) {
      refuseGrowth(app, this.held, limits.documents, limits.documentBytes, "documents", "documentBytes");
      refuseGrowth(
        anonymous,
        this.held.anonymous,
        limits.anonymousDocuments,
        limits.anonymousDocumentBytes,
        "anonymousDocuments",
        "anonymousDocumentBytes",
      );
    }
    if (!writer) return;
    const own = writerLimits(limits, writer.anonymous);
    if (mine.documents > 0 || mine.bytes > 0) {
      refuseGrowth(
        mine,
        this.held.usageOf(writer.userId) ?? { documents: 0, bytes: 0 },
        own.documents,
        own.documentBytes,
        writer.anonymous ? "documentsPerAnonymousUser" : "documentsPerUser",
        writer.anonymous ? "documentBytesPerAnonymousUser" : "documentBytesPerUser",
      );
    }
    if (writes > 0) this.spend(writer.userId, writes, own.writesPerSecond);
  }

  /**
   * Spends `writes` of the writer's allowance, which refills at `rate` a second up to a second's
   * worth: refused (nothing spent) while less than one write is left. One action may take it below
   * zero (an insertMany of many documents); the writer then waits until it has refilled.
   */
  private spend(userId: string, writes: number, rate: number): void {
    const now = performance.now();
    const allowance = this.allowances.get(userId) ?? { left: rate, at: now };
    const left = Math.min(rate, allowance.left + ((now - allowance.at) / 1000) * rate);
    if (left < 1) throw new WriteRateExceededError(rate);
    this.allowances.set(userId, { left: left - writes, at: now });
  }

  async collections(): Promise<CollectionInfo[]> {
    return this.list().map((c) => ({ database: c.database, collection: c.name, count: c.size }));
  }

  /** Drops the collection (after the writes to it before); when it existed, its `drop` event goes out. */
  async drop(database: string, collection: string): Promise<boolean> {
    const key = MemoryDocuments.key(database, collection);
    return this.holding([key], async () => {
      const dropped = this.collectionsByKey.get(key);
      if (!dropped) return false;
      this.collectionsByKey.delete(key);
      dropped.release();
      const events: ChangeEvent[] = [{ database, collection, operationType: "drop" }];
      stampEvents(events, false);
      for (const event of events) this.publish(event);
      return true;
    });
  }

  clear(): void {
    this.collectionsByKey.clear();
    this.held.clear();
    this.allowances.clear();
    this.suspensions.clear();
  }

  /** The app's suspended database triggers, by name (decision 0057), kept as the changes that suspend them go out. */
  readonly suspensions = new Map<string, TriggerSuspension>();
  private suspender: ((event: ChangeEvent) => TriggerSuspension[]) | null = null;

  suspendTriggers(decide: ((event: ChangeEvent) => TriggerSuspension[]) | null): void {
    this.suspender = decide;
  }

  async subscribe(listener: (event: ChangeEvent) => void): Promise<() => void> {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get listenerCount(): number {
    return this.listeners.size;
  }

  private publish(event: ChangeEvent): void {
    if (this.suspender && (event.operationType === "drop" || event.operationType === "rename"))
      for (const suspension of this.suspender(event))
        if (!this.suspensions.has(suspension.name)) this.suspensions.set(suspension.name, suspension);
    for (const listener of this.listeners) listener(event);
  }
}
