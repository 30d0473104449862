import { AppServicesRequestError } from "../../../lib/errors/service-errors.ts";

/** What the notes page says about its live updates. */
export type LiveStatus = "connecting" | "live" | "reconnecting" | "unavailable";

const maxDelayMs = 30_000;

/**
 * After the `failures`-th failure in a row of the change stream (`error`: what it failed with,
 * null when the service ended it): how long to wait before opening it again, and what the page says
 * meanwhile. A service that says it is unavailable for now (503, or a proxy's 502 or 504 when an
 * instance went away) is asked again when it said to (Retry-After, else a second), so the page is
 * live again as soon as it is back; anything else waits longer each time (1 s, 2 s … 30 s), and a
 * refusal for too many (429) at least as long as it said (Retry-After).
 */
export function afterFailure(failures: number, error: unknown): { status: LiveStatus; delayMs: number } {
  if (error instanceof AppServicesRequestError && error.unavailable) {
    return { status: "unavailable", delayMs: Math.min(Math.max(error.retryAfterMs ?? 1000, 500), maxDelayMs) };
  }
  const backoff = Math.min(1000 * 2 ** (failures - 1), maxDelayMs);
  // Too many streams or requests (429): not sooner than the server said (Retry-After).
  const asked = error instanceof AppServicesRequestError && error.status === 429 ? (error.retryAfterMs ?? 0) : 0;
  return { status: "reconnecting", delayMs: Math.min(Math.max(backoff, asked), maxDelayMs) };
}
