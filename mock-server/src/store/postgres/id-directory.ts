/**
 * The ids of every row of a table few rows ever join (apps, EmailJS accounts), kept on this
 * instance and true by the table's notifications, so that a request naming one that does not exist
 * — its id comes from the request's path or body, before any token or limit — asks the database
 * nothing: a flood of them, each with a new id, would otherwise put a statement each on the
 * database every instance shares.
 *
 * An id not kept is answered absent only once every change committed before the question has
 * arrived here (a sync, one shared by every such question within a few milliseconds:
 * notifications.ts `caughtUpShared`), so a row created on any instance before the request came is
 * found. The ids are loaded at the first question; dropped when notifications may have been missed
 * (an outage) and whenever the owner says (a deletion), loaded again at the next; not kept past
 * `max` ids (then every question asks the database).
 */
import type { PgContext } from "./context.ts";

export class IdDirectory {
  private ids: Set<string> | null = null;
  private loading: Promise<Set<string> | null> | null = null;
  /** Bumped by every change that may make ids being loaded stale. */
  private generation = 0;
  private tooLarge = false;
  /** The most ids kept. */
  max = 100_000;

  constructor(
    private readonly context: PgContext,
    /** Reads at most `limit` ids of the table. */
    private readonly read: (limit: number) => Promise<string[]>,
  ) {
    context.onOutage(() => this.drop());
    context.onRestored(() => this.drop());
  }

  /**
   * Whether no row has `id`, every change committed before the call considered; false when this
   * instance cannot tell without asking the database (the caller asks).
   */
  async absent(id: string): Promise<boolean> {
    const ids = this.ids ?? (this.context.listener.listening ? await this.load() : null);
    if (!ids || ids.has(id)) return false;
    const caughtUp = await this.context.listener.caughtUpShared().then(
      () => true,
      () => false,
    );
    return caughtUp && this.ids?.has(id) === false;
  }

  /** A row of `id` was created (told by this instance, or by another's notification). */
  added(id: string): void {
    this.ids?.add(id);
    this.generation++;
  }

  /** Forgets the ids (a deletion, changes missed): the next question loads them again. */
  drop(): void {
    this.ids = null;
    this.generation++;
  }

  private load(): Promise<Set<string> | null> {
    if (this.tooLarge) return Promise.resolve(null);
    this.loading ??= (async () => {
      const generation = this.generation;
      try {
        const ids = await this.read(this.max + 1);
        if (ids.length > this.max) this.tooLarge = true;
        else if (generation === this.generation) this.ids = new Set(ids);
        return this.ids;
      } catch {
        return null; // (The caller asks the database itself, and says what went wrong.)
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }
}
