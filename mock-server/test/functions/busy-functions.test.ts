/**
 * A function call that holds its process's thread (a loop, a long computation) holds no other
 * caller's calls made once the emulator has seen it busy, nor those made while it was silent before
 * (they wait in the emulator, never written to it): they go to another process, and the busy
 * call's callers to one of their own (functions/app-functions.ts `busyLimits`, sandbox.ts
 * `livenessLimits`, decision 0004).
 */
import type { FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { busyLimits } from "../../src/functions/app-functions.ts";
import { livenessLimits } from "../../src/functions/sandbox.ts";
import type { ControlEvent } from "../../src/state/events.ts";
import { anonymousLogin, base, bearer, call, newApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
});
afterAll(() => app.close());

const limits = { ...busyLimits };
const liveness = { ...livenessLimits };
afterEach(() => {
  Object.assign(busyLimits, limits);
  Object.assign(livenessLimits, liveness);
});

const functions = {
  spin: { source: "exports = () => { for (;;) {} };" },
  compute: { source: "exports = (ms) => { const end = Date.now() + ms; while (Date.now() < end) {} return 'done'; };" },
  hello: { source: "exports = () => 'hi';" },
  greedy: { source: "exports = () => { const kept = []; for (;;) kept.push(new Array(100000).fill(1.5)); };" },
  greedyLater: {
    source:
      "exports = () => { const end = Date.now() + 500; while (Date.now() < end) {} const kept = []; for (;;) kept.push(new Array(100000).fill(1.5)); };",
  },
};

async function busyApp() {
  // Long enough for the calls below to be made while the first one spins, on a loaded machine.
  const appId = await newApp(app, { functions, functionTimeoutMs: 3000 });
  const runtime = (await app.emulator.apps.get(appId))!;
  return { appId, runtime };
}

const callFn = (appId: string, token: string, name: string, args: unknown[] = []) =>
  call(app, "callFunction", {
    method: "POST",
    url: `${base}/app/${appId}/functions/call`,
    headers: bearer(token),
    payload: { name, arguments: args },
  });

/** Resolves with the app's next "function-busy" event: a busy process was given up. */
function nextBusy(appId: string): Promise<Extract<ControlEvent, { type: "request" }>> {
  return new Promise((resolve) => {
    const off = app.emulator.events.subscribe((event) => {
      if (event.type === "request" && event.appId === appId && event.action === "function-busy") {
        off();
        resolve(event);
      }
    });
  });
}

async function users(appId: string, n: number): Promise<string[]> {
  return Promise.all(Array.from({ length: n }, async () => (await anonymousLogin(app, appId)).access_token));
}

