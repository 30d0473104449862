/**
 * Request shapes an attacker sends to hold the server (issue 26, points 1 and 6): values built from
 * shared references that double with each step (`$reduce` of `["$$value", "$$value"]`), then
 * compared, hashed, grouped, copied or sent back; nested builders; deep `$let`; huge group keys;
 * crafted hash collisions; sorts and joins of large values; the same shapes as change-stream
 * filters and in updates; replies past MongoDB's 16 MiB. Against a real listening emulator (on
 * both stores), each attack must end with the documented error within its deadline, while the main
 * thread never spends 100 ms of CPU without a turn of its event loop (measured from its own CPU
 * time, which a busy machine does not inflate) and another client's requests, sent throughout, are
 * answered in under 100 ms (nine in ten; on a machine busy enough to make them wait longer anyway,
 * within twice a quiet moment's).
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deepMerge } from "../../src/config/app-config.ts";
import { queryWorkers } from "../../src/data/query-workers.ts";
import { openData, testStore } from "../helpers/app.ts";
import { expectTextContract, sendChecked } from "../helpers/fetch-contract.ts";
import { doubling, refusals, shapes, slowExpr } from "../helpers/hostile-shapes.ts";
import { listening } from "../helpers/listen.ts";
import { mainThreadHeld } from "../helpers/main-thread.ts";
import { openWatch, type WatchReader } from "../helpers/watch.ts";

let server: { app: FastifyInstance; url: string };
let url: string;
beforeAll(async () => {
  server = await listening();
  url = server.url;
  await queryWorkers.warm();
});
afterAll(() => server.app.close());

/** The deadline of the attacks' app (half the default: the suite waits for it often). */
const deadlineMs = 1_000;
/** How long another client may wait. */
const othersMs = 100;

type Action = (name: string, argument: Record<string, unknown>) => Promise<{ status: number; body: any }>;

async function user(appId: string): Promise<{ token: string; action: Action }> {
  const { body: session } = await sendChecked(
    url,
    "login",
    "POST",
    `/api/client/v2.0/app/${appId}/auth/providers/anon-user/login`,
    { body: {} },
  );
  const token = session.access_token as string;
  const action: Action = (name, argument) =>
    sendChecked(url, "callFunction", "POST", `/api/client/v2.0/app/${appId}/functions/call`, {
      token,
      body: { name, arguments: [{ database: "db", collection: "c", ...argument }], service: "mongodb-atlas" },
    });
  return { token, action };
}

let appId: string;
let attacker: { token: string; action: Action };
let other: { token: string; action: Action };

beforeAll(async () => {
  const { body: created } = await sendChecked(url, "createApp", "POST", "/_mock/v1/apps", {
    body: {
      config: deepMerge(structuredClone(openData), {
        rules: { "db.c": { read: { owner: "%%user.id" }, write: { owner: "%%user.id" } } },
        queryTimeoutMs: deadlineMs,
      }),
    },
  });
  appId = created.appId;
  attacker = await user(appId);
  other = await user(appId);
  const mine = (token: string) => JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()).sub;
  const attackerId = mine(attacker.token);
  const otherId = mine(other.token);
  await attacker.action("insertMany", {
    documents: [
      { owner: attackerId, title: "a", n: 1 },
      { owner: attackerId, title: "b", n: 2 },
    ],
  });
  await other.action("insertMany", { documents: [{ owner: otherId, title: "mine", n: 3 }] });
  // Warm: the other client's request and a first attack-sized evaluation (JIT, validators).
  await other.action("find", { query: {} });
});

interface Outcome {
  result: { status: number; body: any };
  attackMs: number;
  /** The other client's requests during the attack: nine in ten were answered within this. */
  otherMs: number;
  /** The same of as many requests in a quiet moment after (how long this machine makes one wait anyway). */
  quietMs: number;
  others: number;
  /** The most CPU time the main thread spent between two turns of a 2 ms timer. */
  heldMs: number;
}

/**
 * Runs `attack` while the other client sends `find` after `find`, and measures how long the main
 * thread was held meanwhile.
 */
