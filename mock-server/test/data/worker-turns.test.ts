/**
 * The query workers' turns (data/query-workers.ts, decision 0019): jobs wait in lanes, one per
 * user, and lanes in groups, one per client address whatever its users; a group runs on all
 * workers but one. So one user's slow queries, or those of many users one address signed in,
 * leave a worker to everyone else: another client's query that needs one is answered in time.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { queryWorkers } from "../../src/data/query-workers.ts";
import { base, bearer, call, newOpenApp, testApp } from "../helpers/app.ts";
import { slowExpr } from "../helpers/hostile-shapes.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
  await queryWorkers.warm();
});
afterAll(() => app.close());

/** A deadline the slow queries run to. */
const deadlineMs = 1_500;

/**
 * ~8,000 additions: past the main thread's slice (which moves an evaluation to a worker after 5 ms
 * and 4,096 steps), 150–200 ms in a worker beside the slow queries, 500 ms beside other test files
 * too: well within the deadline (60,000 took half a second alone, a second beside other files).
 */
const workerSized = {
  $gt: [
    {
      $reduce: {
        input: { $range: [0, 80] },
        initialValue: 0,
        in: {
          $add: [
            "$$value",
            { $reduce: { input: { $range: [0, 100] }, initialValue: 0, in: { $add: ["$$value", 1] } } },
          ],
        },
      },
    },
    0,
  ],
};

async function loginFrom(appId: string, address: string): Promise<string> {
  const { body } = await call(app, "login", {
    method: "POST",
    url: `${base}/app/${appId}/auth/providers/anon-user/login`,
    remoteAddress: address,
    payload: {},
  });
  return body.access_token;
}

const findFrom = (appId: string, token: string, address: string, expr: unknown) =>
  call(app, "callFunction", {
    method: "POST",
    url: `${base}/app/${appId}/functions/call`,
    headers: bearer(token),
    remoteAddress: address,
    payload: {
      name: "find",
      service: "mongodb-atlas",
      arguments: [{ database: "db", collection: "c", query: { $expr: expr } }],
    },
  });

/** The slow queries of `tokens` (each to its deadline, in a worker) from `address`, once all are in the workers. */
async function slowQueries(appId: string, tokens: string[], address: string, send = findFrom) {
  const before = queryWorkers.jobs;
  const queries = tokens.map((token) => send(appId, token, address, slowExpr));
  await expect.poll(() => queryWorkers.jobs - before).toBe(tokens.length);
  return queries;
}

/** The app's function that finds the documents matching `$expr` (its actions are its caller's). */
const functions = {
  findWhere: {
    source: `exports = (expr) => context.services.get("mongodb-atlas").db("db").collection("c").find({ $expr: expr }).toArray();`,
  },
};

const callFrom = (appId: string, token: string, address: string, expr: unknown) =>
  call(app, "callFunction", {
    method: "POST",
    url: `${base}/app/${appId}/functions/call`,
    headers: bearer(token),
    remoteAddress: address,
    payload: { name: "findWhere", arguments: [expr] },
  });

async function appWithDocument() {
  const appId = await newOpenApp(app, { queryTimeoutMs: deadlineMs, maxMongoActionsPerUser: 16, functions });
  await call(app, "callFunction", {
    method: "POST",
    url: `${base}/app/${appId}/functions/call`,
    headers: bearer(await loginFrom(appId, "192.0.2.1")),
    payload: {
      name: "insertOne",
      service: "mongodb-atlas",
      arguments: [{ database: "db", collection: "c", document: { a: 1 } }],
    },
  });
  return appId;
}

describe("the query workers' turns", () => {
  it("leave a worker to others while one user's slow queries wait", async () => {
    const appId = await appWithDocument();
    const busy = await loginFrom(appId, "203.0.113.5");
    const other = await loginFrom(appId, "198.51.100.7");
    const slow = await slowQueries(appId, Array(6).fill(busy), "203.0.113.5");
    const run = vi.spyOn(queryWorkers, "run");
    const found = await findFrom(appId, other, "198.51.100.7", workerSized);
    // (In a worker: the query is past the main thread's slice.)
    expect(run.mock.calls.some(([lane]) => lane.group.includes("198.51.100.7"))).toBe(true);
    run.mockRestore();
    expect([found.response.statusCode, found.body]).toEqual([
      200,
      [expect.objectContaining({ a: { $numberInt: "1" } })],
    ]);
    for (const { body } of await Promise.all(slow)) expect(body.error).toBe("operation exceeded time limit");
  });

  it("leave a worker to other addresses while one address's many users' slow queries wait", async () => {
    const appId = await appWithDocument();
    const sybils = await Promise.all(Array.from({ length: 12 }, () => loginFrom(appId, "203.0.113.5")));
    const other = await loginFrom(appId, "198.51.100.7");
    const slow = await slowQueries(appId, sybils, "203.0.113.5");
    const found = await findFrom(appId, other, "198.51.100.7", workerSized);
    expect([found.response.statusCode, found.body]).toEqual([
      200,
      [expect.objectContaining({ a: { $numberInt: "1" } })],
    ]);
    for (const { body } of await Promise.all(slow)) expect(body.error).toBe("operation exceeded time limit");
  });

  it("leave a worker to other addresses while the functions of one address's many users query", async () => {
    const appId = await appWithDocument();
    const sybils = await Promise.all(Array.from({ length: 12 }, () => loginFrom(appId, "203.0.113.5")));
    const other = await loginFrom(appId, "198.51.100.7");
    const slow = await slowQueries(appId, sybils, "203.0.113.5", callFrom);
    const found = await callFrom(appId, other, "198.51.100.7", workerSized);
    expect([found.response.statusCode, found.body]).toEqual([
      200,
      [expect.objectContaining({ a: { $numberInt: "1" } })],
    ]);
    for (const { body } of await Promise.all(slow)) expect(body.error).toContain("operation exceeded time limit");
  });
});
