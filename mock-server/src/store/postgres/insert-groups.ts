/**
 * Group commit of an app's insertOne actions (docs/decisions/0022-group-commit.md): the actions
 * that arrive while the app's previous group is being written go out together as one statement —
 * one transaction, one WAL flush — and each is answered only after that statement has committed.
 *
 * What one action would be told, it is told in a group too:
 * - an `_id` that exists: the rows that went in are the statement's `RETURNING`; two actions of one
 *   `_id` never share a group (the second waits for the next);
 * - a limit: the statement is marked grouped (migration 7), so a user's allowance of writes must
 *   cover each of that user's documents in it, and the documents' totals include them all; if the
 *   statement is refused, or fails for any other reason, every action of the group is written
 *   again on its own (`alone`), and gets its own answer. A writer refused in the last second writes
 *   alone from the start, so one user at a limit does not make others' groups fail again and again;
 * - its change event: sent in the same statement (`pg_notify`, delivered at commit), while someone
 *   watches the app.
 */
import { QuotaExceededError, WriteRateExceededError } from "../store.ts";
import type { Queryable } from "./database.ts";

/** One insertOne, ready to bind. */
export interface PendingInsert {
  database: string;
  collection: string;
  key: string;
  /** The document's canonical Extended JSON (a statement value). */
  text: unknown;
  bytes: number;
  owner: string | null;
  anonymous: boolean;
  /** The notification payload of its change event ("" when none). */
  payload: string;
}

/** Rows and bytes of one group (migration 7 checks up to 64 documents and 1 MiB without the app's lock). */
const maxRows = 64;
const maxBytes = 1_048_576;
/** Groups of one app in flight at once on this instance. */
const maxInFlight = 2;
/** How long a writer refused by a limit writes alone. */
const aloneForMs = 1_000;

interface Waiting {
  insert: PendingInsert;
  resolve(inserted: boolean): void;
  reject(error: unknown): void;
}

export class InsertGroups {
  private readonly queue: Waiting[] = [];
  private inFlight = 0;
  private readonly refused = new Map<string, number>();

  constructor(
    private readonly db: () => Queryable,
    private readonly head: { appId: string; changesChannel: string; watched: string },
    /** One action on its own: its own statement, its own answer or error. */
    private readonly alone: (insert: PendingInsert) => Promise<boolean>,
  ) {}

  /** Statements sent for groups of more than one action, and the actions they carried (for tests and the bench). */
  readonly counts = { groups: 0, grouped: 0 };

  /** Inserts, as part of a group when others are waiting: true if it went in, false for an existing `_id`. */
  insert(insert: PendingInsert): Promise<boolean> {
    if (insert.owner !== null && (this.refused.get(insert.owner) ?? 0) > Date.now()) return this.single(insert);
    return new Promise((resolve, reject) => {
      this.queue.push({ insert, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < maxInFlight && this.queue.length > 0) {
      const group = this.take();
      this.inFlight++;
      void this.send(group).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  /** The next group: in arrival order, one action per document key, up to the group's size. */
  private take(): Waiting[] {
    const group: Waiting[] = [];
    const keys = new Set<string>();
    let bytes = 0;
    let i = 0;
    while (i < this.queue.length && group.length < maxRows) {
      const waiting = this.queue[i]!;
      const { database, collection, key } = waiting.insert;
      const id = `${database}\u0000${collection}\u0000${key}`;
      if (keys.has(id) || (group.length > 0 && bytes + waiting.insert.bytes > maxBytes)) {
        i++;
        continue;
      }
      keys.add(id);
      bytes += waiting.insert.bytes;
      group.push(waiting);
      this.queue.splice(i, 1);
    }
    return group;
  }

  private async single(insert: PendingInsert): Promise<boolean> {
    try {
      return await this.alone(insert);
    } catch (error) {
      if (insert.owner !== null && (error instanceof QuotaExceededError || error instanceof WriteRateExceededError))
        this.refused.set(insert.owner, Date.now() + aloneForMs);
      throw error;
    }
  }

  private async send(group: Waiting[]): Promise<void> {
    if (group.length === 1) {
      const [only] = group;
      await this.single(only!.insert).then(only!.resolve, only!.reject);
      return;
    }
    let inserted: Set<string>;
    try {
      inserted = await this.statement(group.map((w) => w.insert));
    } catch {
      // Refused or failed as a whole: each action on its own, for its own answer.
      await Promise.all(group.map((w) => this.single(w.insert).then(w.resolve, w.reject)));
      this.sweep();
      return;
    }
    this.counts.groups++;
    this.counts.grouped += group.length;
    for (const w of group) w.resolve(inserted.has(rowId(w.insert)));
  }

  /** One statement for the group: the rows, their owners' counts (triggers) and their notifications. */
  private async statement(inserts: PendingInsert[]): Promise<Set<string>> {
    const { rows } = await this.db().query<{ db: string; coll: string; id_key: string }>(
      `WITH inserted AS (
         INSERT INTO documents (app_id, db, coll, id_key, doc, ejson, owner, owner_anonymous)
         SELECT $1, v.d, v.c, v.k, v.t::jsonb, v.t, v.o, v.a
           FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::boolean[])
                  WITH ORDINALITY AS v(d, c, k, t, o, a, n)
          CROSS JOIN (SELECT set_config('emulator.grouped', 'on', true)) AS grouped
          ORDER BY v.n
         ON CONFLICT DO NOTHING RETURNING db, coll, id_key)
       SELECT i.db, i.coll, i.id_key, (SELECT pg_notify($9, v.p) WHERE v.p <> '' AND ${this.head.watched})
         FROM inserted i JOIN unnest($2::text[], $3::text[], $4::text[], $8::text[]) AS v(d, c, k, p)
           ON v.d = i.db AND v.c = i.coll AND v.k = i.id_key`,
      [
        this.head.appId,
        inserts.map((i) => i.database),
        inserts.map((i) => i.collection),
        inserts.map((i) => i.key),
        inserts.map((i) => i.text),
        inserts.map((i) => i.owner),
        inserts.map((i) => i.anonymous),
        inserts.map((i) => i.payload),
        this.head.changesChannel,
      ],
    );
    return new Set(rows.map((r) => `${r.db}\u0000${r.coll}\u0000${r.id_key}`));
  }

  private sweep(): void {
    const now = Date.now();
    for (const [owner, until] of this.refused) if (until <= now) this.refused.delete(owner);
  }
}

const rowId = (insert: PendingInsert) => `${insert.database}\u0000${insert.collection}\u0000${insert.key}`;