async function once(attack: () => Promise<{ status: number; body: any }>): Promise<Outcome> {
  const held = mainThreadHeld();
  const started = performance.now();
  let done = false;
  const pending = attack().finally(() => {
    done = true;
  });
  const latencies: number[] = [];
  while (!done || latencies.length === 0) {
    const sent = performance.now();
    const { status, body } = await other.action("find", { query: {}, project: { _id: 0, title: 1 } });
    latencies.push(performance.now() - sent);
    expect(status).toBe(200);
    expect(body).toEqual([{ title: "mine" }]);
  }
  const result = await pending;
  const attackMs = performance.now() - started;
  const heldMs = held();
  const quiet: number[] = [];
  for (let i = 0; i < Math.max(10, latencies.length); i++) {
    const sent = performance.now();
    await other.action("find", { query: {}, project: { _id: 0, title: 1 } });
    quiet.push(performance.now() - sent);
  }
  return {
    result,
    attackMs,
    otherMs: ninthDecile(latencies),
    quietMs: ninthDecile(quiet),
    others: latencies.length,
    heldMs,
  };
}

/** The time within which nine in ten of `latencies` fell. */
function ninthDecile(latencies: number[]): number {
  const sorted = [...latencies].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.9))]!;
}

/**
 * `once`, up to three times while the other client's waits are past their bound: on a machine busy
 * with other work a request can wait for a core whatever the server does (the main thread's own CPU
 * time tells that apart, and is checked on every run). A run the check refuses is tried again too
 * — a full test run here once held the main thread 106 ms for a reply it holds 8–16 ms for alone (a
 * collection at the wrong moment) — and fails the test when no run passes it.
 */
async function during(
  attack: () => Promise<{ status: number; body: any }>,
  check: (outcome: Outcome) => void,
  served: (outcome: Outcome) => boolean = () => true,
) {
  let best: Outcome | undefined;
  let refused: unknown;
  for (let run = 0; run < 3; run++) {
    const outcome = await once(attack);
    try {
      check(outcome);
    } catch (error) {
      refused ??= error;
      continue;
    }
    if (outcome.otherMs < othersBound(outcome) && served(outcome)) return outcome;
    if (!best || outcome.otherMs < best.otherMs) best = outcome;
  }
  if (best === undefined) throw refused;
  return best;
}

function expectHeld(outcome: Outcome, error: RegExp, label: string, { storeReadHolds = false } = {}) {
  if (process.env.DEBUG_HOSTILE)
    console.log(label, JSON.stringify({ ...outcome, result: outcome.result.body }).slice(0, 300));
  expect(outcome.result.status, label).toBe(400);
  expect(outcome.result.body.error_code, label).toBe("MongoDBError");
  expect(outcome.result.body.error, label).toMatch(error);
  if (!storeReadHolds) expect(outcome.heldMs, `${label}: the main thread was held`).toBeLessThan(othersMs);
}

/** How long the server took to answer a request, by the link of its error (its app's journal). */
async function serverMs(link: string): Promise<number> {
  const [, app, id] = /\/apps\/([^/]+)\/requests\/([^/]+)$/.exec(link)!;
  const { body } = await sendChecked(
    url,
    "listRequests",
    "GET",
    `/_mock/v1/apps/${app}/requests?status=400&limit=1000`,
  );
  const entry = (body.requests as { id: string; durationMs: number }[]).find((r) => r.id === id);
  expect(entry, `the journal's entry of ${id}`).toBeDefined();
  return entry!.durationMs;
}

/**
 * What the other client may wait for its requests during an attack (nine in ten of them; the main
 * thread's CPU time bounds every single one): 100 ms — or, on a machine so busy that as many
 * requests in a quiet moment waited longer, twice what they waited.
 */
const othersBound = (outcome: Outcome) => Math.max(othersMs, 2 * outcome.quietMs);

/** The other client was served meanwhile. */
function expectServed(outcome: Outcome, label: string) {
  expect(outcome.otherMs, `${label}: the other client waited`).toBeLessThan(othersBound(outcome));
}

