/**
 * An app's MongoDB documents in PostgreSQL: one row per document, canonical Extended JSON as jsonb
 * (for SQL filters and the GIN index) and as text (MongoDB's field order), natural order by `seq`.
 * A write reads its candidates `FOR UPDATE`, applies the plan's changes and — while some instance
 * has a change stream open on the app (the `watchers` table) — sends the change events as
 * notifications, all in one transaction: committed before the caller hears of it, and seen by every
 * instance's change streams in commit order. Announcing only when someone listens matters: a
 * notifying commit holds a database-wide lock until it is flushed, which serializes such commits.
 */

import { setTimeout as sleep } from "node:timers/promises";
import { sizeBoundOfText } from "../../data/bson-size.ts";
import { stampEvents } from "../../data/change-events.ts";
import {
  type ChangeEvent,
  type Document,
  fromEJSONText,
  fromStoredText,
  repliedAsStored,
  scalarFromStoredText,
  toEJSONText,
} from "../../data/documents.ts";
import { fromEJSONTextInSlices, largeTextChars } from "../../data/ejson-in-slices.ts";
import { keepText, maxReplyBytes } from "../../data/ejson-text.ts";
import { Turns } from "../../data/turns.ts";
import { holdsWide, textInSlices } from "../../data/wide-values.ts";
import { exactConditionsInSlices } from "../exact-query.ts";
import { OwnerPlaces } from "../memory/documents.ts";
import {
  type AppliedChanges,
  type CollectionInfo,
  type CollectionReading,
  type CommitPart,
  type DocumentChange,
  type DocumentStore,
  type ExactTexts,
  type ExactTextsOptions,
  OversizedCustomData,
  QuotaExceededError,
  type ScanOptions,
  StoreTimeoutError,
  StoreUnavailableError,
  type TriggerSuspension,
  WriteConflictError,
  type WritePlan,
  type Writer,
  type WriteView,
} from "../store.ts";
import type { PgContext } from "./context.ts";
import { customDataSelect } from "./custom-data.ts";
import { cursorRows, type Database, type Queryable, rowsOf } from "./database.ts";
import { InsertGroups, type PendingInsert } from "./insert-groups.ts";
import { channels } from "./notifications.ts";
import { hiddenValue, pushdownInSlices } from "./pushdown.ts";
import { idRowKey } from "./row-keys.ts";
import { type JsonParam, jsonFromDatabase, jsonParam } from "./text-encoding.ts";
import { keepEvents } from "./trigger-events.ts";

/** A collection's rows, its app, database and collection hidden from the plan (pushdown.ts, `hiddenValue`). */
const placeOf = (app: string, db: string, coll: string) =>
  `app_id = ${hiddenValue(`${app}::text`)} AND db = ${hiddenValue(`${db}::text`)} AND coll = ${hiddenValue(`${coll}::text`)}`;

/** What joins the texts of an exact find's matches (JSON text holds control characters only escaped). */
const separator = "\u001e";

/** The most rows a batch of a scan reads and decodes at once. */
const maxBatch = 1_000;
/** A notification's payload is limited to 8000 bytes; larger events go through change_log. */
const maxPayloadBytes = 7_900;
/** Deadlocks and serialization failures are retried this often (the plan is pure, so it can run again). */
const maxAttempts = 6;
/** The first key of an app's collection lock (its second: the app id's hash); "coll" in ASCII. */
const collectionLock = 0x636f6c6c;

/** A document as the statements bind it: its Extended JSON, for both `doc` (jsonb) and `ejson`. */
export const storedDocument = (doc: Document) => jsonParam(toEJSONText(doc));

/** About how many characters of documents a state export reads at a time (a document: up to 16 MiB). */
const exportBatchChars = 8 * 1024 * 1024;

/**
 * An inserted document's row text, kept as the document's text (its change event shares the
 * document, changed by no one afterwards: the event's text joins it instead of writing it again).
 */
function insertedText(doc: Document): string {
  const text = toEJSONText(doc);
  keepText(doc, text);
  return text;
}

/** `insertedText` of a wide document, in slices (wide-values.ts). */
async function insertedTextInSlices(doc: Document): Promise<string> {
  const text = await textInSlices(doc);
  keepText(doc, text);
  return text;
}

/** At most this many rows, and about this many characters of documents, go in one statement. */
export const statementLimits = { rows: 1_000, chars: 1 << 20 };

/**
 * Many rows' writes split into statements of at most `statementLimits` (each `[from, to)`): the
 * driver writes a statement's arrays of keys and texts in one synchronous step, which for an
 * insertMany of 150,000 documents held every other request for 2–3 s. The statements run one
 * after another in the write's transaction, other requests served in between.
 */
export function statementParts(items: readonly (string | JsonParam)[]): [number, number][] {
  const parts: [number, number][] = [];
  let from = 0;
  let chars = 0;
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const length = typeof item === "string" ? item.length : item.json.length;
    if (i > from && (i - from >= statementLimits.rows || chars + length > statementLimits.chars)) {
      parts.push([from, i]);
      from = i;
      chars = 0;
    }
    chars += length;
  }
  if (from < items.length) parts.push([from, items.length]);
  return parts;
}

/** The `owner` and `owner_anonymous` of the rows a writer writes (none: the system's, no user's). */
const ownerColumns = (writer: Writer | undefined): [string | null, boolean] =>
  writer ? [writer.userId, writer.anonymous] : [null, false];

/**
 * Rows in natural order. A filtered read is sorted here, not in SQL: an `ORDER BY seq` invites the
 * planner to walk the collection in order and filter (right only when most rows match), where the
 * GIN index finds the few that do.
 */
function decode(rows: { seq: number; ejson: string }[], sorted: boolean): Document[] {
  const ordered = sorted ? rows : rows.sort((a, b) => a.seq - b.seq);
  return ordered.map((r) => {
    const text = jsonFromDatabase(r.ejson);
    // The row's text is the document's canonical Extended JSON as this server writes it: a reply
    // joins it as it is rather than writing the parsed document again.
    const { value, sameText } = fromStoredText(text);
    return sameText ? keepText(value as Document, text) : (value as Document);
  });
}

/** `decode` of a batch a scan hands on, a large document's text read in slices (a 200,000-field one: 0.25 s at once). */
async function decodeInSlices(rows: { seq: number; ejson: string }[], sorted: boolean): Promise<Document[]> {
  if (!rows.some((r) => r.ejson.length >= largeTextChars)) return decode(rows, sorted);
  const ordered = sorted ? rows : rows.sort((a, b) => a.seq - b.seq);
  const docs: Document[] = [];
  for (const r of ordered) {
    if (r.ejson.length < largeTextChars) {
      docs.push(...decode([r], true));
      continue;
    }
    const text = jsonFromDatabase(r.ejson);
    const value = (await fromEJSONTextInSlices(text)) as Document;
    docs.push(repliedAsStored(text) ? keepText(value, text) : value);
  }
  return docs;
}

