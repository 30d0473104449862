/**
 * Requests with sizable bodies in flight at once (docs/decisions/0024-large-bodies-in-slices.md).
 * While it is read and acted on, a large request costs the server many times its size in memory
 * (an insertMany of 9 MB peaked at ~300 MB more; four at once took the process to 1.26 GB), so
 * enough of them at once would end the process for everyone.
 *
 * A request whose declared body is 16 KiB or more (or whose size is not declared: a chunked body,
 * counted as the largest allowed) takes a place before its body is read: from one client address
 * (an IPv6 client: its /64) at most two at once of 1 MiB or more ("large"), and sixteen of 16 KiB
 * to 1 MiB. It is charged
 * the body bytes it has sent, as they are read, until its response closes; together they may not
 * pass the instance's bodies budget (64 MiB; `--budgets`). So a request is refused before its body is read when its declared
 * size does not fit beside what the others have sent, a body is refused as it arrives when its
 * bytes would pass the budget (429 either way), and a body that sends nothing for 10 s loses its
 * connection. A client that declares bodies and sends none of them holds no bytes of the budget
 * (only its address's places). A body under 16 KiB is bounded by its address's connections (256:
 * 4 MiB) and the server's request timeout (Node's five minutes for the whole request).
 *
 * The bytes are counted by a stream between the request and its parser (`meter`), or, for a parser
 * that reads the request itself (multipart forms), from the request's socket every quarter of the
 * idle time; such a body that takes the instance past its budget loses its connection (the newest
 * first), as it cannot be answered before its parser has read it.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { Transform, type TransformCallback } from "node:stream";
import { addressKey } from "../http/client-address.ts";

/** The largest request body any route takes (App Services' 18 MB; larger ones answer 413). */
export const maxRequestBodyBytes = 18 * 1024 * 1024;

/**
 * The largest request line and headers together (Node's default is 16 KiB; past it 431): room for
 * an access token carrying the 16 KiB of custom user data it may (~23 KB), in `Authorization` or a
 * stream's `baas_at`, beside the browser's other headers.
 */
export const maxRequestHeaderBytes = 64 * 1024;

export const largeRequestLimits = {
  /** A body of this many bytes or more takes a place. */
  heldFrom: 16 * 1024,
  /** A body of this many bytes or more is large. */
  from: 1024 * 1024,
  /** Body bytes of held requests in flight on this instance, together (the default bodies budget). */
  bytes: 64 * 1024 * 1024,
  /** Large requests in flight from one client address. */
  perAddress: 2,
  /** Requests with bodies of `heldFrom` to `from` bytes in flight from one client address. */
  sizablePerAddress: 16,
  /** How long a held body may send nothing before its connection is closed. */
  idleMs: 10_000,
} as const;

/** Why a request is refused before its body is read: the instance's budget, or its address's places. */
export type Refusal = "instance" | "address" | "address-sizable";

interface Place {
  /** Its declared size (the largest allowed when chunked). */
  size: number;
  /** Body bytes read so far: what it is charged. */
  received: number;
  /** When its last bytes were read (or it was admitted). */
  lastAt: number;
  /** Its body is read whole. */
  complete: boolean;
  /** Its bytes are counted as its parser reads them (else from its socket). */
  metered: boolean;
  /** Its socket's bytes read when it was admitted. */
  socketStart: number;
  /** Its response has closed: its bytes are no longer charged. */
  released: boolean;
  request: IncomingMessage;
  response: ServerResponse;
}

export class LargeRequests {
  private charged = 0;
  /** Places taken per address: large ones, and the others (keys prefixed `s`). */
  private readonly byAddress = new Map<string, number>();
  private readonly held = new Map<ServerResponse, Place>();
  private idleCheck: NodeJS.Timeout | null = null;

  constructor(
    private readonly limits: { bytes: number; idleMs: number } = largeRequestLimits,
    private readonly largest = maxRequestBodyBytes,
  ) {}

  /** Body bytes of held requests in flight now (a metric). */
  get bytes(): number {
    return this.charged;
  }

  /** Held requests in flight now. */
  get places(): number {
    return this.held.size;
  }

  /** The size a request declares for its body: 0 without one, the largest allowed when chunked. */
  declaredSize(headers: IncomingHttpHeaders): number {
    const length = headers["content-length"];
    if (length !== undefined) {
      const bytes = Number(length);
      return Number.isFinite(bytes) && bytes >= 0 ? bytes : this.largest;
    }
    return headers["transfer-encoding"] === undefined ? 0 : this.largest;
  }

