/**
 * What one user, and one client address, may hold of an app's function process at once (app
 * settings `maxFunctionCallsPerUser`, `maxFunctionCallsPerAnonymousUser`,
 * `maxFunctionCallsPerAddress`; docs/decisions/0018-fair-shares.md): past a cap a client's call is
 * refused at once with 429, the other users' calls go on, and a call gives its place back however
 * it ends. The caps are per instance: what they share is the instance's function process. The calls held here wait on a `context.http` request the test answers when it chooses.
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, base, bearer, call, emailUser, newApp, openData, testApp } from "../helpers/app.ts";
import { until } from "../helpers/until.ts";

/** The target's requests not answered yet. */
const held: ServerResponse[] = [];
const target = createServer((_request, response) => {
  held.push(response);
});
let url: string;

let app: FastifyInstance;
let appId: string;

const functions = {
  hold: { source: "exports = async (url) => (await context.http.get({ url })).body.text();" },
  quick: { source: "exports = () => 1;" },
  fails: { source: "exports = () => { throw new Error('no'); };" },
  closed: { source: "exports = () => 1;", canEvaluate: { "%%true": false } },
};

beforeAll(async () => {
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`;
  app = await testApp({ allowFunctionSource: true });
  appId = await newApp(app, { ...openData, functions, maxFunctionCallsPerUser: 3, maxFunctionCallsPerAddress: 5 });
});
afterEach(async () => {
  release();
});
afterAll(async () => {
  await app.close();
  target.closeAllConnections();
  await new Promise((resolve) => target.close(resolve));
});

/** Answers every held request. */
function release(): void {
  for (const response of held.splice(0)) response.end("done");
}

/** A client's call of one of the app's functions, contract-checked; `from` is the client's address. */
const callFunction = (token: string, name: string, args: unknown[] = [], from = "127.0.0.1", id = appId) =>
  call(app, "callFunction", {
    method: "POST",
    url: `${base}/app/${id}/functions/call`,
    headers: bearer(token),
    payload: { name, arguments: args },
    remoteAddress: from,
  });

/** Starts `count` calls that wait until released, and waits until the target holds them all. */
async function holdCalls(token: string, count: number, from?: string, id?: string) {
  const before = held.length;
  const calls = Array.from({ length: count }, () => callFunction(token, "hold", [url], from, id));
  await until(() => held.length === before + count, `${count} held calls`);
  return calls;
}

const refusal = (text: string) => ({ error: `too many function calls: ${text}`, error_code: "TooManyRequests" });

describe("function calls a user may have running at once", () => {
  it("refuses a user's call past its cap with 429; others' calls go on; finished calls give their places back", async () => {
    const ada = await emailUser(app, appId, "ada@example.com");
    const bob = await emailUser(app, appId, "bob@example.com");
    const calls = await holdCalls(ada.access_token, 3);

    const refused = await callFunction(ada.access_token, "quick");
    expect(refused.response.statusCode).toBe(429);
    expect(refused.body).toMatchObject(refusal("a user may have 3 running at once"));
    expect((await callFunction(bob.access_token, "quick")).body).toEqual({ $numberInt: "1" });

    release();
    for (const answered of await Promise.all(calls)) expect(answered.body).toBe("done");
    expect((await callFunction(ada.access_token, "quick")).body).toEqual({ $numberInt: "1" });
  });

  it("gives the place back when the call fails, is refused by can_evaluate or names no function", async () => {
    const { access_token: token } = await emailUser(app, appId, "cy@example.com");
    for (let i = 0; i < 4; i++) {
      expect((await callFunction(token, "fails")).body).toMatchObject({ error_code: "FunctionExecutionError" });
      expect((await callFunction(token, "closed")).body).toMatchObject({ error_code: "FunctionExecutionError" });
      expect((await callFunction(token, "missing")).body).toMatchObject({ error_code: "FunctionNotFound" });
    }
    await holdCalls(token, 3);
    expect((await callFunction(token, "quick")).response.statusCode).toBe(429);
  });

  it("holds an anonymous user to 5 by default, a user to 20, never an anonymous user to more than a user", async () => {
    const defaults = await newApp(app, { functions });
    const guest = await anonymousLogin(app, defaults);
    await holdCalls(guest.access_token, 5, "198.51.100.1", defaults);
    const refused = await callFunction(guest.access_token, "quick", [], "198.51.100.2", defaults);
    expect(refused.response.statusCode).toBe(429);
    expect(refused.body).toMatchObject(refusal("an anonymous user may have 5 running at once"));

    const user = await emailUser(app, defaults, "hal@example.com");
    await holdCalls(user.access_token, 20, "198.51.100.3", defaults);
    const past = await callFunction(user.access_token, "quick", [], "198.51.100.3", defaults);
    expect(past.body).toMatchObject(refusal("a user may have 20 running at once"));

    // This file's app lets a user have 3: an anonymous user no more.
    const other = await anonymousLogin(app, appId);
    await holdCalls(other.access_token, 3, "198.51.100.4");
    expect((await callFunction(other.access_token, "quick", [], "198.51.100.4")).body).toMatchObject(
      refusal("a user may have 3 running at once"),
    );
  });

  it("holds a client address to its cap whatever its users; the same user from elsewhere goes on", async () => {
    const [dee, eve, fay] = await Promise.all(
      ["dee", "eve", "fay"].map((name) => emailUser(app, appId, `${name}@example.com`)),
    );
    await holdCalls(dee!.access_token, 3, "203.0.113.7");
    await holdCalls(eve!.access_token, 2, "203.0.113.7");
    const refused = await callFunction(fay!.access_token, "quick", [], "203.0.113.7");
    expect(refused.response.statusCode).toBe(429);
    expect(refused.body).toMatchObject(refusal("one address may have 5 running at once"));
    expect((await callFunction(fay!.access_token, "quick", [], "203.0.113.8")).body).toEqual({ $numberInt: "1" });
  });

  it("does not count the MongoDB service's actions", async () => {
    const { access_token: token } = await emailUser(app, appId, "gil@example.com");
    await holdCalls(token, 3);
    const action = await call(app, "callFunction", {
      method: "POST",
      url: `${base}/app/${appId}/functions/call`,
      headers: bearer(token),
      payload: { name: "count", service: "mongodb-atlas", arguments: [{ database: "d", collection: "c", query: {} }] },
    });
    expect(action.body).toEqual({ $numberLong: "0" });
  });
});
