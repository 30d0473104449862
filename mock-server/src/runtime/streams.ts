/**
 * The change streams one app has open on this instance, each with the session it was opened on:
 * ended when that session ends (logout, revocation, API key disabled or deleted, password reset —
 * announced by the store from any instance), when its user is disabled or deleted, when the session
 * runs out by the app's clock, or when the app is reset or deleted. Also where the per-user,
 * per-address and per-app caps are counted (per instance). See docs/decisions/0011-revocation.md.
 */
import type { Clock } from "../state/clock.ts";
import type { EndedSessions } from "../store/store.ts";
import { HeldCounts } from "./held-counts.ts";

export interface OpenStream {
  userId: string;
  /** The client address it was opened from (per-address cap). */
  address: string;
  sessionId: string;
  /** The API key the session was opened with, if any. */
  apiKeyId: string | undefined;
  /** When the session runs out (the app's clock, ms). */
  expiresAt: number;
  /**
   * Ends the stream with an error event saying why: `InvalidSession` when its session, user or app
   * is gone ("session"), `ServiceUnavailable` when this server stops or lost events ("service": the
   * session is still good, and a client reopens the stream without renewing its token).
   */
  close(reason: string, cause?: StreamEnd): void;
}

/** Why a stream ends: its session is over, or the server cannot go on serving it. */
export type StreamEnd = "session" | "service";

/** The reason streams end with when the database cannot be reached (events may have been missed). */
export const databaseLost = "the connection to the database was lost";

export interface StreamCaps {
  perUser: number;
  perApp: number;
  perAddress: number;
}

/** Which cap a new stream would pass. */
export type StreamCap = "user" | "app" | "address";

// setTimeout's longest delay; a later expiry is reached in steps.
const maxTimerMs = 2 ** 31 - 1;

export class StreamRegistry {
  private readonly open = new Map<OpenStream, NodeJS.Timeout | null>();
  private readonly held = new HeldCounts();

  constructor(private readonly clock: Clock) {}

  get size(): number {
    return this.open.size;
  }

  /** Whether one more stream of this user, from this address, fits, or which cap it would pass. */
  admits(userId: string, address: string, caps: StreamCaps): "ok" | StreamCap {
    if (this.open.size >= caps.perApp) return "app";
    if (this.held.ofUser(userId) >= caps.perUser) return "user";
    if (this.held.ofAddress(address) >= caps.perAddress) return "address";
    return "ok";
  }

  /** Adds a stream (after `admits`, with nothing awaited between); one whose session ran out ends at once. */
  add(stream: OpenStream): void {
    this.held.take(stream.userId, stream.address);
    this.open.set(stream, null);
    this.arm(stream);
  }

  /** Forgets a stream (it ended). */
  delete(stream: OpenStream): void {
    if (!this.open.has(stream)) return;
    const timer = this.open.get(stream);
    if (timer) clearTimeout(timer);
    this.open.delete(stream);
    this.held.give(stream.userId, stream.address);
  }

  /** Ends the streams of sessions that ended. */
  sessionsEnded(ended: EndedSessions): void {
    const reason = ended.apiKeyId
      ? "the API key of the stream's session was disabled or deleted"
      : ended.sessionId
        ? "the stream's session has ended"
        : "the user's sessions have ended";
    for (const stream of [...this.open.keys()]) {
      if (stream.userId !== ended.userId) continue;
      if (ended.sessionId !== undefined && stream.sessionId !== ended.sessionId) continue;
      if (ended.apiKeyId !== undefined && stream.apiKeyId !== ended.apiKeyId) continue;
      stream.close(reason);
    }
  }

  closeAll(reason: string, cause: StreamEnd = "session"): void {
    for (const stream of [...this.open.keys()]) stream.close(reason, cause);
  }

  /** The app's clock moved: streams whose session ran out end, the others wait anew. */
  clockChanged(): void {
    for (const stream of [...this.open.keys()]) this.arm(stream);
  }

  private arm(stream: OpenStream): void {
    if (!this.open.has(stream)) return;
    const previous = this.open.get(stream);
    if (previous) clearTimeout(previous);
    const left = stream.expiresAt - this.clock.now();
    if (left <= 0) {
      this.open.set(stream, null);
      stream.close("the stream's session has expired");
      return;
    }
    const timer = setTimeout(() => this.arm(stream), Math.min(left, maxTimerMs));
    timer.unref();
    this.open.set(stream, timer);
  }
}
