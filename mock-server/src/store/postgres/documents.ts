/**
 * An app's MongoDB documents in PostgreSQL: one row per document, canonical Extended JSON as jsonb
 * (for SQL filters and the GIN index) and as text (MongoDB's field order), natural order by `seq`.
 * A write reads its candidates `FOR UPDATE`, applies the plan's changes and sends the change events
 * as notifications, all in one transaction: committed before the caller hears of it, and seen by
 * every instance's change streams in commit order.
 */
import { type ChangeEvent, type Document, fromEJSONText, idKey, toEJSON, toEJSONText } from "../../data/documents.ts";
import {
  type AppliedChanges,
  type CollectionInfo,
  type DocumentChange,
  type DocumentStore,
  StoreUnavailableError,
  type WritePlan,
  type WriteView,
} from "../store.ts";
import type { PgContext } from "./context.ts";
import type { Queryable } from "./database.ts";
import { channels } from "./notifications.ts";
import { pushdown } from "./pushdown.ts";

/** A notification's payload is limited to 8000 bytes; larger events go through change_log. */
const maxPayloadBytes = 7_900;
/** Deadlocks and serialization failures are retried this often (the plan is pure, so it can run again). */
const maxAttempts = 4;

const decode = (rows: { ejson: string }[]): Document[] => rows.map((r) => fromEJSONText(r.ejson) as Document);

export class PgDocuments implements DocumentStore {
  constructor(
    private readonly context: PgContext,
    private readonly appId: string,
    private readonly changes: ChangeHub,
  ) {}

  private select(database: string, collection: string, prefilter: Document, forUpdate: boolean) {
    const { where, params } = pushdown(prefilter, 4);
    return {
      text: `SELECT ejson FROM documents WHERE app_id = $1 AND db = $2 AND coll = $3${where
        .map((w) => ` AND ${w}`)
        .join("")} ORDER BY seq${forUpdate ? " FOR UPDATE" : ""}`,
      values: [this.appId, database, collection, ...params],
    };
  }

  async read(database: string, collection: string, prefilter: Document): Promise<Document[]> {
    const { text, values } = this.select(database, collection, prefilter, false);
    return decode(await this.context.db.rows<{ ejson: string }>(text, values));
  }

  async findByField(database: string, collection: string, field: string, value: string) {
    const docs = await this.read(database, collection, { [field]: value });
    return docs.find((doc) => doc[field] === value);
  }

  async page(database: string, collection: string, skip: number, limit: number) {
    const [count] = await this.context.db.rows<{ n: number }>(
      "SELECT count(*)::int AS n FROM documents WHERE app_id = $1 AND db = $2 AND coll = $3",
      [this.appId, database, collection],
    );
    const rows = await this.context.db.rows<{ ejson: string }>(
      `SELECT ejson FROM documents WHERE app_id = $1 AND db = $2 AND coll = $3 ORDER BY seq OFFSET $4 LIMIT $5`,
      [this.appId, database, collection, skip, limit],
    );
    return { total: count?.n ?? 0, documents: decode(rows) };
  }

