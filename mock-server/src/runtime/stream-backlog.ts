/**
 * Unsent change-stream events of every stream on this instance, together. Each stream may leave
 * its app's `maxStreamBufferBytes` (8 MiB) unread, and each builds its own text of every event (its
 * resume token and time are its own): 200 streams that a client opened and never read, with 10
 * inserts of 1 MB, took the process to 1.55 GB; an app's 1,000 streams could hold 8 GiB and end
 * the process for everyone. So the instance keeps count of what its streams hold unsent, and past
 * **256 MiB** a stream that is sent an event while holding at least **1 MiB** unsent (or the
 * budget's share of each stream holding anything, when that is less) and at least the average of
 * the streams holding anything is ended as a slow reader
 * (`StreamBufferLimitExceeded`): the slowest go, one event at a time, until the total is back under
 * the budget, and a client that keeps up (holding an event or two in flight) is not ended for it
 * (docs/decisions/0024-large-bodies-in-slices.md). The test is made before the event is written
 * too, counting it (`wouldEnd`): written first, a hundred streams' 15 MB events held 557 MB.
 */
import type { Writable } from "node:stream";

export const streamBacklogLimits = {
  /** Unsent bytes of all streams on the instance past which slow streams are ended (the default). */
  total: 256 * 1024 * 1024,
  /** A stream holding less than this unsent is never ended for the instance's total. */
  slowFrom: 1024 * 1024,
} as const;

export interface StreamAccount {
  /**
   * Before a write of `bytes`: whether the stream should end instead, being (with them) slow while
   * the instance would hold too much — so the budget is not passed by each stream's event first.
   */
  wouldEnd(bytes: number): boolean;
  /** After a write: whether the stream should end, being slow while the instance holds too much. */
  wrote(): boolean;
  /** The stream's connection is gone (an ended stream's last bytes count until then). */
  close(): void;
}

export class StreamBacklog {
  private total = 0;
  /** Streams holding anything unsent. */
  private holding = 0;

  constructor(readonly limit: number = streamBacklogLimits.total) {}

  /** Unsent bytes counted now (a metric; between writes and drains it can only be larger than true). */
  get bytes(): number {
    return this.total;
  }

  /**
   * Whether a stream holding `held` is among the slow readers the instance ends while its streams
   * hold `total` over the budget, `holding` of them something: at least the average, and at least
   * the floor (1 MiB, or the budget's share of each holding stream when that is less — else a
   * thousand streams holding just under 1 MiB each, never read, were never ended).
   */
  private slow(held: number, total: number, holding: number): boolean {
    const floor = Math.min(streamBacklogLimits.slowFrom, Math.floor(this.limit / Math.max(1, holding)));
    return total > this.limit && held >= floor && held * holding >= total;
  }

  open(output: Writable): StreamAccount {
    let counted = 0;
    const settle = () => {
      const now = output.writableLength;
      this.total += now - counted;
      if ((counted === 0) !== (now === 0)) this.holding += now === 0 ? -1 : 1;
      counted = now;
    };
    output.on("drain", settle);
    let open = true;
    return {
      wouldEnd: (bytes) => {
        if (!open) return false;
        settle();
        const after = counted + bytes;
        const total = this.total + bytes;
        const holding = this.holding + (counted === 0 && bytes > 0 ? 1 : 0);
        return this.slow(after, total, holding);
      },
      wrote: () => {
        if (!open) return false;
        settle();
        return this.slow(counted, this.total, this.holding);
      },
      close: () => {
        if (!open) return;
        open = false;
        output.off("drain", settle);
        this.total -= counted;
        if (counted !== 0) this.holding--;
        counted = 0;
      },
    };
  }
}
