/**
 * Places of open change streams in the database (migration 5), so that a user's or an app's
 * streams are capped across every instance, not per instance: taken one at a time per app (an
 * advisory lock), in one statement (migration 18's function), renewed while their streams are
 * open, given back when they end. A place whose instance died (nothing gives it back) runs out
 * with its lease; one that could not be deleted (the database was away) is deleted again at each
 * renewal until the database takes it back (or its lease runs out first).
 */
import { randomHex } from "../../state/ids.ts";
import type { StreamPlaces } from "../store.ts";
import type { Database } from "./database.ts";

export interface PlaceTiming {
  /** How long a place lasts unless renewed. */
  leaseSeconds: number;
  /** How often the places this instance holds are renewed (well inside the lease). */
  renewEveryMs: number;
}

export class PgStreamPlaces implements StreamPlaces {
  /** The places this instance holds: renewed together. */
  private readonly held = new Set<string>();
  /** Places given back that the database did not delete (it was away): tried again at each renewal. */
  private readonly returning = new Set<string>();
  private renewal: NodeJS.Timeout | null = null;
  /** The store is closing: nothing is renewed or tried again. */
  private stopped = false;

  constructor(
    private readonly db: Database,
    private readonly timing: PlaceTiming = { leaseSeconds: 30, renewEveryMs: 10_000 },
  ) {}

  async take(
    appId: string,
    userId: string,
    address: string,
    caps: { perUser: number; perApp: number; perAddress: number },
  ): Promise<{ id: string } | { cap: "user" | "app" | "address" }> {
    const id = randomHex(12);
    // One statement (migration 18): the app's advisory lock, the count, the place.
    const [row] = await this.db.rows<{ refused: "app" | "user" | "address" | null }>(
      "SELECT take_stream_place($1, $2, $3, $4, $5, $6, $7, $8) AS refused",
      [id, appId, userId, address, this.timing.leaseSeconds, caps.perApp, caps.perUser, caps.perAddress],
    );
    const refused = row?.refused ?? null;
    if (refused) return { cap: refused };
    this.held.add(id);
    this.renewWhileHolding();
    return { id };
  }

  give(id: string): void {
    if (!this.held.delete(id)) return;
    // Not waited for: a place the database did not take back is tried again with the renewals.
    this.db.query("DELETE FROM open_streams WHERE id = $1", [id]).catch(() => {
      this.returning.add(id);
      this.renewWhileHolding();
    });
  }

  private renewWhileHolding(): void {
    if (this.renewal || this.stopped) return;
    this.renewal = setInterval(() => {
      const { db, returning } = this;
      if (returning.size > 0) {
        const ids = [...returning];
        db.query("DELETE FROM open_streams WHERE id = ANY($1::text[])", [ids]).then(
          () => {
            for (const id of ids) returning.delete(id);
          },
          () => undefined,
        );
      }
      if (this.held.size === 0) {
        if (returning.size === 0) this.pause();
        return;
      }
      // Renewed first, then the places that ran out (their instances died) swept.
      db.query(
        `UPDATE open_streams SET expires_at = clock_timestamp() + make_interval(secs => $2)
          WHERE id = ANY($1::text[])`,
        [[...this.held], this.timing.leaseSeconds],
      )
        .then(() => db.query("DELETE FROM open_streams WHERE expires_at < clock_timestamp()"))
        .catch(() => undefined);
    }, this.timing.renewEveryMs);
    this.renewal.unref();
  }

  /** Stops renewing (the store is closing: its streams have ended, or end with the process). */
  stop(): void {
    this.stopped = true;
    this.pause();
  }

  /** Nothing held or to give back: no timer until a place is taken again. */
  private pause(): void {
    if (this.renewal) clearInterval(this.renewal);
    this.renewal = null;
  }
}
