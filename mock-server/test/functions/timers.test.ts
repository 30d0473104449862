/**
 * Timers in functions (sandbox-bootstrap.ts): setTimeout, setInterval, setImmediate and their
 * clear…, as the reference's retry example uses them (functions/handle-errors); each call's own:
 * those still pending when it ends never fire, and one that throws fails its call.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appOfFunctions, callAppFunction } from "../helpers/app.ts";

let app: FastifyInstance;
let appId: string;
let token: string;
let run: (name: string, ...args: unknown[]) => Promise<any>;

const functions: Record<string, string> = {
  // The reference's sleep (functions/handle-errors: mightFail's throttle).
  sleep: `async function sleep(milliseconds) {
      await new Promise((resolve) => setTimeout(resolve, milliseconds));
    }
    exports = async () => {
      const order = [];
      const cancelled = setTimeout(() => order.push("cancelled"), 5);
      clearTimeout(cancelled);
      setTimeout((a, b) => order.push("timeout " + a + b), 10, "x", "y");
      setImmediate(() => order.push("immediate"));
      let ticks = 0;
      const interval = setInterval(() => {
        order.push("tick " + ++ticks);
        if (ticks === 3) clearInterval(interval);
      }, 1);
      await sleep(40);
      const handle = setTimeout(() => {}, 1);
      return { order, unref: handle.unref() === handle, hasRef: handle.hasRef() };
    };`,
  // Leaves a timer behind; the next call looks whether it fired.
  leave: `exports = () => { setTimeout(() => { globalThis.leftFired = true; }, 20); return "left"; };`,
  look: `exports = async () => {
      await new Promise((resolve) => setTimeout(resolve, 60));
      return globalThis.leftFired === true;
    };`,
  throws: `exports = () => new Promise(() => { setTimeout(() => { throw new Error("boom in a timer"); }, 1); });`,
  flood: `exports = () => {
      try { for (let i = 0; i <= 10000; i++) setTimeout(() => {}, 100000); } catch (error) { return error.message; }
      return "no cap";
    };`,
  notAFunction: `exports = () => { try { setTimeout("code", 1); } catch (error) { return error.message; } };`,
};

beforeAll(async () => {
  ({ app, appId, token, run } = await appOfFunctions(functions));
});
afterAll(() => app.close());

describe("timers in a function", () => {
  it("run as Node runs them: timeouts with arguments, immediates, intervals, clears", async () => {
    const { order, unref, hasRef } = await run("sleep");
    // (The immediate first; the ticks in order; the 10 ms timeout among them, as the machine goes.)
    expect([...order].sort()).toEqual(["immediate", "tick 1", "tick 2", "tick 3", "timeout xy"]);
    expect(order[0]).toBe("immediate");
    expect(order.filter((e: string) => e.startsWith("tick"))).toEqual(["tick 1", "tick 2", "tick 3"]);
    expect({ unref, hasRef }).toEqual({ unref: true, hasRef: true });
  });

  it("of a call that ended never fire", async () => {
    expect(await run("leave")).toBe("left");
    expect(await run("look")).toBe(false);
  });

  it("fail their call when they throw", async () => {
    const { response, body } = await callAppFunction(app, appId, token, "throws", []);
    expect(response.statusCode).toBe(400);
    expect(body).toMatchObject({ error_code: "FunctionExecutionError", error: "Error: boom in a timer" });
  });

  it("are bounded per call, and take functions only", async () => {
    expect(await run("flood")).toBe("a function call may have at most 10000 timers pending");
    expect(await run("notAFunction")).toBe('The "callback" argument must be of type function');
  });
});