async function expectAttack(
  attack: () => Promise<{ status: number; body: any }>,
  error: RegExp,
  label: string,
  {
    storeReadHolds = false,
    deadline = deadlineMs,
  }: { storeReadHolds?: boolean; deadline?: number | (() => Promise<number>) } = {},
) {
  const outcome = await during(attack, (run) => expectHeld(run, error, label, { storeReadHolds }));
  if (!storeReadHolds) expectServed(outcome, label);
  // Within its deadline (a function: measured once the attack is over), as the server measured it
  // (a busy machine delays the client's view), and the worker's hard timeout with the request's
  // own handling.
  const within = typeof deadline === "number" ? deadline : await deadline();
  const tookMs = await serverMs(outcome.result.body.link);
  if (process.env.DEBUG_HOSTILE) console.log(label, { tookMs, within });
  expect(tookMs, `${label}: ended within the deadline`).toBeLessThan(within + 2 * othersMs);
}

const timeLimit = refusals.time;

describe("hostile request shapes", () => {
  for (const { label, action, argument, refusal } of shapes) {
    // Its own refusal — or the time limit, which may come first on a busy machine (each shape's
    // own refusal is checked deterministically in query-shapes.test.ts).
    const error = new RegExp(`${refusals[refusal].source}|${refusals.time.source}`);
    it(`${label}: the documented error within the deadline; others served meanwhile`, async () => {
      await expectAttack(() => attacker.action(action, argument), error, label);
    });
  }

  it("large data: a reply of stored documents past 16 MiB is refused; the app still answers", async () => {
    // An app of its own, with a deadline long enough that moving 17 MiB to a worker on a busy
    // machine does not decide the answer, and room for an anonymous user's 17 MiB.
    const { body: created } = await sendChecked(url, "createApp", "POST", "/_mock/v1/apps", {
      body: {
        config: deepMerge(structuredClone(openData), {
          queryTimeoutMs: 30_000,
          limits: { documentBytesPerAnonymousUser: 64 * 1024 * 1024 },
        }),
      },
    });
    const owner = await user(created.appId);
    const big = "x".repeat(1024 * 1024);
    for (let i = 0; i < 17; i++) {
      expect((await owner.action("insertOne", { document: { big, i } })).status).toBe(200);
    }
    // Reading 17 MiB from PostgreSQL decodes it on the main thread before anything evaluates it
    // (~150 ms here), holding others: batched decoding is issue 26's point 2; here only the reply
    // cap is checked on that store.
    await expectAttack(() => owner.action("find", { query: {} }), refusals.reply, "reply", {
      storeReadHolds: testStore() === "postgres",
      deadline: 30_000,
    });
    const some = await owner.action("find", { query: { i: { $lt: 3 } }, project: { _id: 0, i: 1 } });
    expect(some.body).toEqual([{ i: { $numberInt: "0" } }, { i: { $numberInt: "1" } }, { i: { $numberInt: "2" } }]);
  });

  it("a geometry of many vertices against a stored one of many: the time limit; others served meanwhile", async () => {
    // 10,000 stored vertices (an anonymous user's megabyte) and 30,000 asked: ~3·10^8 segment pairs
    // to compare, seconds of work for one document.
    const n = 10_000;
    const ring = Array.from({ length: n }, (_, i) => [
      10 * Math.cos((2 * Math.PI * i) / n),
      10 * Math.sin((2 * Math.PI * i) / n),
    ]);
    ring.push(ring[0]!);
    const owner = JSON.parse(Buffer.from(attacker.token.split(".")[1]!, "base64url").toString()).sub;
    const stored = await attacker.action("insertOne", {
      document: { owner, area: { type: "Polygon", coordinates: [ring] } },
    });
    expect(stored.status, JSON.stringify(stored.body)).toBe(200);
    const line = { type: "LineString", coordinates: Array.from({ length: 3 * n }, (_, i) => [-20 + (10 * i) / n, 30]) };
    // The request's 30,000 vertices (~1 MB of Extended JSON) are read, and the stored polygon with
    // them handed to a worker, before the evaluation's clock starts: reading them takes what the
    // same geometry takes against a field no document has (nothing to compare), on this machine
    // as busy as it is then — measured before and after the attack.
    const reading = async () => {
      const sent = performance.now();
      const { body } = await attacker.action("find", { query: { elsewhere: { $geoIntersects: { $geometry: line } } } });
      expect(body).toEqual([]);
      return performance.now() - sent;
    };
    const before = await reading();
    await expectAttack(
      () => attacker.action("find", { query: { area: { $geoIntersects: { $geometry: line } } } }),
      timeLimit,
      "geometries of many vertices",
      { deadline: async () => deadlineMs + Math.max(200, before, await reading()) },
    );
  });

  it("nothing is written by a refused update; a slow update holds no other writer", async () => {
    const slow = { $expr: slowExpr };
    const outcome = await during(
      async () => {
        const pending = attacker.action("updateMany", { query: slow, update: { $set: { touched: true } } });
        // Another user's write to the same collection meanwhile.
        const sent = performance.now();
        const write = await other.action("updateOne", { query: {}, update: { $inc: { n: 1 } } });
        const writeMs = performance.now() - sent;
        expect(write.body).toMatchObject({ matchedCount: { $numberInt: "1" } });
        const result = await pending;
        return { status: result.status, body: { ...result.body, writeMs } };
      },
      (run) => expectHeld(run, timeLimit, "slow update"),
      (run) => run.result.body.writeMs < othersBound(run),
    );
    expectServed(outcome, "slow update");
    expect(await serverMs(outcome.result.body.link)).toBeLessThan(deadlineMs + 2 * othersMs);
    expect(outcome.result.body.writeMs, "the other user's write").toBeLessThan(othersBound(outcome));
    const { body } = await attacker.action("find", { query: { touched: true } });
    expect(body).toEqual([]);
  });

  it("change-stream filters of these shapes end their streams; writes and others are not held", async () => {
    const open = (filter: Record<string, unknown>) =>
      openWatch(url, appId, attacker.token, { database: "db", collection: "c", filter });
    /** The stream's text up to its error event (its last), as the client read it. */
    const untilError = async (stream: WatchReader) => {
      let text = "";
      for (;;) {
        const block = await stream.next();
        if (block === null) return text;
        text += `${block}\n\n`;
        if (block.startsWith("event: error")) return text;
      }
    };
    const waitForWatchers = async (n: number) => {
      for (;;) {
        const { body } = await sendChecked(url, "getApp", "GET", `/_mock/v1/apps/${appId}`);
        if (body.watchers >= n) return;
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const owner = JSON.parse(Buffer.from(attacker.token.split(".")[1]!, "base64url").toString()).sub;
    // Warm: the routes this test uses compile their validators on first use (~100 ms of this
    // thread, once a process), which is not what is measured.
    const warm = await open({ "fullDocument.title": "warm" });
    await waitForWatchers(1);
    expect((await attacker.action("insertOne", { document: { owner, title: "warm" } })).status).toBe(200);
    expect(await warm.next()).toContain("warm");
    warm.close();
    const slowFilter = { $expr: slowExpr };
    let writeMs = Number.POSITIVE_INFINITY;
    let read: { response: WatchReader["response"]; text: string }[] = [];
    const outcome = await during(
      async () => {
        const streams = await Promise.all([
          open({ $expr: { $eq: [doubling(26), doubling(26)] } }),
          open({ $expr: { $gt: [{ $size: { $setUnion: [doubling(26), []] } }, 0] } }),
          open(slowFilter),
        ]);
        await waitForWatchers(3);
        const sent = performance.now();
        const write = await attacker.action("insertOne", { document: { owner, title: "trigger" } });
        writeMs = Math.min(writeMs, performance.now() - sent);
        expect(write.status).toBe(200);
        const texts = await Promise.all(streams.map(untilError));
        for (const stream of streams) stream.close();
        // Checked against the document after the measured run: compiling the contract's validator
        // is the test's own work on this thread, not the server's.
        read = streams.map((stream, i) => ({ response: stream.response, text: texts[i]! }));
        return { status: 200, body: texts };
      },
      (run) => {
        expect(run.heldMs, "the main thread was held").toBeLessThan(othersMs);
        // Each ends with the memory or the time limit (the attacker's filters take turns in the
        // workers: one may wait out its deadline behind another).
        for (const text of run.result.body as string[])
          expect(text).toMatch(/used too much memory|operation exceeded time limit/);
      },
      // Another run when the write waited past its bound (a core busy with other work): the
      // fastest of the runs' writes is the one held to it.
      (run) => writeMs < othersBound(run),
    );
    for (const { response, text } of read) expectTextContract("callFunctionStreaming", response, text);
    expectServed(outcome, "stream filters");
    expect(writeMs, "the write that triggered the filters").toBeLessThan(othersBound(outcome));
  });
});