  /**
   * For a request about to be read: one with a body of 16 KiB or more takes a place, given back
   * when `response` closes. Answers why it is refused, or null when it may go on (its body then
   * goes through `meter`).
   */
  hold(address: string, request: IncomingMessage, response: ServerResponse): Refusal | null {
    const size = this.declaredSize(request.headers);
    if (size < largeRequestLimits.heldFrom) return null;
    // Declared past the largest body any route takes: refused 413 by its length before it is read
    // (told to come back in a second, 429, it never could).
    if (size > this.largest) return null;
    const large = size >= largeRequestLimits.from;
    const key = large ? addressKey(address) : `s${addressKey(address)}`;
    const mine = this.byAddress.get(key) ?? 0;
    if (mine >= (large ? largeRequestLimits.perAddress : largeRequestLimits.sizablePerAddress))
      return large ? "address" : "address-sizable";
    if (this.charged + size > this.limits.bytes) return "instance";
    const place: Place = {
      size,
      received: 0,
      lastAt: performance.now(),
      complete: false,
      metered: false,
      socketStart: request.socket?.bytesRead ?? 0,
      released: false,
      request,
      response,
    };
    this.held.set(response, place);
    this.byAddress.set(key, mine + 1);
    this.idleCheck ??= setInterval(() => this.check(), Math.max(10, this.limits.idleMs / 4)).unref();
    response.once("close", () => {
      this.held.delete(response);
      place.released = true;
      this.charged -= place.received;
      const left = (this.byAddress.get(key) ?? 1) - 1;
      if (left === 0) this.byAddress.delete(key);
      else this.byAddress.set(key, left);
      if (this.held.size === 0 && this.idleCheck) {
        clearInterval(this.idleCheck);
        this.idleCheck = null;
      }
    });
    return null;
  }

  /**
   * The body of a request as its parser reads it: a held one's bytes are charged as they come,
   * and the body fails with `refused()` when they would take the instance past its budget. The
   * request is read through only once the parser reads the stream answered here: a parser that
   * reads the request itself leaves it alone (its bytes are then counted from the socket).
   */
  meter<S extends NodeJS.ReadableStream>(response: ServerResponse, body: S, refused: () => Error): S | Transform {
    const place = this.held.get(response);
    if (!place) return body;
    const counted = new Transform({
      transform: (chunk: Buffer, _encoding: BufferEncoding, next: TransformCallback) => {
        // (Bytes still read after the response closed, a stray body being dropped, are not charged.)
        if (place.released) return next(null, chunk);
        if (this.charged + chunk.length > this.limits.bytes) return next(refused());
        place.received += chunk.length;
        this.charged += chunk.length;
        place.lastAt = performance.now();
        next(null, chunk);
      },
      flush: (done: TransformCallback) => {
        place.complete = true;
        done();
      },
    });
    // Read (or resumed to be dropped), in flowing or paused mode.
    const start = (event?: string | symbol) => {
      if (event !== undefined && event !== "readable") return;
      if (place.metered) return;
      counted.off("newListener", start);
      // What the socket count charged so far goes through the stream again.
      if (!place.released) this.charged -= place.received;
      place.received = 0;
      place.metered = true;
      body.on("error", (error) => counted.destroy(error));
      body.pipe(counted);
    };
    counted.on("newListener", start);
    counted.once("resume", () => start());
    return counted;
  }

  /**
   * Every quarter of the idle time: the bytes of bodies read by their parsers from the request
   * itself, counted from their sockets (past the budget, the newest such bodies lose their
   * connections); and the connections of held bodies that sent nothing for the idle time, closed.
   */
  private check(): void {
    const now = performance.now();
    for (const place of this.held.values()) {
      if (place.metered || place.complete) continue;
      const read = Math.min(place.size, (place.request.socket?.bytesRead ?? place.socketStart) - place.socketStart);
      if (read > place.received) {
        this.charged += read - place.received;
        place.received = read;
        place.lastAt = now;
      }
      if (place.request.complete) place.complete = true;
    }
    const unmetered = [...this.held.values()].filter((place) => !place.metered && !place.complete);
    for (let i = unmetered.length - 1, over = this.charged - this.limits.bytes; i >= 0 && over > 0; i--) {
      over -= unmetered[i]!.received;
      unmetered[i]!.response.socket?.destroy();
    }
    for (const place of this.held.values())
      if (!place.complete && place.lastAt < now - this.limits.idleMs) place.response.socket?.destroy();
  }
}
