/**
 * The outbox in PostgreSQL: every captured message (system mail and EmailJS sends), with its SMTP
 * delivery state, so mail survives restarts and is delivered once per message whatever the number
 * of instances (each due message is claimed with a lease, `FOR UPDATE SKIP LOCKED`). Waits are
 * answered by messages stored by any instance (a notification names each new message). Each
 * message's end (`done_at`: captured without SMTP, or its delivery sent or finally failed) is what
 * the retention sweep goes by (retention.ts); a queued message has none, so it is never swept.
 */
import { composeMessage, MailWaits, mailSeq, messageNumber, recipients, searchMatches } from "../mail-messages.ts";
import type { MailDelivery, MailFilter, MailMessage, MailStore, NewMail } from "../store.ts";
import type { PgContext } from "./context.ts";
import { cursorRows, type Queryable } from "./database.ts";
import { channels } from "./notifications.ts";

/** The SQL of a filter's `appId`, `account`, `source`, `kind`, `to` and `since` as a message id. */
function whereOf(filter: MailFilter, params: unknown[]): string {
  const where: string[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  if (filter.appId !== undefined) where.push(`app_id = ${param(filter.appId)}`);
  if (filter.account !== undefined) where.push(`account = ${param(filter.account)}`);
  if (filter.source !== undefined) where.push(`source = ${param(filter.source)}`);
  if (filter.kind !== undefined) where.push(`kind = ${param(filter.kind)}`);
  if (filter.to !== undefined) where.push(`${param(filter.to.trim().toLowerCase())} = ANY(recipients)`);
  // A message number past any id (bigint) means: nothing after it.
  if (filter.since !== undefined && /^m-\d+$/.test(filter.since))
    where.push(`id > ${param(Math.min(mailSeq(filter.since), Number.MAX_SAFE_INTEGER))}`);
  return where.length > 0 ? `WHERE ${where.join(" AND ")}` : "";
}

/**
 * Every filter but `search` as conditions on the columns: whereOf's, and `since` as a time too
 * (`created_at` is the message's `createdAt`), as mailMatches reads them.
 */
function columnsWhere(filter: MailFilter, params: unknown[]): string {
  const where = whereOf(filter, params);
  const since = filter.since !== undefined && !/^m-\d+$/.test(filter.since) ? Date.parse(filter.since) : Number.NaN;
  if (!Number.isFinite(since)) return where;
  params.push(since);
  return `${where ? `${where} AND` : "WHERE"} created_at > $${params.length}`;
}

const toMessage = (row: { doc: MailMessage }) => row.doc;

/** A message's columns but its id, as $1…$9 (`done_at` follows from them). */
function rowValues(message: MailMessage): unknown[] {
  return [
    message.appId ?? null,
    message.account ?? null,
    message.source,
    message.kind,
    recipients(message.to),
    Date.parse(message.createdAt),
    message.delivery?.state ?? null,
    message.delivery?.nextAttemptAt ? Date.parse(message.delivery.nextAttemptAt) : 0,
    message,
  ];
}

/**
 * A message's row from `rowValues` and its id: `given` as $10, or `numbered` from the sequence,
 * written into the message (`m-<id>`), answered and announced on the channel $10, kept only while
 * the token $11 (when not null) is there.
 */
function insertStatement(id: "given" | "numbered"): string {
  const row = `$1, $2, $3, $4, $5, $6, $7, $8, ${id === "given" ? "$9" : "jsonb_set($9::jsonb, '{id}', to_jsonb('m-' || n.id))"},
                CASE WHEN $7::text IS DISTINCT FROM 'queued' THEN $6::bigint END`;
  const into =
    "INSERT INTO mail (id, app_id, account, source, kind, recipients, created_at, delivery_state, next_attempt_at, doc, done_at)";
  if (id === "given") return `${into} VALUES ($10, ${row})`;
  // Only while its app, account and token ($11) are there, their rows locked (KEY SHARE) until this
  // commits: a deletion or reset waits for it and then clears it with the rest of their mail, or
  // went first. The app's row first (CASE keeps the order), as the reset and deletion lock it first:
  // a token's lock taken before would deadlock with them.
  return `WITH n AS (SELECT nextval('mail_id_seq')::bigint AS id),
       added AS (${into} SELECT n.id, ${row} FROM n
                  WHERE CASE
                    WHEN $1::text IS NOT NULL AND NOT EXISTS (SELECT 1 FROM apps WHERE app_id = $1 FOR KEY SHARE) THEN false
                    WHEN $11::text IS NOT NULL
                      AND NOT EXISTS (SELECT 1 FROM auth_tokens WHERE app_id = $1 AND token_id = $11 FOR KEY SHARE) THEN false
                    ELSE $2::text IS NULL OR EXISTS (SELECT 1 FROM emailjs_accounts WHERE public_key = $2 FOR KEY SHARE)
                  END
                  RETURNING id)
       SELECT id, pg_notify($10, json_build_object('id', id)::text) FROM added`;
}

export class PgMail implements MailStore {
  private readonly waits = new MailWaits();
  private readonly listeners = new Set<(message: MailMessage) => void>();

  constructor(private readonly context: PgContext) {
    context.subscribe(channels.mail, (payload) => {
      const { id } = JSON.parse(payload) as { id: number };
      void this.get(`m-${id}`)
        .then((message) => {
          if (!message) return;
          this.waits.arrived(message);
          for (const listener of this.listeners) listener(message);
        })
        .catch(() => undefined);
    });
  }

  async add(mail: NewMail, deliver: boolean): Promise<MailMessage | undefined> {
    // Numbered (a sequence: never rolled back, so not part of the write), stored with its id and
    // announced in one statement, which commits the message and its announcement or neither.
    const message = composeMessage("", mail, deliver);
    const [row] = await this.context.db.rows<{ id: string }>(insertStatement("numbered"), [
      ...rowValues(message),
      channels.mail,
      mail.forToken ?? null,
    ]);
    return row ? { ...message, id: `m-${row.id}` } : undefined;
  }

  /** Stores a message with its id (state imports), announced to no instance. */
  async insert(q: Queryable, id: number, message: MailMessage): Promise<void> {
    await q.query(insertStatement("given"), [...rowValues(message), id]);
  }

  async get(id: string): Promise<MailMessage | undefined> {
    const seq = messageNumber(id);
    if (seq === undefined) return undefined;
    const [row] = await this.context.db.rows<{ doc: MailMessage }>("SELECT doc FROM mail WHERE id = $1", [seq]);
    return row ? toMessage(row) : undefined;
  }

  /**
   * With `limit` and no `search`, only the newest `limit` rows are read. A search, whose case
   * folding is JavaScript's (searchMatches), finds the ids of its matches first (`searched`), then
   * reads those it answers.
   */
  async list(filter: MailFilter = {}, limit?: number): Promise<MailMessage[]> {
    const params: unknown[] = [];
    const where = columnsWhere(filter, params);
    if (filter.search?.trim()) {
      const ids = await this.searched(filter);
      const page = limit === undefined ? ids : ids.slice(-limit);
      if (page.length === 0) return [];
      const rows = await this.context.db.rows<{ doc: MailMessage }>(
        "SELECT doc FROM mail WHERE id = ANY($1::bigint[]) ORDER BY id",
        [page],
      );
      return rows.map(toMessage);
    }
    if (limit !== undefined) {
      params.push(limit);
      const rows = await this.context.db.rows<{ doc: MailMessage }>(
        `SELECT doc FROM (SELECT id, doc FROM mail ${where} ORDER BY id DESC LIMIT $${params.length}) AS newest ORDER BY id`,
        params,
      );
      return rows.map(toMessage);
    }
    const rows = await this.context.db.rows<{ doc: MailMessage }>(`SELECT doc FROM mail ${where} ORDER BY id`, params);
    return rows.map(toMessage);
  }

  /**
   * The ids of a search's matches, oldest first: the other filters' matches read through a cursor
   * a batch at a time, only the fields searched (not the HTML, headers or attachments of 30 days of
   * mail), the search kept in JavaScript.
   */
  private async searched(filter: MailFilter): Promise<number[]> {
    const params: unknown[] = [];
    const where = columnsWhere(filter, params);
    const tx = await this.context.db.beginSnapshot();
    try {
      const ids: number[] = [];
      type Row = { id: number; subject: string; to: string; text: string };
      const rows = cursorRows<Row>(
        tx.client,
        `SELECT id, coalesce(doc ->> 'subject', '') AS subject, coalesce(doc ->> 'to', '') AS "to",
                coalesce(doc ->> 'text', '') AS text
           FROM mail ${where} ORDER BY id`,
        params,
      );
      for await (const batch of rows) for (const row of batch) if (searchMatches(row, filter.search)) ids.push(row.id);
      return ids;
    } finally {
      await tx.rollback();
    }
  }

  /**
   * Counted by the database, reading no message (the control API's app summaries ask at every
   * inspector page, however much mail is kept); a search counts its matches' ids.
   */
  async count(filter: MailFilter): Promise<number> {
    if (filter.search?.trim()) return (await this.searched(filter)).length;
    const params: unknown[] = [];
    const [row] = await this.context.db.rows<{ n: number }>(
      `SELECT count(*)::int AS n FROM mail ${columnsWhere(filter, params)}`,
      params,
    );
    return row?.n ?? 0;
  }

  wait(filter: MailFilter, ms: number, signal?: AbortSignal): Promise<MailMessage[]> {
    return this.waits.wait(filter, ms, () => this.list(filter), signal);
  }

  releaseWaits(): void {
    this.waits.release(() => []);
  }

  get pendingWaits(): number {
    return this.waits.size;
  }

  async clear(filter: Pick<MailFilter, "appId" | "account"> = {}): Promise<void> {
    const params: unknown[] = [];
    await this.context.db.query(`DELETE FROM mail ${whereOf(filter, params)}`, params);
  }

  async dueForDelivery(now: number, limit: number, leaseMs: number): Promise<MailMessage[]> {
    const rows = await this.context.db.rows<{ doc: MailMessage }>(
      `UPDATE mail SET next_attempt_at = $2 + $3::bigint WHERE id IN (
         SELECT id FROM mail WHERE delivery_state = 'queued' AND next_attempt_at <= $2
          ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING doc`,
      [limit, now, leaseMs],
    );
    return rows.map(toMessage).sort((a, b) => mailSeq(a.id) - mailSeq(b.id));
  }

  async queuedCount(): Promise<number> {
    const [row] = await this.context.db.rows<{ n: number }>(
      "SELECT count(*) AS n FROM mail WHERE delivery_state = 'queued'",
    );
    return row?.n ?? 0;
  }

  async nextDeliveryAt(): Promise<number | null> {
    const [row] = await this.context.db.rows<{ at: number | null }>(
      "SELECT min(next_attempt_at) AS at FROM mail WHERE delivery_state = 'queued'",
    );
    return row?.at ?? null;
  }

  async setDelivery(id: string, delivery: MailDelivery): Promise<void> {
    await this.context.db.query(
      // Its delivery ended (sent or failed) now: kept from now for the retention period.
      `UPDATE mail SET doc = jsonb_set(doc, '{delivery}', $2::jsonb), delivery_state = $3, next_attempt_at = $4,
              done_at = CASE WHEN $3 = 'queued' THEN NULL ELSE $5::bigint END
        WHERE id = $1`,
      [
        mailSeq(id),
        delivery,
        delivery.state,
        delivery.nextAttemptAt ? Date.parse(delivery.nextAttemptAt) : 0,
        Date.now(),
      ],
    );
  }

  onAdd(listener: (message: MailMessage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async remove(id: string): Promise<boolean> {
    const seq = messageNumber(id);
    if (seq === undefined) return false;
    const rows = await this.context.db.rows("DELETE FROM mail WHERE id = $1 RETURNING id", [seq]);
    return rows.length > 0;
  }
}
