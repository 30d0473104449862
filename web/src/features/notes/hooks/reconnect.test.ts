import { describe, expect, it } from "vitest";
import { AppServicesRequestError } from "../../../lib/errors/service-errors.ts";
import { WatchStreamError } from "../api/call-function-streaming.ts";
import { afterFailure } from "./reconnect.ts";

const unavailable = (retryAfter?: string) =>
  AppServicesRequestError.fromResponse(
    new Response(null, { status: 503, headers: retryAfter ? { "retry-after": retryAfter } : {} }),
    { error: "service temporarily unavailable", error_code: "ServiceUnavailable" },
  );

describe("afterFailure: when a change stream tries again, and what the page says meanwhile", () => {
  it("waits 1 s, 2 s, 4 s … up to 30 s after errors and ends of the stream", () => {
    const broken = new TypeError("network error");
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => afterFailure(n, broken).delayMs)).toEqual([
      1000, 2000, 4000, 8000, 16000, 30000, 30000,
    ]);
    expect(afterFailure(1, new WatchStreamError("InvalidSession", "ended")).status).toBe("reconnecting");
    expect(afterFailure(3, null).status).toBe("reconnecting");
  });

  it("says the service is unavailable and asks again when it said to (Retry-After), not later", () => {
    expect(afterFailure(6, unavailable("1"))).toEqual({ status: "unavailable", delayMs: 1000 });
    expect(afterFailure(1, unavailable("5"))).toEqual({ status: "unavailable", delayMs: 5000 });
    // Without Retry-After: a second; and never sooner than half a second or later than 30 s.
    expect(afterFailure(4, unavailable())).toEqual({ status: "unavailable", delayMs: 1000 });
    expect(afterFailure(1, unavailable("0")).delayMs).toBe(500);
    expect(afterFailure(1, unavailable("600")).delayMs).toBe(30_000);
    // A proxy's 502 or 504 (an instance went away) means the same.
    expect(afterFailure(2, new AppServicesRequestError(502, "<html>")).status).toBe("unavailable");
  });

  it("waits at least as long as a refusal for too many streams said (429, Retry-After)", () => {
    const tooMany = (retryAfter: string) =>
      AppServicesRequestError.fromResponse(
        new Response(null, { status: 429, headers: { "retry-after": retryAfter } }),
        { error: "too many change streams", error_code: "TooManyRequests" },
      );
    expect(afterFailure(1, tooMany("20"))).toEqual({ status: "reconnecting", delayMs: 20_000 });
    // (Never sooner than its own backoff, nor later than 30 s.)
    expect(afterFailure(5, tooMany("2")).delayMs).toBe(16_000);
    expect(afterFailure(1, tooMany("3600")).delayMs).toBe(30_000);
  });
});
