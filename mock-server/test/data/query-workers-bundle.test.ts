/**
 * The bundle's query worker (dist/query-worker.js beside dist/cli.js): an emulator started from the
 * bundle runs what does not fit its main thread in a worker, and answers each limit's error.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EmulatorProcess, ensureBuilt, killAll, startEmulatorProcess } from "../helpers/emulator-process.ts";
import { sendChecked } from "../helpers/fetch-contract.ts";
import { doubling, refusals, slowExpr } from "../helpers/hostile-shapes.ts";

let emulator: EmulatorProcess;
beforeAll(async () => {
  await ensureBuilt();
  emulator = await startEmulatorProcess([]);
}, 60_000);
afterAll(async () => {
  await emulator?.stop();
  killAll();
});

describe("the bundle's query worker", () => {
  it("answers the memory ceiling, the time limit and a result, off the main thread", async () => {
    const url = emulator.url;
    const { body: created } = await sendChecked(url, "createApp", "POST", "/_mock/v1/apps", {
      body: {
        config: { rules: { default: { read: true, write: true, insert: true, delete: true } }, queryTimeoutMs: 1_000 },
      },
    });
    const { body: session } = await sendChecked(
      url,
      "login",
      "POST",
      `/api/client/v2.0/app/${created.appId}/auth/providers/anon-user/login`,
      { body: {} },
    );
    const action = (name: string, argument: Record<string, unknown>) =>
      sendChecked(url, "callFunction", "POST", `/api/client/v2.0/app/${created.appId}/functions/call`, {
        token: session.access_token,
        body: { name, arguments: [{ database: "db", collection: "c", ...argument }], service: "mongodb-atlas" },
      });
    await action("insertOne", { document: { n: 1 } });
    const bomb = await action("aggregate", { pipeline: [{ $project: { x: { $eq: [doubling(26), doubling(26)] } } }] });
    expect(bomb.body.error).toMatch(new RegExp(`${refusals.memory.source}|${refusals.time.source}`));
    const slow = await action("find", { query: { $expr: slowExpr } });
    expect(slow.body.error).toMatch(refusals.time);
    // Larger than the main thread's slice, within the limits: the worker's answer.
    const large = await action("aggregate", {
      pipeline: [{ $project: { _id: 0, n: { $size: { $map: { input: { $range: [0, 50_000] }, in: "$$this" } } } } }],
    });
    expect(large.body).toEqual([{ n: { $numberInt: "50000" } }]);
  });
});