  async write<T>(database: string, collection: string, plan: (view: WriteView) => Promise<WritePlan<T>>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.context.db.transaction(async (client) => {
          const view: WriteView = {
            read: async (prefilter) => {
              const { text, values } = this.select(database, collection, prefilter, true);
              return decode((await client.query<{ ejson: string }>(text, values)).rows);
            },
          };
          const decided = await plan(view);
          const applied = await this.apply(client, database, collection, decided.changes);
          await this.notify(client, decided.events(applied));
          return decided.result(applied);
        });
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if ((code === "40P01" || code === "40001") && attempt < maxAttempts) continue;
        throw error;
      }
    }
  }

  private async apply(
    client: Queryable,
    database: string,
    collection: string,
    changes: DocumentChange[],
  ): Promise<AppliedChanges> {
    const head = [this.appId, database, collection];
    let done = 0;
    while (done < changes.length) {
      const op = changes[done]!.op;
      let end = done;
      while (end < changes.length && changes[end]!.op === op) end++;
      const group = changes.slice(done, end);
      if (op === "insert") {
        const duplicateAt = await this.insert(client, database, collection, group as { doc: Document }[]);
        if (duplicateAt !== undefined) return { applied: done + duplicateAt, duplicateAt: done + duplicateAt };
      } else if (op === "replace") {
        const docs = (group as { doc: Document }[]).map((c) => c.doc);
        await client.query(
          `UPDATE documents d SET doc = v.t::jsonb, ejson = v.t
             FROM unnest($4::text[], $5::text[]) AS v(k, t)
            WHERE d.app_id = $1 AND d.db = $2 AND d.coll = $3 AND d.id_key = v.k`,
          [...head, docs.map((d) => idKey(d._id)), docs.map(toEJSONText)],
        );
      } else {
        await client.query("DELETE FROM documents WHERE app_id = $1 AND db = $2 AND coll = $3 AND id_key = ANY($4)", [
          ...head,
          (group as { id: unknown }[]).map((c) => idKey(c.id)),
        ]);
      }
      done = end;
    }
    return { applied: changes.length };
  }

  /**
   * Inserts in order up to the first `_id` that exists (in the collection or earlier in the batch):
   * answers its index, or undefined when all went in. One statement in the usual case.
   */
  private async insert(
    client: Queryable,
    database: string,
    collection: string,
    changes: { doc: Document }[],
  ): Promise<number | undefined> {
    const keys = changes.map((c) => idKey(c.doc._id));
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
    await client.query("INSERT INTO collections (app_id, db, coll) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", head);
    const { rows } = await client.query<{ id_key: string }>(
      `INSERT INTO documents (app_id, db, coll, id_key, doc, ejson)
       SELECT $1, $2, $3, v.k, v.t::jsonb, v.t FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS v(k, t, n)
        ORDER BY v.n
       ON CONFLICT DO NOTHING RETURNING id_key`,
      [...head, keys.slice(0, count), changes.slice(0, count).map((c) => toEJSONText(c.doc))],
    );
    if (rows.length === count) return batchDuplicate;
    // An `_id` existed: MongoDB's ordered insert stops there, so what went in after it comes out again.
    const inserted = new Set(rows.map((r) => r.id_key));
    const first = keys.findIndex((key, i) => i < count && !inserted.has(key));
    const after = keys.slice(first + 1, count).filter((key) => inserted.has(key));
    if (after.length > 0) {
      await client.query("DELETE FROM documents WHERE app_id = $1 AND db = $2 AND coll = $3 AND id_key = ANY($4)", [
        ...head,
        after,
      ]);
    }
    return first;
  }

  /** Sends the events with the transaction: delivered to every instance when (and if) it commits. */
  private async notify(client: Queryable, events: ChangeEvent[]): Promise<void> {
    let batch: string[] = [];
    let size = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      const payload = `{"a":${JSON.stringify(this.appId)},"e":[${batch.join(",")}]}`;
      await client.query("SELECT pg_notify($1, $2)", [channels.changes, payload]);
      batch = [];
      size = 0;
    };
    for (const event of events) {
      const text = JSON.stringify(toEJSON(event));
      const bytes = Buffer.byteLength(text);
      if (bytes > maxPayloadBytes - 200) {
        await flush();
        const { rows } = await client.query<{ id: number }>(
          "INSERT INTO change_log (payload) VALUES ($1) RETURNING id",
          [text],
        );
        await client.query("DELETE FROM change_log WHERE created_at < now() - interval '10 minutes'");
        await client.query("SELECT pg_notify($1, $2)", [
          channels.changes,
          `{"a":${JSON.stringify(this.appId)},"r":${rows[0]!.id}}`,
        ]);
        continue;
      }
      if (size + bytes > maxPayloadBytes - 200) await flush();
      batch.push(text);
      size += bytes + 1;
    }
    await flush();
  }

  async collections(): Promise<CollectionInfo[]> {
    return this.context.db.rows<CollectionInfo>(
      `SELECT c.db AS database, c.coll AS collection, count(d.id_key)::int AS count
         FROM collections c LEFT JOIN documents d ON d.app_id = c.app_id AND d.db = c.db AND d.coll = c.coll
        WHERE c.app_id = $1 GROUP BY c.db, c.coll, c.seq ORDER BY c.seq`,
      [this.appId],
    );
  }

  async drop(database: string, collection: string): Promise<boolean> {
    const { rowCount } = await this.context.db.query(
      "DELETE FROM collections WHERE app_id = $1 AND db = $2 AND coll = $3",
      [this.appId, database, collection],
    );
    return rowCount === 1;
  }

  subscribe(listener: (event: ChangeEvent) => void): () => void {
    return this.changes.subscribe(this.appId, listener);
  }

  get listenerCount(): number {
    return this.changes.count(this.appId);
  }
}

/**
 * The change events of every app, from the notifications of every instance, handed to this
 * instance's subscribers one notification after another (so a large event fetched from change_log
 * keeps its place).
 */
export class ChangeHub {
  private readonly listeners = new Map<string, Set<(event: ChangeEvent) => void>>();
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly context: PgContext) {
    context.subscribe(channels.changes, (payload) => {
      this.queue = this.queue.then(() => this.handle(payload)).catch(() => undefined);
    });
  }

  subscribe(appId: string, listener: (event: ChangeEvent) => void): () => void {
    if (!this.context.listener.listening) {
      this.context.listener.wake();
      throw new StoreUnavailableError("not listening for changes");
    }
    let set = this.listeners.get(appId);
    if (!set) {
      set = new Set();
      this.listeners.set(appId, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(appId) === set) this.listeners.delete(appId);
    };
  }

  count(appId: string): number {
    return this.listeners.get(appId)?.size ?? 0;
  }

  private async handle(payload: string): Promise<void> {
    const message = JSON.parse(payload) as { a: string; e?: unknown[]; r?: number };
    const listeners = this.listeners.get(message.a);
    if (!listeners || listeners.size === 0) return;
    let events: unknown[] = message.e ?? [];
    if (message.r !== undefined) {
      const [row] = await this.context.db.rows<{ payload: string }>("SELECT payload FROM change_log WHERE id = $1", [
        message.r,
      ]);
      events = row ? [JSON.parse(row.payload)] : [];
    }
    for (const raw of events) {
      const event = fromEJSONText(JSON.stringify(raw)) as ChangeEvent;
      for (const listener of [...listeners]) listener(event);
    }
  }
}
