/**
 * require() in a function: external dependencies and Node's built-in modules are not run by this
 * server (docs/production.md, not provided); a function that asks for one is told so in words.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, callAppFunction, newApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
let appId: string;
let token: string;

beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
  appId = await newApp(app, {
    functions: { lodash: { source: `exports = () => require("lodash/cloneDeep")({ a: 1 });` } },
  });
  token = (await anonymousLogin(app, appId)).access_token;
});
afterAll(() => app.close());

describe("require() in a function", () => {
  it("says that external dependencies and built-in modules are not run here", async () => {
    const { response, body } = await callAppFunction(app, appId, token, "lodash", []);
    expect(response.statusCode).toBe(400);
    expect(body).toMatchObject({
      error_code: "FunctionExecutionError",
      error:
        'Error: require("lodash/cloneDeep") is not supported by this server: functions run without external dependencies or Node\'s built-in modules',
    });
  });
});
