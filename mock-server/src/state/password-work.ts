/**
 * Password hashes (scrypt: tens of milliseconds of a core and 32 MiB each at production's cost)
 * run in libuv's thread pool, which the process shares with every file read and write and every
 * `dns.lookup` (a database or SMTP connection by host name). Left to themselves, hashes queue in
 * the pool without bound: logins from many addresses held a real user's login 8–12 s, and a file
 * read waited 8.5 s behind 40 hashes. So hashes go through this queue
 * (docs/decisions/0028-password-work.md):
 *
 * - at most `concurrency` run at once — the cores, and never the whole pool (one thread of it is
 *   always left for files and look-ups);
 * - the rest wait in lanes, one per client (an address's key; the control API's work has a lane of
 *   its own), served in turn, so a client with many hashes waiting delays another's by one turn;
 * - what waits is bounded by time: a hash is admitted while the work queued ahead of it, at the
 *   measured time of a hash (the mean of the latest `measuredHashes`), would start within
 *   `maxWaitMs`. Past it, the newest hash of the
 *   longest lane is refused to make room — the newcomer's own when its lane is (one of) the
 *   longest — with `PasswordWorkBusyError`, which the API answers `429` with `Retry-After: 1`.
 *   So no admitted request waits much past `maxWaitMs` for its hash, and a client that floods
 *   takes places only from itself;
 * - a check against a password the server holds (a login to a registration, a reset with its
 *   token) comes before the rest (a registration's new hash, a login to an address nobody
 *   registered, checked against a stand-in): past the bound such a check takes the place of the
 *   newest of the rest. Many addresses each sending a login for made-up addresses — more than the
 *   cores can hash — then keep taking each other's places, not the users'.
 *
 * Work under the limits pays a counter and a `finally`: with a free place and nothing waiting it
 * starts at once.
 */

export interface PasswordWorkLimits {
  /** Hashes run at once. */
  concurrency: number;
  /** The longest a hash may be expected to wait before it starts. */
  maxWaitMs: number;
}

/** The thread pool's size, as libuv reads it at its first use. */
function threadPoolSize(): number {
  const size = Number(process.env.UV_THREADPOOL_SIZE);
  return Number.isInteger(size) && size > 0 ? Math.min(size, 1024) : 4;
}

export function defaultPasswordWorkLimits(cores: number): PasswordWorkLimits {
  return { concurrency: Math.max(1, Math.min(cores, threadPoolSize() - 1)), maxWaitMs: 2000 };
}

/** A hash refused because the queue holds as much as it takes (answered 429 with `Retry-After: 1`). */
export class PasswordWorkBusyError extends Error {
  constructor() {
    super("too many password checks waiting");
  }
}

interface Job {
  start: () => void;
  refuse: () => void;
  /** A check of a password the server holds: it may take the place of one of the rest. */
  held: boolean;
}

/** What a hash is: the check of a password the server holds, or the rest (see above). */
export type PasswordCheck = "held" | "other";

/** The lane of work that is never refused (the control API's: its callers hold its token). */
export const trustedLane = null;

/**
 * How many of the latest hashes the estimate of a hash's time averages. A hash's time as the main
 * thread sees it includes the event loop's lag: on a saturated core hashes of 30 ms at the median
 * were seen at 200 ms now and then, and an average weighted to the newest (0.3) rose to 3.7 times
 * the true mean after such a few and refused logins that would have waited 0.6 s. Over 32 it
 * stayed within 2.1 times, and follows a machine that became slower within a window of hashes.
 */
const measuredHashes = 32;

export class PasswordWork {
  private running = 0;
  private waiting = 0;
  /** Waiting jobs per lane; a lane is in `turns` exactly while it has some. */
  private readonly lanes = new Map<string, Job[]>();
  private readonly turns: string[] = [];
  /** The latest hashes' measured times (a ring), how many were measured, and their sum. */
  private readonly times = new Float64Array(measuredHashes);
  private measured = 0;
  private timesSum = 0;

