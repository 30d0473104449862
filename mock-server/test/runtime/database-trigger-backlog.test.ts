/**
 * A database trigger's runs are bounded: a burst of writes faster than its function queues at
 * most `backlog` events (an ordered trigger runs one at a time, an unordered one a few at once);
 * past that the trigger is behind — the events until its backlog has drained are not run, and the
 * log says so when it falls behind and when it catches up with how many it left.
 */
import type { FastifyBaseLogger } from "fastify";
import { describe, expect, it } from "vitest";
import type { ChangeEvent } from "../../src/data/documents.ts";
import type { TriggerApp } from "../../src/runtime/auth-triggers.ts";
import { DatabaseTriggers } from "../../src/runtime/database-triggers.ts";

interface Run {
  n: number;
  finish: () => void;
}

/** An app with one database trigger on `app.notes` whose runs end when the test says. */
function fakeApp(unordered: boolean) {
  const runs: Run[] = [];
  const lines: { level: string; fields: Record<string, unknown>; msg: string }[] = [];
  const app: TriggerApp = {
    appId: "backlog-test",
    clock: { offsetMs: 0, now: () => 0 },
    config: {
      triggers: [
        {
          type: "DATABASE",
          name: "slow",
          functionName: "slow",
          database: "app",
          collection: "notes",
          operationTypes: ["INSERT"],
          ...(unordered ? { unordered: true } : {}),
        },
      ],
    } as TriggerApp["config"],
    runTriggerFunction: (_name, [event]) =>
      new Promise<unknown>((resolve) => {
        runs.push({ n: (event as { fullDocument: { n: number } }).fullDocument.n, finish: () => resolve(undefined) });
      }),
  };
  const logger = Object.fromEntries(
    ["warn", "info", "error"].map((level) => [
      level,
      (fields: Record<string, unknown>, msg: string) => lines.push({ level, fields, msg }),
    ]),
  ) as unknown as FastifyBaseLogger;
  return { app, runs, lines, log: () => logger };
}

const insert = (n: number): ChangeEvent => ({
  database: "app",
  collection: "notes",
  operationType: "insert",
  documentKey: { _id: n },
  fullDocument: { _id: n, n },
});

/** Lets the runs' settlements and the next starts happen. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("a database trigger's backlog", () => {
  it("runs an ordered trigger's events one at a time, and leaves those past its backlog until it drains", async () => {
    const { app, runs, lines, log } = fakeApp(false);
    const triggers = new DatabaseTriggers(app, log, { backlog: 3, unorderedRuns: 2 });
    for (let n = 1; n <= 6; n++) triggers.handle(insert(n));
    expect(runs.map((run) => run.n)).toEqual([1]);
    expect(lines).toEqual([
      {
        level: "warn",
        fields: { appId: "backlog-test", trigger: "slow", backlog: 3 },
        msg: "database trigger fell behind: its events are not run until its backlog has drained",
      },
    ]);
    // Room again, but still behind: nothing is taken until all that was queued has run.
    runs[0]!.finish();
    await settle();
    triggers.handle(insert(7));
    expect(runs.map((run) => run.n)).toEqual([1, 2]);
    runs[1]!.finish();
    await settle();
    runs[2]!.finish();
    await settle();
    expect(runs.map((run) => run.n)).toEqual([1, 2, 3]);
    expect(lines.at(-1)).toEqual({
      level: "warn",
      fields: { appId: "backlog-test", trigger: "slow", notRun: 4 },
      msg: "database trigger caught up",
    });
    triggers.handle(insert(8));
    expect(runs.map((run) => run.n)).toEqual([1, 2, 3, 8]);
  });

  it("runs an unordered trigger's events a few at once, within the same backlog", async () => {
    const { app, runs, lines, log } = fakeApp(true);
    const triggers = new DatabaseTriggers(app, log, { backlog: 4, unorderedRuns: 2 });
    for (let n = 1; n <= 5; n++) triggers.handle(insert(n));
    expect(runs.map((run) => run.n)).toEqual([1, 2]);
    expect(lines.map((line) => line.msg)).toEqual([
      "database trigger fell behind: its events are not run until its backlog has drained",
    ]);
    runs[1]!.finish();
    await settle();
    expect(runs.map((run) => run.n)).toEqual([1, 2, 3]);
    for (const run of runs.slice(2)) run.finish();
    runs[0]!.finish();
    await settle();
    expect(runs.map((run) => run.n)).toEqual([1, 2, 3, 4]);
    runs[3]!.finish();
    await settle();
    expect(lines.at(-1)?.fields).toEqual({ appId: "backlog-test", trigger: "slow", notRun: 1 });
  });

  it("keeps a trigger that keeps up quiet", async () => {
    const { app, runs, lines, log } = fakeApp(false);
    const triggers = new DatabaseTriggers(app, log);
    for (let n = 1; n <= 100; n++) {
      triggers.handle(insert(n));
      runs.at(-1)!.finish();
      await settle();
    }
    expect(runs.map((run) => run.n)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(lines).toEqual([]);
  });
});
