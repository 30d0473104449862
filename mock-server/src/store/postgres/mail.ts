/**
 * The outbox in PostgreSQL: every captured message (system mail and EmailJS sends), with its SMTP
 * delivery state, so mail survives restarts and is delivered once per message whatever the number
 * of instances (each due message is claimed with a lease, `FOR UPDATE SKIP LOCKED`). Waits are
 * answered by messages stored by any instance (a notification names each new message). Each
 * message's end (`done_at`: captured without SMTP, or its delivery sent or finally failed) is what
 * the retention sweep goes by (retention.ts); a queued message has none, so it is never swept.
 */
import { composeMessage, MailWaits, mailMatches, mailSeq, messageNumber, recipients } from "../mail-messages.ts";
import type { MailDelivery, MailFilter, MailMessage, MailStore, NewMail } from "../store.ts";
import type { PgContext } from "./context.ts";
import type { Queryable } from "./database.ts";
import { channels } from "./notifications.ts";

/** The SQL of a filter; `to` and time-based `since` are finished in JavaScript (mailMatches). */
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

const toMessage = (row: { doc: MailMessage }) => row.doc;

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

  async add(mail: NewMail, deliver: boolean): Promise<MailMessage> {
    // Its number first (a sequence: never rolled back, so not part of the write); then the message
    // and its announcement in one statement, which commits both or neither.
    const [row] = await this.context.db.rows<{ id: number }>("SELECT nextval('mail_id_seq')::bigint AS id");
    const id = row!.id;
    const message = composeMessage(`m-${id}`, mail, deliver);
    await this.insert(this.context.db, id, message, true);
    return message;
  }

  /** Stores a message with its id (also for state imports), announced to every instance with `announce`. */
  async insert(q: Queryable, id: number, message: MailMessage, announce = false): Promise<void> {
    await q.query(
      `WITH added AS (
         INSERT INTO mail (id, app_id, account, source, kind, recipients, created_at, delivery_state, next_attempt_at, doc, done_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, CASE WHEN $8::text IS DISTINCT FROM 'queued' THEN $7::bigint END)
         RETURNING id)
       SELECT pg_notify($11, json_build_object('id', id)::text) FROM added WHERE $12::boolean`,
      [
        id,
        message.appId ?? null,
        message.account ?? null,
        message.source,
        message.kind,
        recipients(message.to),
        Date.parse(message.createdAt),
        message.delivery?.state ?? null,
        message.delivery?.nextAttemptAt ? Date.parse(message.delivery.nextAttemptAt) : 0,
        message,
        channels.mail,
        announce,
      ],
    );
  }

  async get(id: string): Promise<MailMessage | undefined> {
    const seq = messageNumber(id);
    if (seq === undefined) return undefined;
    const [row] = await this.context.db.rows<{ doc: MailMessage }>("SELECT doc FROM mail WHERE id = $1", [seq]);
    return row ? toMessage(row) : undefined;
  }

  async list(filter: MailFilter = {}): Promise<MailMessage[]> {
    const params: unknown[] = [];
    const rows = await this.context.db.rows<{ doc: MailMessage }>(
      `SELECT doc FROM mail ${whereOf(filter, params)} ORDER BY id`,
      params,
    );
    return rows.map(toMessage).filter((m) => mailMatches(m, filter));
  }

  async count(filter: MailFilter): Promise<number> {
    return (await this.list(filter)).length;
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
