/**
 * `context.runningAsSystem()` (the reference's context): true in a function that runs as the
 * system user — a function set to run as system, one it calls, a trigger's — and false in one
 * that runs as its caller; `context.user` stays the caller either way.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, functionResult, newApp, testApp } from "../helpers/app.ts";

const report = "exports = () => [context.runningAsSystem(), context.user.type, context.user.id];";

let app: FastifyInstance;
let appId: string;
let user: { access_token: string; user_id: string };

beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
  appId = await newApp(app, {
    functions: {
      asCaller: { source: report },
      asSystem: { source: report, runAsSystem: true },
      callsAsSystem: { source: "exports = () => context.functions.execute('asCaller');", runAsSystem: true },
    },
  });
  user = await anonymousLogin(app, appId);
});
afterAll(() => app.close());

describe("context.runningAsSystem()", () => {
  it("says whether the function runs as the system user, the caller staying context.user", async () => {
    const run = (name: string) => functionResult(app, appId, user.access_token, name, []);
    expect(await run("asCaller")).toEqual([false, "normal", user.user_id]);
    expect(await run("asSystem")).toEqual([true, "normal", user.user_id]);
    // A function a system function calls runs as the system too.
    expect(await run("callsAsSystem")).toEqual([true, "normal", user.user_id]);
    expect(await run("asCaller")).toEqual([false, "normal", user.user_id]);
  });
});