  constructor(
    private readonly limits: PasswordWorkLimits,
    /** The clock hashes are timed with (tests give their own). */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Hashes waiting for a place (a metric and the tests'). */
  get queued(): number {
    return this.waiting;
  }

  /**
   * Runs `work` once a place is free, in its lane's turn; rejects with `PasswordWorkBusyError` when
   * it cannot be expected to start within the wait allowed (never for `trustedLane`).
   */
  run<T>(lane: string | null, check: PasswordCheck, work: () => Promise<T>): Promise<T> {
    if (this.running < this.limits.concurrency && this.waiting === 0) return this.execute(work);
    return new Promise<T>((resolve, reject) => {
      const key = lane ?? "";
      const held = check === "held";
      if (lane !== trustedLane && !this.makeRoom(key, held)) {
        reject(new PasswordWorkBusyError());
        return;
      }
      const job: Job = {
        start: () => this.execute(work).then(resolve, reject),
        refuse: () => reject(new PasswordWorkBusyError()),
        held,
      };
      const jobs = this.lanes.get(key);
      if (jobs) jobs.push(job);
      else {
        this.lanes.set(key, [job]);
        this.turns.push(key);
      }
      this.waiting++;
    });
  }

  /**
   * Whether one more job of `key` may wait: yes under the bound; past it, only by refusing the
   * newest job of a lane longer than `key`'s would be or, for a held password's check, the newest
   * of the rest in the longest lane that has one.
   */
  private makeRoom(key: string, held: boolean): boolean {
    const expectedWaitMs = ((this.waiting + 1) * this.hashMs()) / this.limits.concurrency;
    if (expectedWaitMs <= this.limits.maxWaitMs) return true;
    const mine = (this.lanes.get(key)?.length ?? 0) + 1;
    let longest: { key: string; jobs: Job[]; at: number } | undefined;
    for (const [other, jobs] of this.lanes) {
      if (other === "" || jobs.length <= (longest?.jobs.length ?? 0)) continue;
      if (jobs.length > mine) longest = { key: other, jobs, at: jobs.length - 1 };
      else if (held) {
        const at = jobs.findLastIndex((job) => !job.held);
        if (at >= 0) longest = { key: other, jobs, at };
      }
    }
    if (!longest) return false;
    const [refused] = longest.jobs.splice(longest.at, 1);
    refused!.refuse();
    this.waiting--;
    if (longest.jobs.length === 0) {
      this.lanes.delete(longest.key);
      this.turns.splice(this.turns.indexOf(longest.key), 1);
    }
    return true;
  }

  /**
   * The time a hash is expected to take: the mean of the latest measured ones; before any is
   * measured, a quarter of the wait allowed (a few hashes wait, not the hundreds that a guess too
   * low would admit). (Counting how long the running ones have taken
   * was tried: on a core shared with the main thread a hash of 2 ms sometimes takes 40, and logins
   * that would have waited 0.3 s were refused.)
   */
  private hashMs(): number {
    return this.measured === 0 ? this.limits.maxWaitMs / 4 : this.timesSum / Math.min(this.measured, measuredHashes);
  }

  private record(tookMs: number): void {
    const at = this.measured % measuredHashes;
    const replaced = this.measured >= measuredHashes ? this.times[at]! : 0;
    this.times[at] = tookMs;
    this.measured++;
    // Summed again at each turn of the ring, so that rounding never adds up.
    this.timesSum = at === 0 ? this.times.reduce((sum, ms) => sum + ms, 0) : this.timesSum + tookMs - replaced;
  }

  private async execute<T>(work: () => Promise<T>): Promise<T> {
    const started = this.now();
    this.running++;
    try {
      return await work();
    } finally {
      this.record(this.now() - started);
      this.running--;
      this.next();
    }
  }

  private next(): void {
    while (this.running < this.limits.concurrency && this.waiting > 0) {
      const key = this.turns.shift()!;
      const jobs = this.lanes.get(key)!;
      const job = jobs.shift()!;
      if (jobs.length > 0) this.turns.push(key);
      else this.lanes.delete(key);
      this.waiting--;
      job.start();
    }
  }
}
