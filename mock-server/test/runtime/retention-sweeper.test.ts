/**
 * The retention sweeper's schedule of work (runtime/retention-sweeper.ts), on sweeps that count:
 * each kind in batches until one comes back short; a failing batch ends that kind's sweep, the
 * others go on, and the next sweep takes up what was left; sweeps asked for at once are one.
 */
import { describe, expect, it } from "vitest";
import { defaultRetention } from "../../src/config/retention.ts";
import { RetentionSweeper } from "../../src/runtime/retention-sweeper.ts";
import { anonymousUserLifetimeMs, type RetentionSweeps } from "../../src/store/store.ts";

/** Rows of each kind, removed `batch` at a time; `failNext` makes the next statement fail (removing nothing). */
function rows(counts: { mail: number; tokens: number; sessions: number; anonymous_users: number }) {
  const calls: string[] = [];
  let failNext = false;
  const take = (kind: keyof typeof counts) => async (cutoff: number, batch: number) => {
    calls.push(`${kind}@${cutoff}`);
    if (failNext) {
      failNext = false;
      throw new Error("the database cannot be reached");
    }
    const n = Math.min(batch, counts[kind]);
    counts[kind] -= n;
    return n;
  };
  const sweeps: RetentionSweeps = {
    mail: take("mail"),
    tokens: take("tokens"),
    sessions: take("sessions"),
    anonymousUsers: take("anonymous_users"),
  };
  return { sweeps, calls, counts, fail: () => (failNext = true) };
}

describe("the retention sweeper", () => {
  it("removes each kind in batches until one comes back short, by the periods", async () => {
    const store = rows({ mail: 10, tokens: 4, sessions: 0, anonymous_users: 5 });
    const sweeper = new RetentionSweeper(store.sweeps, { mailMs: 1000 }, { batch: 4, now: () => 50_000 });
    await sweeper.sweep();
    expect(store.counts).toEqual({ mail: 0, tokens: 0, sessions: 0, anonymous_users: 0 });
    expect(sweeper.removed).toEqual({ mail: 10, tokens: 4, sessions: 0, anonymous_users: 5 });
    // mail 4, 4, 2; tokens 4, then 0 (a full batch may not be the last); sessions 0; anonymous
    // users created 90 days or more before now: 4, 1.
    const tokenCutoff = 50_000 - defaultRetention.tokensMs;
    const anonymousCutoff = 50_000 - anonymousUserLifetimeMs;
    expect(store.calls).toEqual([
      "mail@49000",
      "mail@49000",
      "mail@49000",
      `tokens@${tokenCutoff}`,
      `tokens@${tokenCutoff}`,
      "sessions@50000",
      `anonymous_users@${anonymousCutoff}`,
      `anonymous_users@${anonymousCutoff}`,
    ]);
    await sweeper.close();
  });

  it("stops a kind at a failure, goes on with the others, and the next sweep takes the rest", async () => {
    const store = rows({ mail: 10, tokens: 3, sessions: 2, anonymous_users: 1 });
    const lines: string[] = [];
    const sweeper = new RetentionSweeper(store.sweeps, {}, { batch: 4, log: (line) => lines.push(line) });
    store.fail();
    await sweeper.sweep();
    expect(store.counts).toEqual({ mail: 10, tokens: 0, sessions: 0, anonymous_users: 0 });
    expect(lines).toEqual(["retention sweep failed; the next one goes on"]);
    await sweeper.sweep();
    expect(store.counts).toEqual({ mail: 0, tokens: 0, sessions: 0, anonymous_users: 0 });
    expect(sweeper.removed).toEqual({ mail: 10, tokens: 3, sessions: 2, anonymous_users: 1 });
    await sweeper.close();
  });

  it("joins a sweep under way rather than starting another", async () => {
    const store = rows({ mail: 1, tokens: 0, sessions: 0, anonymous_users: 0 });
    const sweeper = new RetentionSweeper(store.sweeps, {}, {});
    await Promise.all([sweeper.sweep(), sweeper.sweep()]);
    expect(store.calls.filter((c) => c.startsWith("mail"))).toHaveLength(1);
    await sweeper.close();
  });
});