export class PgDocuments implements DocumentStore {
  constructor(
    private readonly context: PgContext,
    private readonly appId: string,
    private readonly changes: ChangeHub,
  ) {
    this.groups = new InsertGroups(
      () => this.context.db,
      { appId, changesChannel: channels.changes, watched: watched("$1") },
      (insert) => this.insertAlone(insert),
    );
  }

  /** Concurrent insertOne actions of this app, written together (insert-groups.ts). */
  readonly groups: InsertGroups;

  async read(database: string, collection: string, prefilter: Document): Promise<Document[]> {
    const db = this.context.db;
    const docs: Document[] = [];
    for await (const batch of this.batches(async () => db, database, collection, prefilter, {}, false))
      docs.push(...batch);
    return docs;
  }

  scan(database: string, collection: string, prefilter: Document, options: ScanOptions = {}) {
    const within = this.within(options.deadline);
    return this.batches(async () => within, database, collection, prefilter, options, false);
  }

  /** The database, each statement cancelled at `deadline` (the database stops working too). */
  private within(deadline: number | undefined): Queryable {
    const db = this.context.db;
    if (deadline === undefined) return db;
    return { query: (text, values, planning) => db.queryWithin(deadline - performance.now(), text, values, planning) };
  }

  /**
   * The candidates of `prefilter` in batches, each one statement (docs/decisions/0018-fair-shares.md):
   *
   * - wanted few (`want`): in natural order from the start, `ORDER BY seq LIMIT n` after the last
   *   batch's `seq`, the first batch `want` rows when the query is exact (they all match), else at
   *   least 256, the next ones four times larger, up to 1,000; the planner walks the collection in
   *   order or finds the few rows through the GIN index, as it estimates cheaper;
   * - wanted all: one statement of at most `max` + 1 rows (a filtered one unordered, then sorted:
   *   see `decode`), handed on in batches of 1,000 decoded in turn, so a caller checks its
   *   deadline between them and other requests are served.
   */
  private async *batches(
    client: () => Promise<Queryable>,
    database: string,
    collection: string,
    prefilter: Document,
    { want, max }: ScanOptions,
    forUpdate: boolean,
  ): AsyncGenerator<Document[]> {
    const lock = forUpdate ? " FOR UPDATE" : "";
    const ceiling = max === undefined ? Number.MAX_SAFE_INTEGER : max + 1;
    if (want === undefined) {
      const { where, params } = await pushdownInSlices(prefilter, 5, { hidden: true });
      const filtered = where.length > 0;
      // A filtered read finds its rows through the GIN index whatever the values: one plan, made
      // once per connection, its values hidden (pushdown.ts, `hiddenValue`; left to choose,
      // PostgreSQL planned it afresh every time).
      const conditions = `${placeOf("$1", "$2", "$3")}${where.map((w) => ` AND ${w}`).join("")}`;
      // A write locks its rows in one order (`seq`'s), as every other write of them does: locked in
      // the order each statement found them (a bitmap scan's, changed by every new row version),
      // two updates of the same rows deadlocked. The matches are found first, as a read finds them.
      const { rows } = await (await client()).query<{ seq: number; ejson: string }>(
        filtered && forUpdate
          ? `WITH matched AS MATERIALIZED (SELECT seq FROM documents WHERE ${conditions} LIMIT $4)
             SELECT seq, ejson FROM documents WHERE app_id = $1 AND db = $2 AND coll = $3
               AND seq IN (SELECT seq FROM matched) ORDER BY seq FOR UPDATE`
          : filtered
            ? `SELECT seq, ejson FROM documents WHERE ${conditions} LIMIT $4`
            : `SELECT seq, ejson FROM documents WHERE app_id = $1 AND db = $2 AND coll = $3 ORDER BY seq LIMIT $4${lock}`,
        [this.appId, database, collection, ceiling, ...params],
      );
      if (filtered) rows.sort((a, b) => a.seq - b.seq);
      for (let from = 0; from < rows.length; from += maxBatch)
        yield await decodeInSlices(rows.slice(from, from + maxBatch), true);
      return;
    }
    const { where, params } = await pushdownInSlices(prefilter, 5);
    const filter = where.map((w) => ` AND ${w}`).join("");
    let after = 0;
    // A power of four (a few statement texts): a few rows more than wanted cost little. When the
    // database cannot tell the matches (an inexact query), a first batch of 256: a user's few
    // documents in one statement, as a read of all of them would.
    const first = (await exactConditionsInSlices(prefilter)) === null ? Math.max(want, 256) : want;
    let size = Math.min(4 ** Math.ceil(Math.log(Math.max(1, first)) / Math.log(4)), maxBatch);
    let read = 0;
    for (;;) {
      // Planned for its values every time: how many rows match decides between walking the
      // collection in order and finding the rows by the index first (a cached plan would pick one
      // for every user: the walk, for a user with a few documents among many, reads them all).
      const { rows } = await (await client()).query<{ seq: number; ejson: string }>(
        `SELECT seq, ejson FROM documents WHERE app_id = $1 AND db = $2 AND coll = $3 AND seq > $4${filter}
         ORDER BY seq LIMIT ${Math.min(size, ceiling - read)}${lock}`,
        [this.appId, database, collection, after, ...params],
        "custom",
      );
      if (rows.length > 0) yield await decodeInSlices(rows, true);
      read += rows.length;
      if (rows.length < size || read >= ceiling) return;
      after = rows.at(-1)!.seq;
      size = Math.min(size * 4, maxBatch);
    }
  }

