/**
 * Scheduled triggers: at the times of their CRON schedule on the app's clock the function runs as
 * system, once per time however many instances; times jumped over run once (for the latest)
 * unless the trigger skips catch-up events. Tests move the app's clock and wait on the server's
 * own settling of its checks and runs (never on time).
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { latestTime, parseSchedule } from "../../src/runtime/scheduled-triggers.ts";
import { call, newApp, testApp, testStore } from "../helpers/app.ts";
import { logLines, triggerFailed } from "../helpers/log-lines.ts";

let app: FastifyInstance;
let appId: string;
const { logStream, lines: logged } = logLines();

const count = (collection: string) =>
  `exports = () => context.services.get("mongodb-atlas").db("audit").collection("${collection}").insertOne({ caller: context.user.type });`;

beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true, logLevel: "warn", logStream });
  appId = await newApp(app, {
    functions: {
      hourly: { source: count("hourly"), private: true },
      skipping: { source: count("skipping"), private: true },
      broken: { source: "exports = () => { throw new Error('no cleanup today'); };", private: true },
    },
    triggers: [
      { type: "SCHEDULED", name: "hourly", functionName: "hourly", schedule: "0 * * * *" },
      { type: "SCHEDULED", name: "skipping", functionName: "skipping", schedule: "0 * * * *", skipCatchupEvents: true },
      { type: "SCHEDULED", name: "failing", functionName: "broken", schedule: "30 * * * *" },
      { type: "SCHEDULED", name: "unreadable", functionName: "hourly", schedule: "every hour on the hour" },
      { type: "SCHEDULED", name: "off", functionName: "hourly", schedule: "* * * * *", disabled: true },
    ],
  });
});
afterAll(() => app.close());

async function kept(collection: string): Promise<{ caller: string }[]> {
  const { body } = await call(app, "listDocuments", {
    method: "GET",
    url: `/_mock/v1/apps/${appId}/data/audit/${collection}`,
  });
  return body.documents;
}

/** Moves the app's clock on `on` and waits for what fell due there to have run. */
async function advance(on: FastifyInstance, seconds: number): Promise<void> {
  const { response } = await call(on, "advanceClock", {
    method: "POST",
    url: `/_mock/v1/apps/${appId}/clock`,
    payload: { advanceBy: seconds },
  });
  expect(response.statusCode).toBe(200);
  await (await on.emulator.apps.get(appId))!.schedulesSettled();
}

describe("scheduled triggers", () => {
  it("find the latest time of a five-field schedule", () => {
    const hourly = parseSchedule("0 * * * *");
    expect(new Date(latestTime(hourly, Date.parse("2026-11-26T10:30:00Z"))!).toISOString()).toBe(
      "2026-11-26T10:00:00.000Z",
    );
    expect(latestTime(hourly, Date.parse("2026-11-26T10:00:00Z"))).toBe(Date.parse("2026-11-26T10:00:00Z"));
    const yearly = parseSchedule("0 0 1 1 *");
    expect(latestTime(yearly, Date.parse("2026-11-26T10:30:00Z"))).toBe(Date.parse("2026-01-01T00:00:00Z"));
    expect(() => parseSchedule("0 0 * * * *")).toThrow(/five fields/);
  });

  it("run at each time, as system; times jumped over once, or not when catch-up is skipped", async () => {
    const runtime = (await app.emulator.apps.get(appId))!;
    await runtime.schedulesSettled();
    expect(await kept("hourly")).toEqual([]);
    // To five past the next hour (one time due): the real time the test takes then crosses no
    // hour of the app's clock, whenever it runs.
    await advance(app, Math.ceil((3_600_000 - (runtime.clock.now() % 3_600_000) + 5 * 60_000) / 1000));
    expect(await kept("hourly")).toEqual([{ _id: expect.anything(), caller: "system" }]);
    expect(await kept("skipping")).toHaveLength(1);
    await advance(app, 3600);
    expect(await kept("hourly")).toHaveLength(2);
    expect(await kept("skipping")).toHaveLength(2);
    // Three hours at once: the latest time runs once; the trigger that skips catch-up waits.
    await advance(app, 3 * 3600);
    expect(await kept("hourly")).toHaveLength(3);
    expect(await kept("skipping")).toHaveLength(2);
    await advance(app, 3600);
    expect(await kept("hourly")).toHaveLength(4);
    expect(await kept("skipping")).toHaveLength(3);
    // Within the hour nothing more is due.
    await advance(app, 60);
    expect(await kept("hourly")).toHaveLength(4);
  });

  it("run again at their times after the app's clock is put back behind the last one run", async () => {
    const runtime = (await app.emulator.apps.get(appId))!;
    await advance(app, 24 * 3600);
    const before = (await kept("hourly")).length;
    const reset = await call(app, "resetClock", { method: "DELETE", url: `/_mock/v1/apps/${appId}/clock` });
    expect(reset.response.statusCode).toBe(200);
    await runtime.schedulesSettled();
    // To five past the next hour of the real time: its time runs, though a later one ran before.
    await advance(app, Math.ceil((3_600_000 - (runtime.clock.now() % 3_600_000) + 5 * 60_000) / 1000));
    expect(await kept("hourly")).toHaveLength(before + 1);
    await advance(app, 3600);
    expect(await kept("hourly")).toHaveLength(before + 2);
  });

  it("take the marks over at a later check when the one after the clock was put back failed", async () => {
    const runtime = (await app.emulator.apps.get(appId))!;
    await advance(app, 24 * 3600);
    const before = (await kept("hourly")).length;
    // The check the put-back clock asks for fails (the store unreachable a moment).
    vi.spyOn(runtime, "claimScheduledTime").mockRejectedValueOnce(new Error("the database is down"));
    await call(app, "resetClock", { method: "DELETE", url: `/_mock/v1/apps/${appId}/clock` });
    await runtime.schedulesSettled();
    vi.restoreAllMocks();
    // The next check takes the mark over (the schedule starts again there); the hour after runs.
    await advance(app, Math.ceil((3_600_000 - (runtime.clock.now() % 3_600_000) + 5 * 60_000) / 1000));
    await advance(app, 3600);
    expect(await kept("hourly")).toHaveLength(before + 1);
  });

  it("log a failing function and a schedule they cannot read", async () => {
    expect(triggerFailed(logged, "scheduled trigger failed", "unreadable", /cannot be read/)).toBe(true);
    expect(triggerFailed(logged, "scheduled trigger failed", "failing", /no cleanup today/)).toBe(true);
  });

  it.runIf(testStore() === "postgres")("run once for a time, whichever instances watch the schedule", async () => {
    const other = await testApp({
      databaseUrl: app.emulator.options.databaseUrl!,
      signingSecret: app.emulator.signingSecret,
      allowFunctionSource: true,
    });
    try {
      // The other instance watches the app's schedules from its start.
      expect(other.emulator.apps.cached(appId)).toBeDefined();
      const before = (await kept("hourly")).length;
      // Both clocks move past the same hour (each instance keeps its app clock in the harness).
      const clock = await call(app, "getClock", { method: "GET", url: `/_mock/v1/apps/${appId}/clock` });
      await call(other, "advanceClock", {
        method: "POST",
        url: `/_mock/v1/apps/${appId}/clock`,
        payload: { advanceBy: Math.round(clock.body.offsetMs / 1000) },
      });
      await Promise.all([advance(app, 3600), advance(other, 3600)]);
      expect(await kept("hourly")).toHaveLength(before + 1);
    } finally {
      await other.close();
    }
  });
});
