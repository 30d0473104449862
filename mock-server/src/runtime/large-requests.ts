/**
 * Requests with large bodies in flight at once (docs/decisions/0024-large-bodies-in-slices.md).
 * While it is read and acted on, a large request costs the server many times its size in memory
 * (an insertMany of 9 MB peaked at ~300 MB more; four at once took the process to 1.26 GB), so
 * enough of them at once would end the process for everyone. A request whose declared body is
 * 1 MiB or more (or whose size is not declared: a chunked body, counted as the largest allowed)
 * takes a place for its declared bytes until its response closes: at most 64 MiB of them on this
 * instance, and at most two such requests at once from one client address. The rest are refused
 * before their bodies are read (the caller answers 429).
 */
import type { IncomingHttpHeaders, ServerResponse } from "node:http";

/** The largest request body any route takes (App Services' 18 MB; larger ones answer 413). */
export const maxRequestBodyBytes = 18 * 1024 * 1024;

export const largeRequestLimits = {
  /** A body of this many bytes or more is large. */
  from: 1024 * 1024,
  /** Large requests' declared bytes in flight on this instance, together. */
  bytes: 64 * 1024 * 1024,
  /** Large requests in flight from one client address. */
  perAddress: 2,
} as const;

export class LargeRequests {
  private inFlight = 0;
  private readonly byAddress = new Map<string, number>();

  constructor(private readonly largest = maxRequestBodyBytes) {}

  /** Declared bytes of large requests in flight now (a metric). */
  get bytes(): number {
    return this.inFlight;
  }

  /** The size a request declares for its body: 0 without one, the largest allowed when chunked. */
  private declaredSize(headers: IncomingHttpHeaders): number {
    const length = headers["content-length"];
    if (length !== undefined) {
      const bytes = Number(length);
      return Number.isFinite(bytes) && bytes >= 0 ? bytes : this.largest;
    }
    return headers["transfer-encoding"] === undefined ? 0 : this.largest;
  }

  /**
   * For a request about to be read: a large one takes a place, given back when `response` closes.
   * Answers why it is refused ("instance" or "address"), or null when it may go on.
   */
  hold(address: string, headers: IncomingHttpHeaders, response: ServerResponse): "instance" | "address" | null {
    const size = this.declaredSize(headers);
    if (size < largeRequestLimits.from) return null;
    const mine = this.byAddress.get(address) ?? 0;
    if (mine >= largeRequestLimits.perAddress) return "address";
    if (this.inFlight + size > largeRequestLimits.bytes) return "instance";
    this.inFlight += size;
    this.byAddress.set(address, mine + 1);
    response.once("close", () => {
      this.inFlight -= size;
      const left = (this.byAddress.get(address) ?? 1) - 1;
      if (left === 0) this.byAddress.delete(address);
      else this.byAddress.set(address, left);
    });
    return null;
  }
}