  /**
   * An exact query's matches as the rows hold them, in one statement read as `batches` would read
   * them (all of them, through the GIN index; or with `want`, the first ones in natural order) and
   * answered as **one row**: how many there are, their texts in natural order joined by U+001E (which
   * JSON text never holds unescaped) and, for each sort field, its values the same way (`doc -> 'f'`
   * as text, empty where the field is absent) — a hundred rows' decoding by the driver was a third
   * of the find. A value is taken only when it is a scalar (an array, a document or a regular
   * expression leaves the find to the scan), and the texts only while their running length stays
   * within what a reply can hold (past it, the scan sizes them exactly).
   */
  async exactTexts(
    database: string,
    collection: string,
    query: Document,
    { fields, want, max, deadline }: ExactTextsOptions,
  ): Promise<ExactTexts | undefined> {
    if ((await exactConditionsInSlices(query)) === null) return undefined;
    const ceiling = max === undefined ? Number.MAX_SAFE_INTEGER : max + 1;
    // All of the matches of a filtered query: through the GIN index, planned once (see `batches`;
    // without a filter there is no value to hide).
    const { where, params, truncated } = await pushdownInSlices(query, 5 + fields.length, {
      hidden: want === undefined,
    });
    // (Conditions left out: the rows are not all matches.)
    if (truncated) return undefined;
    const filtered = where.length > 0;
    const all = want === undefined && filtered;
    const within = `$${5 + fields.length + params.length}`;
    const keys = fields.map((_, i) => `, (doc -> $${5 + i}::text)::text AS k${i}`).join("");
    const matching = `SELECT seq, ejson${keys} FROM documents WHERE ${
      all ? placeOf("$1", "$2", "$3") : "app_id = $1 AND db = $2 AND coll = $3"
    }${where.map((w) => ` AND ${w}`).join("")}${want !== undefined || !filtered ? " ORDER BY seq" : ""} LIMIT $4`;
    // The window sorts the matches once, and the aggregates join them as it gives them: in natural
    // order (as PostgreSQL's documentation has it for input from a sorted subquery with nothing
    // else at its level; find-statements.test.ts moves rows to check it). An aggregate's own ORDER
    // BY sorted them again, once per aggregate. The running length counts bytes (each character is
    // at least one, so the bound holds), which PostgreSQL knows without reading the text. Together
    // a third less of the database's CPU for a user's 100 notes (633 → 433 µs, medians).
    const joined = (column: string) => `string_agg(${column}, chr(30)) FILTER (WHERE running <= ${within}::bigint)`;
    const text = `SELECT count(*)::int AS n, ${joined("ejson")} AS texts${fields
      .map((_, i) => `, ${joined(`coalesce(k${i}, '')`)} AS k${i}`)
      .join("")}
      FROM (SELECT *, sum(octet_length(ejson)) OVER (ORDER BY seq) AS running FROM (${matching}) AS m) AS w`;
    // The same plans as `batches`: the first few in natural order planned for their values; all of
    // them through the index, planned once per connection.
    const [limit, planning] = want !== undefined ? [Math.min(want, ceiling), "custom" as const] : [ceiling, undefined];
    const { rows } = await this.within(deadline).query<{ n: number; texts: string | null } & Record<string, unknown>>(
      text,
      [this.appId, database, collection, limit, ...fields, ...params, Math.floor(maxReplyBytes / 6)],
      planning,
    );
    const row = rows[0];
    const examined = row?.n ?? 0;
    const texts = row?.texts == null ? [] : row.texts.split(separator);
    if (texts.length !== examined) return undefined;
    const columns = fields.map((_, f) => (row![`k${f}`] as string | null)?.split(separator) ?? []);
    const found: ExactTexts = { texts, keys: new Array(examined), sizes: new Array(examined), examined };
    for (let i = 0; i < examined; i++) {
      const stored = jsonFromDatabase(texts[i]!);
      if (!repliedAsStored(stored)) return undefined;
      const key: Document = {};
      for (let f = 0; f < fields.length; f++) {
        const value = columns[f]![i];
        if (value === undefined || value === "") continue;
        const scalar = scalarFromStoredText(jsonFromDatabase(value));
        if (scalar === undefined) return undefined;
        key[fields[f]!] = scalar;
      }
      texts[i] = stored;
      found.keys[i] = key;
      found.sizes[i] = sizeBoundOfText(stored);
    }
    return found;
  }

