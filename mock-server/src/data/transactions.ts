/**
 * Multi-document transactions of functions (`session.withTransaction`, docs/decisions/0036):
 * a transaction keeps its writes to itself — the documents it inserted, replaced or deleted, as it
 * leaves them — and its reads see them over the store's committed documents; other requests see
 * none of it. Its commit writes them all through the store as one (DocumentStore.commit), provided
 * that each document it wrote is still as the transaction first read it: otherwise nothing is
 * written and the commit fails as MongoDB's write conflict, labelled TransientTransactionError, on
 * which `withTransaction` runs the transaction again.
 */
import type { Binary } from "bson";
import {
  type CommitPart,
  type DocumentStore,
  type ScanOptions,
  WriteConflictError,
  type WritePlan,
  type Writer,
  type WriteView,
} from "../store/store.ts";
import { documentSize } from "./document-size.ts";
import { type ChangeEvent, type Document, idKey, toEJSONText } from "./documents.ts";

/** MongoDB's limits of a transaction (its server's defaults). */
export const transactionLimits = {
  /** `transactionLifetimeLimitSeconds`: a transaction open longer is aborted. */
  lifetimeMs: 60_000,
  /** The most bytes of documents a transaction may hold written (MongoDB's 16 MB and a little). */
  maxBytes: 16_793_600,
  /**
   * The documents a transaction keeps as it first read them (their versions its reads see again,
   * and its commit checks when it wrote them): the first 10,000, so a transaction that reads a
   * large collection does not hold a copy of it.
   */
  rememberedReads: 10_000,
};

/**
 * An error of a transaction as MongoDB's server answers it: its code, name and labels reach the
 * function (`error.errorLabels`, `error.hasErrorLabel()`), which `withTransaction` reads.
 */
export class TransactionFailure extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly codeName: string,
    readonly errorLabels: string[] = [],
  ) {
    super(message);
  }
}

const transient = ["TransientTransactionError"];

export const transactionErrors = {
  writeConflict: () =>
    new TransactionFailure(
      "WriteConflict error: this operation conflicted with another operation. Please retry your operation or multi-document transaction.",
      112,
      "WriteConflict",
      transient,
    ),
  aborted: (number: number) =>
    new TransactionFailure(
      `Transaction with { txnNumber: ${number} } has been aborted.`,
      251,
      "NoSuchTransaction",
      transient,
    ),
  tooLarge: (bytes: number) =>
    new TransactionFailure(
      `Total size of all transaction operations must be less than ${transactionLimits.maxBytes}. Actual size is ${bytes}`,
      257,
      "TransactionTooLarge",
    ),
};

/** The reads and writes an action makes (MongoService's use of a DocumentStore). */
export type ActionDocuments = Pick<DocumentStore, "scan" | "countExact" | "exactTexts" | "write">;

/**
 * A document the transaction met: as committed when it first read or wrote it (null: none) — what
 * its reads see again, and what its commit checks is still there — and as it leaves it.
 */
interface Met {
  base: Document | null;
  now: Document | null;
  /** The size of `now` when the transaction wrote it (counted against `maxBytes`). */
  bytes: number;
}

/** What the transaction met of a collection, by `_id` key, and the change events of its writes, in order. */
interface Known {
  database: string;
  collection: string;
  docs: Map<string, Met>;
  events: ChangeEvent[];
}

const sameDocument = (a: Document | null, b: Document | null) =>
  a === b || (a !== null && b !== null && toEJSONText(a) === toEJSONText(b));

export class Transaction {
  /** The store as the transaction's actions see it (exact reads answered by scans that see its writes). */
  readonly documents: ActionDocuments;
  private readonly known = new Map<string, Known>();
  /** The bytes of the documents it wrote, and how many documents it keeps as first read. */
  private bytes = 0;
  private remembered = 0;
  private queue: Promise<unknown> = Promise.resolve();
  /** Set when the transaction ended without a commit: every later action or commit fails with it. */
  private failure: TransactionFailure | null = null;
  private readonly startedAt = performance.now();

  constructor(
    private readonly store: DocumentStore,
    /** The session's transaction number (MongoDB's `txnNumber`), for messages and events. */
    readonly number: number,
    /** The session's id (MongoDB's `lsid`), which its change events carry. */
    private readonly lsid: { id: Binary; uid: Binary },
  ) {
    this.documents = {
      scan: (database, collection, prefilter, options) => this.scan(database, collection, prefilter, options),
      countExact: async () => undefined,
      exactTexts: undefined,
      write: (database, collection, plan) => this.write(database, collection, plan),
    };
  }

  /**
   * Runs one action of the transaction after those before it. As on MongoDB's server, an action
   * that fails ends the transaction: its writes are dropped and what follows fails NoSuchTransaction.
   */
  run<T>(action: () => Promise<T>): Promise<T> {
    return this.inTurn(async () => {
      try {
        return await action();
      } catch (error) {
        this.abort();
        throw error;
      }
    });
  }

  /**
   * Writes the transaction's changes to the store as one (DocumentStore.commit), as `writer`,
   * each document checked to be still as first read; a conflict fails as MongoDB's WriteConflict.
   * The transaction is over either way.
   */
  commit(writer: Writer | undefined): Promise<void> {
    return this.inTurn(async () => {
      const parts = [...this.known.values()].flatMap((known) => this.partOf(known) ?? []);
      this.abort();
      if (parts.length === 0) return;
      try {
        await this.store.commit(parts, writer);
      } catch (error) {
        if (error instanceof WriteConflictError) throw transactionErrors.writeConflict();
        throw error;
      }
    });
  }

