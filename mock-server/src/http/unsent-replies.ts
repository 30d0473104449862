/**
 * Replies their clients do not read. A reply is written whole when it is sent, and what the
 * client's connection does not take stays in this process: 100 connections of one client that
 * asked for a 5 MB `find` and read nothing took the process from 143 MB to 1.59 GB, for as long as
 * they stayed open (no timeout applies to a reply being sent). So a large reply that is not all
 * sent once written is watched until it is:
 *
 * - one that sends nothing more for **60 s** (nginx's `send_timeout`) loses its connection;
 * - past **256 MiB** unsent on the instance, replies that sent nothing since the last look (every
 *   second, after the loop's I/O had its turns) lose theirs, the one stalled longest first, until
 *   the total is back under it: a client that reads keeps its reply.
 *
 * Change streams are not replies: their own budget ends slow readers (runtime/stream-backlog.ts).
 */
import type { ServerResponse } from "node:http";

export const unsentReplyLimits = {
  /** Unsent bytes of all watched replies past which the replies stalled longest are cut (the default). */
  bytes: 256 * 1024 * 1024,
  /** How long a reply may send nothing before its connection is cut (the default). */
  idleMs: 60_000,
  /** Replies from this size are watched (smaller ones fit in the connection's socket buffer). */
  watchFrom: 64 * 1024,
} as const;

interface Watched {
  response: ServerResponse;
  /** Unsent bytes as last counted (what the process holds: a write's whole buffer until it is sent). */
  counted: number;
  /** Bytes of the connection's writes not yet taken by the system, as last seen. */
  queued: number;
  /** Bytes the system has taken from the connection's writes, as last seen (when it can be told). */
  taken: number;
  /** When it last sent something (or was first counted). */
  progressAt: number;
}

/**
 * Bytes of a connection's writes the system has not taken yet: the handle's write queue, which
 * shrinks as a large write goes out piece by piece (the writable's length counts a write whole until
 * all of it is out, so a reply read slowly would seem to send nothing).
 */
export function queuedBytes(response: ServerResponse): number {
  const handle = (response.socket as { _handle?: { writeQueueSize?: unknown } } | null)?._handle;
  return typeof handle?.writeQueueSize === "number" ? handle.writeQueueSize : response.writableLength;
}

/**
 * Bytes of a connection's writes the system has taken so far: those handed to its handle less the
 * handle's queue. It only grows, where the queue of a streamed reply, written piece by piece, is
 * refilled by each next piece (two looks may find it as full while the client reads on); NaN where
 * it cannot be told.
 */
function takenBytes(response: ServerResponse): number {
  const dispatched = (response.socket as { _bytesDispatched?: unknown } | null)?._bytesDispatched;
  return typeof dispatched === "number" ? dispatched - queuedBytes(response) : Number.NaN;
}

export class UnsentReplies {
  private total = 0;
  private readonly watched = new Set<Watched>();
  private timer: NodeJS.Timeout | null = null;
  /** Connections cut: their reply sent nothing for the idle time, or had stalled longest past the budget. */
  cut = 0;

  constructor(readonly limits: { bytes: number; idleMs: number } = unsentReplyLimits) {}

  /** Unsent bytes of the watched replies, as last counted (a metric). */
  get bytes(): number {
    return this.total;
  }

  /** Whether a payload is large enough to watch (a string's length or a buffer's size). */
  static large(payload: unknown): boolean {
    if (typeof payload === "string") return payload.length >= unsentReplyLimits.watchFrom;
    return Buffer.isBuffer(payload) && payload.length >= unsentReplyLimits.watchFrom;
  }

  /**
   * Watches a reply being sent (call as it is sent: it is looked at once it is written). A streamed
   * reply too: what its connection has not taken is a piece or two, and when its client stops
   * reading, the cut destroys the stream, so that what makes its pieces stops.
   */
  watch(response: ServerResponse): void {
    setImmediate(() => {
      // (An injected request's reply has no connection to watch.)
      if (response.writableFinished || response.destroyed || !Number.isFinite(response.writableLength)) return;
      const entry: Watched = {
        response,
        counted: 0,
        queued: queuedBytes(response),
        taken: takenBytes(response),
        progressAt: Date.now(),
      };
      this.watched.add(entry);
      this.count(entry);
      const done = () => this.forget(entry);
      response.once("finish", done);
      response.once("close", done);
      this.timer ??= setInterval(() => this.look(), Math.max(10, Math.min(1_000, this.limits.idleMs / 4))).unref();
    });
  }

  private count(entry: Watched): void {
    const now = entry.response.writableLength;
    const queued = queuedBytes(entry.response);
    const taken = takenBytes(entry.response);
    // (Nothing unsent: a streamed reply whose client took all there is so far.)
    if (now < entry.counted || queued < entry.queued || taken > entry.taken || now === 0) entry.progressAt = Date.now();
    entry.taken = taken;
    this.total += now - entry.counted;
    entry.counted = now;
    entry.queued = queued;
  }

  private forget(entry: Watched): void {
    if (!this.watched.delete(entry)) return;
    this.total -= entry.counted;
    entry.counted = 0;
    if (this.watched.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private cutOff(entry: Watched): void {
    this.forget(entry);
    this.cut += 1;
    entry.response.destroy();
  }

  /**
   * A look, two turns of the loop after its timer. Timers run before a turn's I/O: a look whose
   * timer came due while the loop was held (a long task, the host pausing the process) would find
   * every reply where the last look left it, though their clients read meanwhile, and cut them
   * past the budget. The first turn takes what the clients' connections let through (a reader in
   * this process reads in it), the second writes into the room that made.
   */
  private look(): void {
    setImmediate(() => setImmediate(() => this.sweep()).unref()).unref();
  }

  private sweep(): void {
    const now = Date.now();
    for (const entry of [...this.watched]) {
      this.count(entry);
      if (now - entry.progressAt >= this.limits.idleMs) this.cutOff(entry);
    }
    this.trim(now);
  }

  /**
   * Past the budget, replies that sent nothing since the last look are cut until the total is
   * back under it, the one that has sent nothing for the longest first (the larger first among
   * those alike). One that sent something is left: its client reads, and what it holds goes (a
   * reply just written holds all of itself for a moment, however fast its client reads, so the
   * budget is looked at here, not as replies come).
   */
  private trim(now: number): void {
    if (this.total <= this.limits.bytes) return;
    const stalled = [...this.watched]
      .filter((entry) => entry.progressAt < now)
      .sort((a, b) => a.progressAt - b.progressAt || b.counted - a.counted);
    for (const entry of stalled) {
      if (this.total <= this.limits.bytes) return;
      this.cutOff(entry);
    }
  }
}
