/**
 * Trigger events kept in the database (migration 13; docs/decisions/0031-triggers.md): a
 * database trigger's with the write that made it, an authentication trigger's as it fires — so
 * that a trigger runs at least once even when the instance that should run it dies first.
 *
 * A write keeps its events leased to its instance for the lease (`--trigger-lease`, a minute by
 * default); the instance renews the leases of the events it still holds six times a lease, and
 * removes each event once every trigger has run it (or could not). Every instance also claims, as
 * often and at its start, events whose lease ran out — their instance stopped renewing — 100 at a
 * time, in their order (`claim`: two instances never claim one event, nor an app's events out of
 * order), and runs them (runtime/trigger-recovery.ts).
 */
import { type ChangeEvent, type Document, fromEJSONText, toEJSONText } from "../../data/documents.ts";
import { defaultTriggerLeaseMs, type KeptEvent, type TriggerEventStore } from "../store.ts";
import type { PgContext } from "./context.ts";
import type { Queryable } from "./database.ts";

/** Keeps events in the write's transaction: their ids, in the events' order. */
export function keepEvents(
  client: Queryable,
  context: PgContext,
  appId: string,
  events: ChangeEvent[],
): Promise<string[]> {
  return keepTexts(
    client,
    context,
    appId,
    events.map((event) => toEJSONText(event)),
  );
}

async function keepTexts(client: Queryable, context: PgContext, appId: string, texts: string[]): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    `INSERT INTO trigger_events (app_id, event, instance_id, lease_until)
     SELECT $1, e, $3, now() + make_interval(secs => $4) FROM unnest($2::text[]) WITH ORDINALITY AS t(e, n) ORDER BY n
     RETURNING id`,
    [appId, texts, context.instanceId, leaseOf(context) / 1000],
  );
  // (Ids come from the sequence in the rows' order: ascending is the events' order.)
  return rows.map((r) => r.id).sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
}

/** Events claimed at once. */
const claimBatch = 100;

/** The advisory lock claims take. */
const claimLock = 0x74726967; // "trig"

const leaseOf = (context: PgContext) => context.db.options.triggerLeaseMs ?? defaultTriggerLeaseMs;

export class PgTriggerEvents implements TriggerEventStore {
  constructor(private readonly context: PgContext) {}

  get leaseMs(): number {
    return leaseOf(this.context);
  }

  async keepAuth(appId: string, trigger: string, event: Document): Promise<string> {
    const [id] = await keepTexts(this.context.db, this.context, appId, [toEJSONText({ authTrigger: trigger, event })]);
    return id!;
  }

  async done(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.context.db.query("DELETE FROM trigger_events WHERE id = ANY($1::bigint[])", [ids]);
  }

  async renew(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.context.db.query(
      `UPDATE trigger_events SET lease_until = now() + make_interval(secs => $3)
        WHERE id = ANY($1::bigint[]) AND instance_id = $2`,
      [ids, this.context.instanceId, this.leaseMs / 1000],
    );
  }

  /**
   * Claims the events whose lease ran out, in their order, and of an app only those before its
   * first event still leased: an ordered trigger runs its events one after another, and the lease
   * of a later event can run out first (a write commits its event before its instance knows to
   * renew it), or the earlier one is being run by another instance. Claims take turns (an advisory
   * lock), so that one never starts on the events after another's.
   */
  async claim(): Promise<KeptEvent[]> {
    const { rows } = await this.context.db.transaction(async (client) => {
      await client.query("SELECT pg_advisory_xact_lock($1)", [claimLock]);
      return client.query<{ id: string; app_id: string; event: string }>(
        `WITH leased AS (
           SELECT app_id, min(id) AS first FROM trigger_events WHERE lease_until >= now() GROUP BY app_id
         )
         UPDATE trigger_events t SET instance_id = $1, lease_until = now() + make_interval(secs => $2)
          WHERE t.id IN (SELECT e.id FROM trigger_events e LEFT JOIN leased l ON l.app_id = e.app_id
                          WHERE e.lease_until < now() AND (l.first IS NULL OR e.id < l.first)
                          ORDER BY e.id LIMIT $3 FOR UPDATE OF e SKIP LOCKED)
          RETURNING t.id, t.app_id, t.event`,
        [this.context.instanceId, this.leaseMs / 1000, claimBatch],
      );
    });
    return rows
      .sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1))
      .map((r): KeptEvent => {
        const kept = fromEJSONText(r.event) as Document;
        return typeof kept.authTrigger === "string"
          ? { appId: r.app_id, id: r.id, auth: { trigger: kept.authTrigger, event: kept.event as Document } }
          : { appId: r.app_id, change: { ...(kept as unknown as ChangeEvent), durableId: r.id } };
      });
  }
}
