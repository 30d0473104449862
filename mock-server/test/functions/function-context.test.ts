/**
 * The reference's `context` beyond data and calls: `context.runningAsSystem()`, true in a function
 * that runs as the system user (a function set to run as system, one it calls) and false in one
 * that runs as its caller, `context.user` staying the caller either way; and `context.app`'s
 * fields.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { base, call, emailUser, functionResult, newApp, testApp } from "../helpers/app.ts";

const report = "exports = () => [context.runningAsSystem(), context.user.type, context.user.id, context.user.data];";

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
      app: { source: "exports = () => context.app;" },
    },
  });
  user = await emailUser(app, appId, "ann@example.com");
});
afterAll(() => app.close());

describe("the function's context", () => {
  it("says whether the function runs as the system user, the caller staying context.user without its data", async () => {
    const run = (name: string) => functionResult(app, appId, user.access_token, name, []);
    const data = { email: "ann@example.com" };
    expect(await run("asCaller")).toEqual([false, "normal", user.user_id, data]);
    // ("In system functions, the user.data object is empty.")
    expect(await run("asSystem")).toEqual([true, "normal", user.user_id, {}]);
    // A function a system function calls runs as the system too.
    expect(await run("callsAsSystem")).toEqual([true, "normal", user.user_id, {}]);
    expect(await run("asCaller")).toEqual([false, "normal", user.user_id, data]);
  });

  it("names the app as the reference's context.app does, where the location endpoint says it is", async () => {
    const got = await functionResult(app, appId, user.access_token, "app", []);
    expect(got).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      clientAppId: appId,
      name: expect.any(String),
      projectId: expect.stringMatching(/^[0-9a-f]{24}$/),
      deployment: { model: "GLOBAL", providerRegion: "aws-us-east-1" },
      lastDeployed: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect(got.projectId).not.toBe(got.id);
    const location = await call(app, "getLocation", { method: "GET", url: `${base}/app/${appId}/location` });
    expect(location.body).toMatchObject({ deployment_model: "GLOBAL", location: "US-VA" });
  });
});