  async countExact(
    database: string,
    collection: string,
    query: Document,
    { limit, deadline }: { limit?: number; deadline?: number } = {},
  ) {
    if ((await exactConditionsInSlices(query)) === null) return undefined;
    const { where, params, truncated } = await pushdownInSlices(query, 5);
    if (truncated) return undefined;
    const { rows } = await this.within(deadline).query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT 1 FROM documents WHERE app_id = $1 AND db = $2 AND coll = $3${where
        .map((w) => ` AND ${w}`)
        .join("")} LIMIT $4) AS matching`,
      [
        this.appId,
        database,
        collection,
        Math.min(limit ?? Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
        ...params,
      ],
    );
    return rows[0]?.n ?? 0;
  }

  /**
   * A whole collection in natural order, read through a cursor of `q`'s transaction a batch of
   * about `exportBatchChars` at a time, with whom its documents count for (a state export's).
   */
  reading(database: string, collection: string, q: Queryable): CollectionReading {
    const owners = new OwnerPlaces();
    type Row = { seq: number; ejson: string; owner: string | null; anonymous: boolean };
    const rows = cursorRows<Row>(
      q,
      `SELECT seq, ejson, owner, owner_anonymous AS anonymous FROM documents
        WHERE app_id = $1 AND db = $2 AND coll = $3 ORDER BY seq`,
      [this.appId, database, collection],
      { chars: exportBatchChars, of: (row) => row.ejson.length },
    );
    async function* documents(): AsyncGenerator<string> {
      for await (const batch of rows) {
        for (const row of batch)
          owners.next(row.owner === null ? undefined : { userId: row.owner, anonymous: row.anonymous });
        for (const doc of await decodeInSlices(batch, true)) yield toEJSONText(doc);
      }
    }
    return { database, collection, documents: documents(), owners: () => owners.list() };
  }

  async findByField(database: string, collection: string, field: string, value: string) {
    const docs = await this.read(database, collection, { [field]: value });
    return docs.find((doc) => doc[field] === value);
  }

  async findByFieldWithin(database: string, collection: string, field: string, value: string, maxBytes: number) {
    // (Read as a login's statement reads it: custom-data.ts.)
    const [row] = await this.context.db.rows<{ custom: string | null; custom_bytes: number }>(
      customDataSelect({ app: "$1", db: "$2", coll: "$3", field: "$4", userId: "$5", maxBytes: "$6" }),
      [this.appId, database, collection, field, value, maxBytes],
    );
    if (!row) return undefined;
    if (row.custom === null) return new OversizedCustomData(row.custom_bytes);
    return decode([{ seq: 0, ejson: row.custom }], true)[0];
  }

  async page(database: string, collection: string, skip: number, limit: number) {
    const [count] = await this.context.db.rows<{ n: number }>(
      "SELECT count(*)::int AS n FROM documents WHERE app_id = $1 AND db = $2 AND coll = $3",
      [this.appId, database, collection],
    );
    const rows = await this.context.db.rows<{ seq: number; ejson: string }>(
      `SELECT seq, ejson FROM documents WHERE app_id = $1 AND db = $2 AND coll = $3 ORDER BY seq OFFSET $4 LIMIT $5`,
      // Past any bigint is past the end.
      [
        this.appId,
        database,
        collection,
        Math.min(skip, Number.MAX_SAFE_INTEGER),
        Math.min(limit, Number.MAX_SAFE_INTEGER),
      ],
    );
    return { total: count?.n ?? 0, documents: decode(rows, true) };
  }

  async write<T>(
    database: string,
    collection: string,
    plan: (view: WriteView) => Promise<WritePlan<T>>,
    writer?: Writer,
  ): Promise<T> {
    return this.retried([collectionKey(database, collection)], () =>
      this.writeOnce(database, collection, plan, writer),
    );
  }

  /**
   * An attempt, made again on a deadlock, a serialization failure, or a collection (of `keys`)
   * dropped by another instance meanwhile: the plans are pure, so they can run again.
   */
  private async retried<T>(keys: string[], attempt: () => Promise<T>): Promise<T> {
    for (let made = 1; ; made++) {
      try {
        return await attempt();
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        const contended = code === "40P01" || code === "40001";
        if ((contended || code === "23503") && made < maxAttempts) {
          if (code === "23503") for (const key of keys) this.known.delete(key);
          // Apart a little, at random, so the writes that met do not meet again at once.
          if (contended) await sleep(Math.random() * 5 * made);
          continue;
        }
        // Met others' writes every time: no server error, the outage's answer (try again).
        if (contended) throw new StoreTimeoutError(`the write met other writes of its rows ${made} times (${code})`);
        throw error;
      }
    }
  }

  /**
   * One attempt. The transaction opens when the plan first reads (its reads must hold the rows);
   * a plan that only inserts one document never needs one: that is a single statement.
   */
  private async writeOnce<T>(
    database: string,
    collection: string,
    plan: (view: WriteView) => Promise<WritePlan<T>>,
    writer: Writer | undefined,
  ): Promise<T> {
    const tx = new LazyTransaction(this.context.db);
    try {
      const decided = await plan({
        scan: (prefilter, options = {}) =>
          this.batches(() => tx.client(), database, collection, prefilter, options, true),
      });
      const [only] = decided.changes;
      // (A change the app's triggers keep is written with its event: in a transaction.)
      const kept = this.wanted;
      const insertedEvents =
        !tx.open && decided.changes.length === 1 && only?.op === "insert" ? decided.events({ applied: 1 }) : null;
      if (insertedEvents && only?.op === "insert" && !(kept && insertedEvents.some(kept))) {
        const events = insertedEvents;
        stampEvents(events, false);
        const inserted = await this.insertOne(database, collection, only.doc, events, writer);
        if (inserted) this.changes.local(this.appId, events);
        return decided.result(inserted ? { applied: 1 } : { applied: 0, duplicateAt: 0 });
      }
      if (!tx.open && decided.changes.length === 0) return decided.result({ applied: 0 });
      const [applied] = await this.applyAndCommit(tx, [{ database, collection, plan: decided }], writer, false);
      return decided.result(applied!);
    } finally {
      await tx.end();
    }
  }

  async commit(parts: CommitPart[], writer?: Writer): Promise<void> {
    // In one order of collections, so two commits lock their rows in the same order.
    const keyOf = (part: CommitPart) => collectionKey(part.database, part.collection);
    const ordered = [...parts].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
    await this.retried(ordered.map(keyOf), () => this.commitOnce(ordered, writer));
  }

  /** One attempt: every part's reads hold their rows, all its changes go in one transaction. */
  private async commitOnce(parts: CommitPart[], writer: Writer | undefined): Promise<void> {
    const tx = new LazyTransaction(this.context.db);
    try {
      const decided: WritePlan<void>[] = [];
      for (const { database, collection, plan } of parts) {
        decided.push(
          await plan({
            scan: (prefilter, options = {}) =>
              this.batches(() => tx.client(), database, collection, prefilter, options, true),
          }),
        );
      }
      if (!tx.open && decided.every((plan) => plan.changes.length === 0)) return;
      const steps = parts.map(({ database, collection }, i) => ({ database, collection, plan: decided[i]! }));
      await this.applyAndCommit(tx, steps, writer, true);
    } finally {
      await tx.end();
    }
  }

  /**
   * Applies the decided changes of each collection in the transaction, announces their events
   * (keeping those the app's triggers want), commits, and tells this instance's subscribers.
   * `atomic`: an insert of an existing `_id` refuses them all (WriteConflictError) where a single
   * write stops there.
   */
  private async applyAndCommit(
    tx: LazyTransaction,
    steps: { database: string; collection: string; plan: WritePlan<unknown> }[],
    writer: Writer | undefined,
    atomic: boolean,
  ): Promise<AppliedChanges[]> {
    const client = await tx.client();
    const unanswered = new Unanswered();
    const applied: AppliedChanges[] = [];
    const events: ChangeEvent[] = [];
    for (const { database, collection, plan } of steps) {
      const done = await this.apply(client, database, collection, plan.changes, writer, unanswered);
      if (atomic && done.duplicateAt !== undefined) throw new WriteConflictError();
      applied.push(done);
      events.push(...plan.events(done));
    }
    // (A transaction's events share its commit's cluster time.)
    await this.announceAndCommit(tx, client, events, atomic, unanswered);
    return applied;
  }

  /**
   * Stamps the transaction's events, announces them with it (keeping those the app's triggers
   * want), commits, and tells this instance's subscribers. In the usual case (a few events, none
   * kept, none suspending a trigger) the announcement goes out with COMMIT, after the changes not
   * answered yet (`unanswered`): one round trip for all three, whose failures are thrown once it
   * is back (a COMMIT after a failed statement rolls the transaction back).
   */
  private async announceAndCommit(
    tx: LazyTransaction,
    client: Queryable,
    events: ChangeEvent[],
    together: boolean,
    unanswered = new Unanswered(),
  ): Promise<void> {
    stampEvents(events, together);
    const keep = this.wanted ? events.filter(this.wanted) : [];
    const suspending =
      this.suspender !== null && events.some((e) => e.operationType === "drop" || e.operationType === "rename");
    let ids: (string | undefined)[] = [];
    if (keep.length === 0 && !suspending && this.notifyUnanswered(client, events, unanswered)) {
      await tx.commit();
      await unanswered.check();
    } else {
      // (Each statement below waits for its answer: the earlier ones' failures first.)
      await unanswered.check();
      await this.notify(client, events);
      await this.suspendTriggersOf(client, events);
      ids = keep.length > 0 ? await keepEvents(client, this.context, this.appId, keep) : [];
      await tx.commit();
    }
    keep.forEach((event, i) => {
      event.durableId = ids[i];
    });
    this.changes.local(this.appId, events);
  }

  /** Collections this instance has seen exist (their row need not be written again). */
  private readonly known = new Set<string>();

  /** Which events are kept for the app's database triggers (keepEvents). */
  private wanted: ((event: ChangeEvent) => boolean) | null = null;

  keepEvents(wanted: ((event: ChangeEvent) => boolean) | null): void {
    this.wanted = wanted;
  }

  /** Which database triggers a change suspends (suspendTriggers). */
  private suspender: ((event: ChangeEvent) => TriggerSuspension[]) | null = null;

  suspendTriggers(decide: ((event: ChangeEvent) => TriggerSuspension[]) | null): void {
    this.suspender = decide;
  }

  /**
   * The triggers the transaction's drops and renames suspend, kept in it (a trigger suspended
   * already stays as it was), and the other instances told when it commits (decision 0057).
   */
  private async suspendTriggersOf(client: Queryable, events: ChangeEvent[]): Promise<void> {
    if (!this.suspender) return;
    const suspensions: TriggerSuspension[] = [];
    for (const event of events)
      if (event.operationType === "drop" || event.operationType === "rename")
        suspensions.push(...this.suspender(event));
    if (suspensions.length === 0) return;
    if (await keepSuspensions(client, this.appId, suspensions))
      await client.query("SELECT pg_notify($1, $2)", [
        channels.apps,
        JSON.stringify({ i: this.context.instanceId, a: this.appId, c: "triggers" }),
      ]);
  }

  /**
   * The collection's row, written when it has none: in `q`'s transaction, or (`q` the pool) in one
   * of its own. A new one is made under the app's collection lock (to the end of that
   * transaction), so that writes racing on any instance cannot take the app past its limit of
   * collections (QuotaExceededError "collections", nothing written).
   */
  private async ensureCollection(q: Queryable, database: string, collection: string): Promise<void> {
    const key = collectionKey(database, collection);
    if (this.known.has(key)) return;
    const place = [this.appId, database, collection];
    const { rowCount } = await q.query("SELECT 1 FROM collections WHERE app_id = $1 AND db = $2 AND coll = $3", place);
    if (rowCount === 0) {
      const db = this.context.db;
      await (q === db ? db.transaction((client) => this.makeCollection(client, place)) : this.makeCollection(q, place));
    }
    this.known.add(key);
  }

  private async makeCollection(q: Queryable, place: string[]): Promise<void> {
    await q.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [collectionLock, this.appId]);
    // (A statement after the lock: it sees every collection made by the lock's earlier holders.)
    const { rows } = await q.query<{ there: boolean; held: string; max: string | null }>(
      `WITH made AS (
         INSERT INTO collections (app_id, db, coll)
         SELECT $1, $2, $3
          WHERE (SELECT count(*) FROM collections WHERE app_id = $1)
                < coalesce((SELECT max_collections FROM app_usage WHERE app_id = $1), 9223372036854775807)
         ON CONFLICT DO NOTHING RETURNING 1)
       SELECT EXISTS (SELECT 1 FROM made)
                OR EXISTS (SELECT 1 FROM collections WHERE app_id = $1 AND db = $2 AND coll = $3) AS there,
              (SELECT count(*) FROM collections WHERE app_id = $1) AS held,
              (SELECT max_collections FROM app_usage WHERE app_id = $1) AS max`,
      place,
    );
    const [row] = rows;
    if (row && !row.there) throw new QuotaExceededError("collections", Number(row.max), Number(row.held));
  }

  /**
   * One document: inserted and announced together, or neither (an existing `_id`); with the
   * insertOne actions of other requests when they arrive together (insert-groups.ts).
   */
  private async insertOne(
    database: string,
    collection: string,
    doc: Document,
    events: ChangeEvent[],
    writer: Writer | undefined,
  ): Promise<boolean> {
    const db = this.context.db;
    const [owner, anonymous] = ownerColumns(writer);
    await this.ensureCollection(db, database, collection);
    const text = holdsWide(doc) ? await insertedTextInSlices(doc) : insertedText(doc);
    const payloads = this.payloads(events);
    if (payloads.some((p) => p.large !== undefined)) {
      // An event too large for a notification goes through change_log: a transaction after all.
      return db.transaction(async (client) => {
        const { rowCount } = await client.query(
          `INSERT INTO documents (app_id, db, coll, id_key, doc, ejson, owner, owner_anonymous)
           VALUES ($1, $2, $3, $4, $5::text::jsonb, $5, $6, $7) ON CONFLICT DO NOTHING`,
          [this.appId, database, collection, idRowKey(doc._id), jsonParam(text), owner, anonymous],
        );
        if (rowCount === 1) await this.notify(client, events);
        return rowCount === 1;
      });
    }
    return this.groups.insert({
      database,
      collection,
      key: idRowKey(doc._id),
      text: jsonParam(text),
      bytes: text.length,
      owner,
      anonymous,
      payload: payloads[0]?.small ?? "",
    });
  }

  /** One insertOne in a statement of its own. */
  private async insertAlone(insert: PendingInsert): Promise<boolean> {
    const { rows } = await this.context.db.query<{ id_key: string }>(
      `WITH inserted AS (
         INSERT INTO documents (app_id, db, coll, id_key, doc, ejson, owner, owner_anonymous)
         VALUES ($1, $2, $3, $4, $5::text::jsonb, $5, $8, $9) ON CONFLICT DO NOTHING RETURNING id_key)
       SELECT id_key, (SELECT pg_notify($6, $7) WHERE $7 <> '' AND ${watched("$1")}) FROM inserted`,
      [
        this.appId,
        insert.database,
        insert.collection,
        insert.key,
        insert.text,
        channels.changes,
        insert.payload,
        insert.owner,
        insert.anonymous,
      ],
    );
    return rows.length === 1;
  }

  private async apply(
    client: Queryable,
    database: string,
    collection: string,
    changes: DocumentChange[],
    writer: Writer | undefined,
    unanswered: Unanswered,
  ): Promise<AppliedChanges> {
    const head = [this.appId, database, collection];
    let done = 0;
    while (done < changes.length) {
      const op = changes[done]!.op;
      let end = done;
      while (end < changes.length && changes[end]!.op === op) end++;
      const group = changes.slice(done, end);
      if (op === "insert") {
        // (Its answer is read: the earlier statements' failures first.)
        await unanswered.check();
        const duplicateAt = await this.insert(client, database, collection, group as { doc: Document }[], writer);
        if (duplicateAt !== undefined) return { applied: done + duplicateAt, duplicateAt: done + duplicateAt };
      } else if (op === "replace") {
        const docs = (group as { doc: Document }[]).map((c) => c.doc);
        const keys: string[] = [];
        const texts: JsonParam[] = [];
        const turns = new Turns();
        for (const doc of docs) {
          keys.push(idRowKey(doc._id));
          // (A wide document's text is written in slices: wide-values.ts.)
          texts.push(holdsWide(doc) ? jsonParam(await textInSlices(doc)) : storedDocument(doc));
          await turns.maybe();
        }
        // A document counts for the user who last wrote it (docs/decisions/0018-fair-shares.md).
        if (texts.length === 1) {
          // One document (an update's usual case) as plain values: the driver writes an array's
          // texts escaped, a step of ~35 ms more for a document of 200,000 fields.
          unanswered.send(
            client.query(
              `UPDATE documents SET doc = $5::text::jsonb, ejson = $5, owner = $6, owner_anonymous = $7
                WHERE app_id = $1 AND db = $2 AND coll = $3 AND id_key = $4`,
              [...head, keys[0], texts[0], ...ownerColumns(writer)],
            ),
          );
        } else {
          for (const [from, to] of statementParts(texts)) {
            unanswered.send(
              client.query(
                `UPDATE documents d SET doc = v.t::jsonb, ejson = v.t, owner = $6, owner_anonymous = $7
                   FROM unnest($4::text[], $5::text[]) AS v(k, t)
                  WHERE d.app_id = $1 AND d.db = $2 AND d.coll = $3 AND d.id_key = v.k`,
                [...head, keys.slice(from, to), texts.slice(from, to), ...ownerColumns(writer)],
              ),
            );
          }
        }
      } else {
        const keys = (group as { id: unknown }[]).map((c) => idRowKey(c.id));
        for (const [from, to] of statementParts(keys)) {
          unanswered.send(
            client.query("DELETE FROM documents WHERE app_id = $1 AND db = $2 AND coll = $3 AND id_key = ANY($4)", [
              ...head,
              keys.slice(from, to),
            ]),
          );
        }
      }
      done = end;
    }
    return { applied: changes.length };
  }

  /**
   * Inserts in order up to the first `_id` that exists (in the collection or earlier in the batch):
   * answers its index, or undefined when all went in. One statement in the usual case; a part of
   * the documents a statement when they are many (see statementParts).
   */
  private async insert(
    client: Queryable,
    database: string,
    collection: string,
    changes: { doc: Document }[],
    writer: Writer | undefined,
  ): Promise<number | undefined> {
    // The rows' keys and texts, made in slices (an insertMany of many documents lets other
    // requests run meanwhile).
    const keys: string[] = [];
    const texts: JsonParam[] = [];
    const turns = new Turns();
    for (const { doc } of changes) {
      keys.push(idRowKey(doc._id));
      texts.push(jsonParam(holdsWide(doc) ? await insertedTextInSlices(doc) : insertedText(doc)));
      await turns.maybe();
    }
    const seen = new Set<string>();
    let batchDuplicate: number | undefined;
    for (const [i, key] of keys.entries()) {
      if (seen.has(key)) {
        batchDuplicate = i;
        break;
      }
      seen.add(key);
    }
    const count = batchDuplicate ?? keys.length;
    if (count === 0) return batchDuplicate;
    const head = [this.appId, database, collection];
    await this.ensureCollection(client, database, collection);
    for (const [from, to] of statementParts(texts.slice(0, count))) {
      const { rows } = await client.query<{ id_key: string }>(
        `INSERT INTO documents (app_id, db, coll, id_key, doc, ejson, owner, owner_anonymous)
         SELECT $1, $2, $3, v.k, v.t::jsonb, v.t, $6, $7 FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS v(k, t, n)
          ORDER BY v.n
         ON CONFLICT DO NOTHING RETURNING id_key`,
        [...head, keys.slice(from, to), texts.slice(from, to), ...ownerColumns(writer)],
      );
      this.context.noteInserted(rows.length);
      if (rows.length === to - from) continue;
      // An `_id` existed: MongoDB's ordered insert stops there, so what went in after it comes out again.
      const inserted = new Set(rows.map((r) => r.id_key));
      const first = keys.findIndex((key, i) => i >= from && i < to && !inserted.has(key));
      const after = keys.slice(first + 1, to).filter((key) => inserted.has(key));
      if (after.length > 0) {
        await client.query("DELETE FROM documents WHERE app_id = $1 AND db = $2 AND coll = $3 AND id_key = ANY($4)", [
          ...head,
          after,
        ]);
      }
      return first;
    }
    return batchDuplicate;
  }

  /**
   * The notification payloads of some events: batches of small ones, and each one too large for a
   * notification on its own (sent through change_log).
   */
  private payloads(events: ChangeEvent[], texts = events.map(eventText)): { small?: string; large?: string }[] {
    const out: { small?: string; large?: string }[] = [];
    let batch: string[] = [];
    let size = 0;
    const head = `{"a":${JSON.stringify(this.appId)},"e":[`;
    const flush = () => {
      if (batch.length > 0) out.push({ small: `${head}${batch.join(",")}]}` });
      batch = [];
      size = 0;
    };
    for (const text of texts) {
      // (No shorter in UTF-8 than in UTF-16 units: a long one is not measured, nor a large
      // document's text put together in one piece for it, on the main thread.)
      const bytes = text.length > maxPayloadBytes ? text.length : Buffer.byteLength(text);
      if (bytes > maxPayloadBytes - 200) {
        flush();
        out.push({ large: text });
        continue;
      }
      if (size + bytes > maxPayloadBytes - 200) flush();
      batch.push(text);
      size += bytes + 1;
    }
    flush();
    return out;
  }

  /**
   * `notify` without waiting, when the events are few and each fits a notification: each
   * notification in a statement that sends it only while some instance watches the app (no
   * statement of its own to ask first). False, with nothing sent, for the others: their texts are
   * made only when someone watches (an insertMany of many documents), or go through change_log.
   */
  private notifyUnanswered(client: Queryable, events: ChangeEvent[], unanswered: Unanswered): boolean {
    if (events.length > maxEventsAnnouncedUnasked || events.some(holdsWide)) return false;
    const payloads = this.payloads(events);
    if (payloads.some((payload) => payload.small === undefined)) return false;
    for (const { small } of payloads)
      unanswered.send(
        client.query(`SELECT pg_notify($2, $3) WHERE ${watched("$1")}`, [this.appId, channels.changes, small]),
      );
    return true;
  }

  /**
   * Sends the events with the transaction (delivered to every instance when, and if, it commits),
   * when some instance watches the app.
   */
  private async notify(client: Queryable, events: ChangeEvent[]): Promise<void> {
    if (events.length === 0) return;
    const { rows } = await client.query<{ watched: boolean }>(`SELECT ${watched("$1")} AS watched`, [this.appId]);
    if (!rows[0]?.watched) return;
    // (Their texts in slices: an insertMany of many documents lets other requests run meanwhile, and
    // a wide document's event is written in slices of its own.)
    const texts: string[] = [];
    const turns = new Turns();
    for (const event of events) {
      texts.push(holdsWide(event) ? await textInSlices(event) : eventText(event));
      await turns.maybe();
    }
    for (const payload of this.payloads(events, texts)) {
      if (payload.small !== undefined) {
        await client.query("SELECT pg_notify($1, $2)", [channels.changes, payload.small]);
        continue;
      }
      const { rows } = await client.query<{ id: number }>("INSERT INTO change_log (payload) VALUES ($1) RETURNING id", [
        payload.large,
      ]);
      await client.query("DELETE FROM change_log WHERE created_at < now() - interval '10 minutes'");
      await client.query("SELECT pg_notify($1, $2)", [
        channels.changes,
        `{"a":${JSON.stringify(this.appId)},"r":${rows[0]!.id}}`,
      ]);
    }
  }

  async collections(q: Queryable = this.context.db): Promise<CollectionInfo[]> {
    return rowsOf<CollectionInfo>(
      q,
      `SELECT c.db AS database, c.coll AS collection, count(d.id_key)::int AS count
         FROM collections c LEFT JOIN documents d ON d.app_id = c.app_id AND d.db = c.db AND d.coll = c.coll
        WHERE c.app_id = $1 GROUP BY c.db, c.coll, c.seq ORDER BY c.seq`,
      [this.appId],
    );
  }

  /** Drops the collection with its documents; when it existed, its `drop` event goes out with it. */
  async drop(database: string, collection: string): Promise<boolean> {
    this.known.delete(collectionKey(database, collection));
    const tx = new LazyTransaction(this.context.db);
    try {
      const client = await tx.client();
      const { rowCount } = await client.query("DELETE FROM collections WHERE app_id = $1 AND db = $2 AND coll = $3", [
        this.appId,
        database,
        collection,
      ]);
      if (rowCount !== 1) return false;
      await this.announceAndCommit(tx, client, [{ database, collection, operationType: "drop" }], false);
      return true;
    } finally {
      await tx.end();
    }
  }

  subscribe(listener: (event: ChangeEvent) => void, options: { local?: boolean } = {}): Promise<() => void> {
    return options.local
      ? Promise.resolve(this.changes.subscribeLocal(this.appId, listener))
      : this.changes.subscribe(this.appId, listener);
  }

  get listenerCount(): number {
    return this.changes.count(this.appId);
  }
}

/** A change event as a notification carries it. */
const eventText = (event: ChangeEvent) => toEJSONText(event);

/** SQL: someone watches the app named by parameter `param` now. */
const watched = (param: string) => `EXISTS (SELECT 1 FROM watchers WHERE app_id = ${param} AND expires_at > now())`;

/** How long a watcher row lives without being renewed (an instance that died stops renewing). */
const watcherTtlSeconds = 30;
const renewEveryMs = 10_000;
/**
 * A stream skips the registration only while its app's row is known to stay live for this long
 * yet: by then the next renewal (every `renewEveryMs`, while the app has streams here) has been
 * sent, and it extends the row before its lease ends or finds that it may have lapsed.
 */
const liveMarginMs = renewEveryMs;

/**
 * An app this instance registered as watched: `ready` settles once its row is committed and the
 * writes that were running then have ended; from then on the row has been live without a gap
 * until at least `liveUntil` (this process's clock: the row's expiry is counted from a moment after
 * the statement that set it was sent, so counting from the sending errs on the early side).
 */
interface Watching {
  ready: Promise<void>;
  liveUntil: number;
}

/**
 * The change events of every app, from the notifications of every instance, handed to this
 * instance's subscribers one notification after another (so a large event fetched from change_log
 * keeps its place); and the `local` subscribers, who hear of this instance's own writes at commit.
 * While an app has subscribers here, this instance keeps a row in `watchers`, so that writers on
 * every instance announce the app's changes. Every start is a new instance: a stop removes its
 * rows, and a stream's start the rows of instances that stopped renewing theirs a lease ago (they
 * died), so that the rows a write of a watched app reads stay those of live instances.
 */
export class ChangeHub {
  private readonly listeners = new Map<string, Set<(event: ChangeEvent) => void>>();
  private readonly locals = new Map<string, Set<(event: ChangeEvent) => void>>();
  private queue: Promise<void> = Promise.resolve();
  private renewal: NodeJS.Timeout | null = null;
  private readonly watching = new Map<string, Watching>();

  constructor(private readonly context: PgContext) {
    context.subscribe(channels.changes, (payload) => {
      this.queue = this.queue.then(() => this.handle(payload)).catch(() => undefined);
    });
  }

  async subscribe(appId: string, listener: (event: ChangeEvent) => void): Promise<() => void> {
    if (!this.context.listener.listening) {
      this.context.listener.wake();
      throw new StoreUnavailableError("not listening for changes");
    }
    await this.watch(appId);
    let set = this.listeners.get(appId);
    if (!set) {
      set = new Set();
      this.listeners.set(appId, set);
    }
    set.add(listener);
    this.renewWhileWatching();
    return () => {
      set.delete(listener);
      // The row is left to expire: streams come and go, and announcing for a while longer is harmless.
      if (set.size === 0 && this.listeners.get(appId) === set) this.listeners.delete(appId);
    };
  }

  subscribeLocal(appId: string, listener: (event: ChangeEvent) => void): () => void {
    let set = this.locals.get(appId);
    if (!set) {
      set = new Set();
      this.locals.set(appId, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.locals.get(appId) === set) this.locals.delete(appId);
    };
  }

  /** This instance's own committed changes, for its local subscribers. */
  local(appId: string, events: ChangeEvent[]): void {
    const set = this.locals.get(appId);
    if (!set) return;
    for (const event of events) for (const listener of [...set]) listener(event);
  }

  count(appId: string): number {
    return (this.listeners.get(appId)?.size ?? 0) + (this.locals.get(appId)?.size ?? 0);
  }

  /**
   * Makes sure the app's writes are announced from now on. The first stream of an app registers
   * this instance as a watcher of it (`register`); while that row is known to stay live, the next
   * streams need nothing: no statement, no wait. (Under load the wait for the writes in flight was
   * most of a stream's opening, and every stream paid it.)
   */
  private async watch(appId: string): Promise<void> {
    const known = this.watching.get(appId);
    if (known && performance.now() < known.liveUntil - liveMarginMs) return known.ready;
    const sent = performance.now();
    const watching: Watching = { ready: this.register(appId), liveUntil: sent + watcherTtlSeconds * 1000 };
    this.watching.set(appId, watching);
    try {
      await watching.ready;
    } catch (error) {
      if (this.watching.get(appId) === watching) this.watching.delete(appId);
      throw error;
    }
  }

  /**
   * Registers this instance as a watcher of the app, then waits for the writes that were already
   * running: one of them may have looked for watchers before the row existed, so it would not
   * announce a change that commits after the stream starts. Once they have ended, every later
   * write sees the row (each statement takes a new snapshot) and announces its changes.
   */
  private async register(appId: string): Promise<void> {
    const db = this.context.db;
    await db.query(
      `WITH died AS (DELETE FROM watchers WHERE expires_at < now() - make_interval(secs => $3))
       INSERT INTO watchers (app_id, instance_id, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
       ON CONFLICT (app_id, instance_id) DO UPDATE SET expires_at = excluded.expires_at`,
      [appId, this.context.instanceId, watcherTtlSeconds],
    );
    // Taken after the row is committed: a write that looked before then is in progress now, or done.
    const { rows } = await db.query<{ xids: string[] | null }>(
      "SELECT array_agg(x::text) AS xids FROM pg_snapshot_xip(pg_current_snapshot()) AS x",
    );
    const running = rows[0]?.xids ?? [];
    if (running.length === 0) return;
    const deadline = Date.now() + 5_000;
    for (;;) {
      const [left] = await db.rows<{ n: number }>(
        "SELECT count(*)::int AS n FROM unnest($1::xid8[]) AS x WHERE pg_xact_status(x) = 'in progress'",
        [running],
      );
      if ((left?.n ?? 0) === 0 || Date.now() > deadline) return;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }

  /** Keeps this instance's watcher rows alive while it has subscribers. */
  private renewWhileWatching(): void {
    if (this.renewal) return;
    this.renewal = setInterval(() => {
      const apps = [...this.listeners.keys()];
      if (apps.length === 0) {
        if (this.renewal) clearInterval(this.renewal);
        this.renewal = null;
        return;
      }
      // (An upsert: a row expired a lease ago may have been removed as an instance's that died.)
      const sent = performance.now();
      this.context.db
        .query(
          `INSERT INTO watchers (app_id, instance_id, expires_at)
           SELECT app, $2, now() + make_interval(secs => $3) FROM unnest($1::text[]) AS app
           ON CONFLICT (app_id, instance_id) DO UPDATE SET expires_at = excluded.expires_at`,
          [apps, this.context.instanceId, watcherTtlSeconds],
        )
        .then(
          () => {
            // A row renewed before it expired has been live without a gap; one that lapsed (the
            // renewal came late) may have been missed by writes still running: the next stream
            // registers again, and waits for them.
            const done = performance.now();
            for (const app of apps) {
              const known = this.watching.get(app);
              if (!known) continue;
              if (done < known.liveUntil) known.liveUntil = Math.max(known.liveUntil, sent + watcherTtlSeconds * 1000);
              else this.watching.delete(app);
            }
          },
          () => undefined,
        );
    }, renewEveryMs);
    this.renewal.unref();
  }

  /** Stops renewing and removes this instance's rows (the store is closing). */
  async close(): Promise<void> {
    if (this.renewal) clearInterval(this.renewal);
    this.renewal = null;
    this.watching.clear();
    // (Left to expire when the database is away.)
    await this.context.db
      .query("DELETE FROM watchers WHERE instance_id = $1", [this.context.instanceId])
      .catch(() => undefined);
  }

  private async handle(payload: string): Promise<void> {
    const message = JSON.parse(payload) as { a: string; e?: unknown[]; r?: number };
    const listeners = this.listeners.get(message.a);
    if (!listeners || listeners.size === 0) return;
    const events: ChangeEvent[] = [];
    if (message.r !== undefined) {
      const [row] = await this.context.db.rows<{ payload: string }>("SELECT payload FROM change_log WHERE id = $1", [
        message.r,
      ]);
      // A large event's text (a wide document's: read in slices, as a large row is).
      if (row) events.push((await fromEJSONTextInSlices(jsonFromDatabase(row.payload))) as ChangeEvent);
    } else for (const raw of message.e ?? []) events.push(fromEJSONText(JSON.stringify(raw)) as ChangeEvent);
    for (const event of events) for (const listener of [...listeners]) listener(event);
  }
}

const collectionKey = (database: string, collection: string) => `${database}\u0000${collection}`;

/** The most events a write announces without first asking whether anyone watches its app. */
const maxEventsAnnouncedUnasked = 16;

/**
 * Statements of a transaction sent without waiting for their answers (the connection is
 * pipelined: each goes out as it is made), so that they share a round trip with what follows;
 * `check` waits for their answers and throws the first failure among them.
 */
class Unanswered {
  private answers: Promise<{ error: unknown } | undefined>[] = [];

  send(answer: Promise<unknown>): void {
    this.answers.push(
      answer.then(
        () => undefined,
        (error: unknown) => ({ error }),
      ),
    );
  }

  async check(): Promise<void> {
    const answers = this.answers;
    this.answers = [];
    for (const answer of answers) {
      const failed = await answer;
      if (failed) throw failed.error;
    }
  }
}

/** A transaction begun on first use, committed by `commit`, else rolled back by `end`. */
class LazyTransaction {
  private opened: Promise<{ client: Queryable; commit(): Promise<void>; rollback(): Promise<void> }> | null = null;
  private settled = false;

  constructor(private readonly db: Database) {}

  get open(): boolean {
    return this.opened !== null;
  }

  async client(): Promise<Queryable> {
    this.opened ??= this.db.begin();
    return (await this.opened).client;
  }

  async commit(): Promise<void> {
    if (!this.opened) return;
    this.settled = true;
    await (await this.opened).commit();
  }

  async end(): Promise<void> {
    if (!this.opened || this.settled) return;
    this.settled = true;
    const tx = await this.opened.catch(() => null);
    await tx?.rollback();
  }
}

/** Keeps an app's trigger suspensions (one suspended already stays as it was); how many were new. */
export async function keepSuspensions(
  client: Queryable,
  appId: string,
  suspensions: TriggerSuspension[],
): Promise<number> {
  if (suspensions.length === 0) return 0;
  const { rowCount } = await client.query(
    `INSERT INTO trigger_suspensions (app_id, name, since, reason)
     SELECT $1, s.name, s.since, s.reason FROM jsonb_to_recordset($2::jsonb) AS s(name text, since bigint, reason text)
     ON CONFLICT DO NOTHING`,
    [appId, JSON.stringify(suspensions)],
  );
  return rowCount ?? 0;
}