describe("a function call that holds its process", () => {
  it("holds no call made once it is seen; its caller's next calls get a process of their own", async () => {
    const { appId, runtime } = await busyApp();
    const [hostile, other, third] = await users(appId, 3);
    expect((await callFn(appId, other!, "hello")).body).toBe("hi");

    const busy = nextBusy(appId);
    let spun = false;
    const spinning = callFn(appId, hostile!, "spin").finally(() => {
      spun = true;
    });
    expect((await busy).detail).toEqual({ calls: 1, callers: 1, replaced: true });
    // The busy process still runs its call; others' calls are answered by another one meanwhile.
    const answered = await callFn(appId, other!, "hello");
    expect(answered.response.statusCode).toBe(200);
    expect(answered.body).toBe("hi");
    expect(spun).toBe(false);

    // The same caller spins again: in a process of its own, so others are still answered.
    const again = nextBusy(appId);
    const spinningAgain = callFn(appId, hostile!, "spin");
    expect((await callFn(appId, third!, "hello")).body).toBe("hi");
    await again;
    expect((await callFn(appId, third!, "hello")).body).toBe("hi");
    expect(runtime.functions.processCount).toBeLessThanOrEqual(busyLimits.processes);

    for (const done of [await spinning, await spinningAgain]) {
      expect(done.response.statusCode).toBe(400);
      expect(done.body).toMatchObject({ error_code: "ExecutionTimeLimitExceeded" });
    }
    // The stuck processes are gone; one serves on.
    await expect.poll(() => runtime.functions.processCount, { timeout: 5000, interval: 20 }).toBe(1);
    expect((await callFn(appId, other!, "hello")).body).toBe("hi");
  });

  it("holds no call made while it holds, before it is seen: that call goes to another process", async () => {
    // (Seen busy after a second: the call below is made before, once a ping sent after the spin's
    // run has gone unanswered, which a process reading its frames in order cannot have done yet.)
    livenessLimits.busyAfterMs = 1000;
    const { appId, runtime } = await busyApp();
    const [hostile, other] = await users(appId, 2);
    expect((await callFn(appId, other!, "hello")).body).toBe("hi");
    const busy = nextBusy(appId);
    let spun = false;
    const spinning = callFn(appId, hostile!, "spin").finally(() => {
      spun = true;
    });
    await expect.poll(() => runtime.functions.unansweredPingMs, { timeout: 5000 }).toBeGreaterThanOrEqual(100);
    const answered = await callFn(appId, other!, "hello");
    expect([answered.response.statusCode, answered.body]).toEqual([200, "hi"]);
    expect(spun).toBe(false);
    // Only the spinning call's caller is set apart: the other call was never given to its process.
    expect((await busy).detail).toEqual({ calls: 1, callers: 1, replaced: true });
    expect(runtime.functions.processCount).toBe(2);
    const { response, body } = await spinning;
    expect([response.statusCode, body.error_code]).toEqual([400, "ExecutionTimeLimitExceeded"]);
  });

  it("lets a long computation seen busy finish with its answer, then its process ends", async () => {
    const { appId, runtime } = await busyApp();
    const [slow, other] = await users(appId, 2);
    expect((await callFn(appId, other!, "hello")).body).toBe("hi");
    const busy = nextBusy(appId);
    let computed = false;
    const computing = callFn(appId, slow!, "compute", [2500]).finally(() => {
      computed = true;
    });
    await busy;
    expect((await callFn(appId, other!, "hello")).body).toBe("hi");
    expect(computed).toBe(false);
    const done = await computing;
    expect(done.response.statusCode).toBe(200);
    expect(done.body).toBe("done");
    await expect.poll(() => runtime.functions.processCount, { timeout: 5000, interval: 20 }).toBe(1);
  });

  it("keeps within the app's number of processes: with no room, calls made meanwhile wait for it", async () => {
    busyLimits.processes = 2;
    const { appId, runtime } = await busyApp();
    const [first, second, other] = await users(appId, 3);
    expect((await callFn(appId, other!, "hello")).body).toBe("hi");
    const busy = nextBusy(appId);
    const spinning = [callFn(appId, first!, "spin")];
    await busy;
    // One process finishing the spin, one for the rest: the room is taken. A second caller's spin
    // holds the process the others use, and theirs wait with it, as with one process.
    expect((await callFn(appId, other!, "hello")).body).toBe("hi");
    expect(runtime.functions.processCount).toBe(2);
    const kept = nextBusy(appId);
    spinning.push(callFn(appId, second!, "spin"));
    expect((await kept).detail).toMatchObject({ replaced: false });
    // A call made meanwhile waits in the emulator, not in the held process: once the first spin's
    // process ends, making room, it goes to another one.
    const waiting = callFn(appId, other!, "hello");
    for (const done of await Promise.all(spinning))
      expect(done.body).toMatchObject({ error_code: "ExecutionTimeLimitExceeded" });
    expect((await waiting).body).toBe("hi");
    expect(runtime.functions.processCount).toBeLessThanOrEqual(2);
    await expect
      .poll(async () => (await callFn(appId, other!, "hello")).body, { timeout: 5000, interval: 20 })
      .toBe("hi");
  });

  it("sets apart the callers of a call that ran its process out of memory", async () => {
    busyLimits.memoryMb = 48;
    // Not seen busy first: only running out of memory makes the greedy caller a suspect here.
    livenessLimits.busyAfterMs = 60_000;
    const { appId } = await busyApp();
    const [greedy, other] = await users(appId, 2);
    const failed = await callFn(appId, greedy!, "greedy");
    expect(failed.body).toMatchObject({ error_code: "ExecutionMemoryLimitExceeded" });
    // Its next call, even one that holds its process, holds no one else's.
    livenessLimits.busyAfterMs = liveness.busyAfterMs;
    const spinning = callFn(appId, greedy!, "spin");
    expect((await callFn(appId, other!, "hello")).body).toBe("hi");
    expect((await spinning).body).toMatchObject({ error_code: "ExecutionTimeLimitExceeded" });
  });

  it("runs a call made while another ran its process out of memory in another process", async () => {
    busyLimits.memoryMb = 48;
    livenessLimits.busyAfterMs = 60_000;
    const { appId, runtime } = await busyApp();
    const [greedy, other] = await users(appId, 2);
    expect((await callFn(appId, other!, "hello")).body).toBe("hi");
    const failing = callFn(appId, greedy!, "greedyLater");
    // (Made once a ping sent behind the greedy call's run goes unanswered: its process never sees it.)
    await expect.poll(() => runtime.functions.unansweredPingMs, { timeout: 5000 }).toBeGreaterThanOrEqual(100);
    const answered = await callFn(appId, other!, "hello");
    expect([answered.response.statusCode, answered.body]).toEqual([200, "hi"]);
    expect((await failing).body).toMatchObject({ error_code: "ExecutionMemoryLimitExceeded" });
  });
});
