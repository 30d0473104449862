/**
 * A seeded sample of the fuzzer (`npm run fuzz` runs 10,000+ cases): requests made from every
 * operation of the three documents and corrupted (see cases.ts) must get no 5xx, no hang, no crash,
 * and only answers their document lists, in its shapes; nothing may stay open afterwards.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { processKeys } from "../../src/idp/keys.ts";
import { fuzzCase, operationIds } from "./cases.ts";
import { FuzzHarness } from "./harness.ts";

let harness: FuzzHarness;
beforeAll(async () => {
  harness = await FuzzHarness.start();
  // The fake identity provider's RSA keys (one per process, 0.5–2.5 s each to make here) are made
  // before the sample's time is counted, not by the first case that mints a token.
  await Promise.all([processKeys.key("provider"), processKeys.key("stranger")]);
}, 30_000);
afterAll(() => harness.close());

describe("fuzzing (seeded sample)", () => {
  it("answers every corrupted request as its document says", async () => {
    await fc.assert(
      fc.asyncProperty(fuzzCase, async (c) => {
        const problem = await harness.run(c);
        expect(problem).toBeNull();
      }),
      { seed: 20261122, numRuns: 400, endOnFailure: true },
    );
    expect(await harness.finish()).toEqual([]);
    // The sample reaches most operations; the full run reaches all of them.
    expect(Object.keys(harness.stats.byOperation).length).toBeGreaterThan(operationIds.length * 0.8);
  }, 60_000);
});