  /** Drops the writes; what follows fails NoSuchTransaction. */
  abort(): void {
    this.failure ??= transactionErrors.aborted(this.number);
    this.known.clear();
    this.bytes = 0;
    this.remembered = 0;
  }

  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const turn = this.queue.then(() => {
      if (this.failure === null && performance.now() - this.startedAt > transactionLimits.lifetimeMs) this.abort();
      if (this.failure !== null) throw this.failure;
      return work();
    });
    this.queue = turn.catch(() => {});
    return turn;
  }

  /**
   * The store's candidates, each document as the transaction first met it (its snapshot of it) or
   * as it left it, then the documents it changed that the store did not hand back (inserted, or
   * changed to match).
   */
  private async *scan(
    database: string,
    collection: string,
    prefilter: Document,
    options: ScanOptions = {},
  ): AsyncGenerator<Document[]> {
    const known = this.knownOf(database, collection);
    const handed = new Set<string>();
    for await (const batch of this.store.scan(database, collection, prefilter, options)) {
      const out: Document[] = [];
      for (const doc of batch) {
        const key = idKey(doc._id);
        const mine = known.docs.get(key) ?? this.remember(known, key, doc);
        handed.add(key);
        if (mine.now !== null) out.push(mine.now);
      }
      yield out;
    }
    const rest: Document[] = [];
    for (const [key, mine] of known.docs)
      if (changed(mine) && mine.now !== null && !handed.has(key)) rest.push(mine.now);
    if (rest.length > 0) yield rest;
  }

  /** A write's plan over the transaction's view; its changes kept, not stored. */
  private async write<T>(
    database: string,
    collection: string,
    plan: (view: WriteView) => Promise<WritePlan<T>>,
  ): Promise<T> {
    const decided = await plan({ scan: (prefilter, options) => this.scan(database, collection, prefilter, options) });
    const known = this.knownOf(database, collection);
    // Whether the documents to insert exist, for those the transaction has not met yet.
    const unknown = new Map<string, unknown>();
    for (const change of decided.changes) {
      const id = change.op === "delete" ? change.id : change.doc._id;
      if (!known.docs.has(idKey(id))) unknown.set(idKey(id), id);
    }
    const looked = new Map<string, Document | null>();
    if (unknown.size > 0) {
      for await (const batch of this.store.scan(database, collection, { _id: { $in: [...unknown.values()] } })) {
        for (const doc of batch) if (unknown.has(idKey(doc._id))) looked.set(idKey(doc._id), doc);
      }
      for (const key of unknown.keys()) if (!looked.has(key)) looked.set(key, null);
      for (const [key, doc] of looked) this.remember(known, key, doc);
    }
    let applied = decided.changes.length;
    let duplicateAt: number | undefined;
    for (const [i, change] of decided.changes.entries()) {
      const key = idKey(change.op === "delete" ? change.id : change.doc._id);
      const first = looked.get(key) ?? null;
      const before = known.docs.get(key) ?? { base: first, now: first, bytes: 0 };
      if (change.op === "insert" && before.now !== null) {
        applied = i;
        duplicateAt = i;
        break;
      }
      if (change.op === "delete" && before.now === null) continue;
      const now = change.op === "delete" ? null : change.doc;
      const bytes = now === null ? 0 : documentSize(now);
      this.bytes += bytes - before.bytes;
      if (this.bytes > transactionLimits.maxBytes) throw transactionErrors.tooLarge(this.bytes);
      known.docs.set(key, { base: before.base, now, bytes });
    }
    const outcome = duplicateAt === undefined ? { applied } : { applied, duplicateAt };
    for (const event of decided.events(outcome))
      known.events.push({ txnNumber: this.number, lsid: this.lsid, ...event });
    return decided.result(outcome);
  }

  private knownOf(database: string, collection: string): Known {
    const key = keyOf(database, collection);
    let known = this.known.get(key);
    if (known === undefined) {
      known = { database, collection, docs: new Map(), events: [] };
      this.known.set(key, known);
    }
    return known;
  }

  /**
   * Keeps a document as the transaction first met it (null: none), while it has met fewer than
   * `rememberedReads`; past them, a document read is as committed now (a write keeps it anyway).
   */
  private remember(known: Known, key: string, doc: Document | null): Met {
    const met = { base: doc, now: doc, bytes: 0 };
    if (this.remembered >= transactionLimits.rememberedReads) return met;
    this.remembered++;
    known.docs.set(key, met);
    return met;
  }

  /** A collection's part of the commit (none when the transaction changed nothing of it). */
  private partOf({ database, collection, docs, events }: Known): CommitPart | null {
    const mine = [...docs].filter(([, met]) => changed(met));
    if (mine.length === 0) return null;
    return {
      database,
      collection,
      plan: async (view) => {
        // Each document it changed is still as the transaction first met it, or none of it is written.
        const ids = mine.flatMap(([, met]) => (met.base ?? met.now)?._id ?? []);
        const current = new Map<string, Document>();
        const batches = ids.length > 0 ? view.scan({ _id: { $in: ids } }) : [];
        for await (const batch of batches) {
          for (const doc of batch) if (docs.has(idKey(doc._id))) current.set(idKey(doc._id), doc);
        }
        const changes: WritePlan<void>["changes"] = [];
        for (const [key, met] of mine) {
          if (met.base === null && met.now === null) continue;
          if (!sameDocument(current.get(key) ?? null, met.base)) throw new WriteConflictError();
          if (met.now !== null) changes.push({ op: met.base === null ? "insert" : "replace", doc: met.now });
          else changes.push({ op: "delete", id: met.base!._id });
        }
        return { changes, events: () => events, result: () => undefined };
      },
    };
  }
}

/** Whether the transaction changed a document it met. */
const changed = (met: Met) => met.now !== met.base;

const keyOf = (database: string, collection: string) => JSON.stringify([database, collection]);
