/**
 * The in-process counters of the rate limits (app-services/counted-limits.ts): fixed windows by
 * the caller's clock; ended windows swept at a constant share per hit however many keys a client
 * rotates through; at most `maxLocalWindows` kept.
 */
import { describe, expect, it } from "vitest";
import { LocalCounters, maxLocalWindows } from "../../src/state/rate-counters.ts";

describe("local counters", () => {
  it("count a window by the caller's clock", async () => {
    const counters = new LocalCounters();
    const at = 5_000_000_000_000;
    expect(await counters.hit("k", 60_000, at)).toEqual({ hits: 1, ttlMs: 60_000 });
    expect(await counters.hit("k", 60_000, at + 59_000)).toEqual({ hits: 2, ttlMs: 1_000 });
    expect(await counters.hit("k", 60_000, at + 60_000)).toEqual({ hits: 1, ttlMs: 60_000 });
  });

  it("sweep ended windows as new ones come, a few times for many keys", async () => {
    const counters = new LocalCounters();
    const past = Date.now() - 10_000;
    for (let i = 0; i < 10_000; i++) await counters.hit(`ended-${i}`, 1000, past);
    expect(counters.sweeps).toBe(1);
    expect(counters.size).toBe(0);
    // A client rotating through addresses: each hit a new live window.
    for (let i = 0; i < 3 * maxLocalWindows; i++) await counters.hit(`live-${i}`, 3_600_000);
    expect(counters.size).toBeLessThanOrEqual(maxLocalWindows);
    // Far fewer sweeps than hits: each costs at most twice the windows added since the last one.
    expect(counters.sweeps).toBeLessThan(12);
    // The newest windows are kept, counting on.
    expect((await counters.hit(`live-${3 * maxLocalWindows - 1}`, 3_600_000)).hits).toBe(2);
  });
});
