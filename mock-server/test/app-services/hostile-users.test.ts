/**
 * One hostile user against the others (issue 26, docs/decisions/0018-fair-shares.md), on a
 * listening emulator, on both stores: anonymous users that spend everything they may leave another
 * user's writes and change streams working; a read of many documents and an insertMany of many
 * hold the server only in slices, so other requests are served meanwhile. The stalls are measured
 * on the server's own event loop (the test shares the process) relative to the work's length, as
 * the machine's speed varies.
 */
import { spawn } from "node:child_process";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deepMerge } from "../../src/config/app-config.ts";
import { openData } from "../helpers/app.ts";
import { expectFetchContract, expectTextContract, sendChecked, signIn } from "../helpers/fetch-contract.ts";
import { listening } from "../helpers/listen.ts";
import { mainThreadHeld } from "../helpers/main-thread.ts";
import { openWatch, watchPath } from "../helpers/watch.ts";

let app: FastifyInstance;
let url: string;
beforeAll(async () => {
  ({ app, url } = await listening({ allowFunctionSource: true }));
});
afterAll(() => app.close());

const base = "/api/client/v2.0";
const namespace = { database: "d", collection: "c" };

const send = (operationId: string, method: string, path: string, options: { body?: unknown; token?: string } = {}) =>
  sendChecked(url, operationId, method, path, options);
const anonymous = (appId: string) => signIn(url).anonymous(appId);
const registered = (appId: string, email: string) => signIn(url).registered(appId, email);

async function newApp(config: Record<string, unknown>): Promise<string> {
  const body = { config: deepMerge(structuredClone(openData), config) };
  return (await send("createApp", "POST", "/_mock/v1/apps", { body })).body.appId as string;
}

const action = (appId: string, token: string, name: string, argument: Record<string, unknown>) =>
  send("callFunction", "POST", `${base}/app/${appId}/functions/call`, {
    token,
    body: { name, service: "mongodb-atlas", arguments: [{ ...namespace, ...argument }] },
  });

/** Runs `work` and answers its result with the most CPU time the main thread spent without a turn meanwhile. */
async function heldWhile<T>(work: () => Promise<T>): Promise<[T, number]> {
  const held = mainThreadHeld();
  const result = await work();
  return [result, held()];
}

/**
 * Runs `work`: its result, how long it took, and the most CPU time the main thread spent without a
 * turn meanwhile (the event loop's own delay would count the moments the busy host ran another
 * process instead).
 */
async function stallDuring<T>(work: () => Promise<T>): Promise<{ result: T; workMs: number; stallMs: number }> {
  const started = performance.now();
  const [result, stallMs] = await heldWhile(work);
  return { result, workMs: performance.now() - started, stallMs };
}

describe("one user spending everything it may", () => {
  it("leaves another user's writes and change streams working", async () => {
    const appId = await newApp({
      limits: { documentsPerAnonymousUser: 20, anonymousDocuments: 50, documents: 1_000 },
    });
    // Anonymous users fill their own shares, then anonymous users' together.
    const junk = (n: number) => Array.from({ length: n }, (_, i) => ({ junk: i }));
    for (const [count, refusal] of [
      [20, "maximum number of documents per anonymous user (20) reached"],
      [20, "maximum number of documents per anonymous user (20) reached"],
      [10, "maximum number of documents of anonymous users (50) reached"],
      [0, "maximum number of documents of anonymous users (50) reached"],
    ] as const) {
      const attacker = await anonymous(appId);
      if (count > 0) expect((await action(appId, attacker, "insertMany", { documents: junk(count) })).status).toBe(200);
      const more = await action(appId, attacker, "insertOne", { document: { junk: "more" } });
      expect(more.body).toMatchObject({ error: refusal, error_code: "MongoDBError" });
    }
    // A user who signed up writes, and hears of its writes, as before.
    const victim = await registered(appId, "victim@example.com");
    const stream = await openWatch(url, appId, victim, namespace);
    expect(stream.response.status).toBe(200);
    await expect
      .poll(async () => (await send("getApp", "GET", `/_mock/v1/apps/${appId}`)).body.watchers, { timeout: 5_000 })
      .toBe(1);
    const written = await action(appId, victim, "insertOne", { document: { note: "mine" } });
    expect(written.status).toBe(200);
    const event = await stream.next();
    expect(event).toContain('"note":"mine"');
    stream.close();
  });
});

describe("work that takes long is done in slices", () => {
  it("a read of many documents lets other requests run between its batches", async () => {
    const appId = await newApp({ queryDocsExaminedLimit: 1_000_000, queryTimeoutMs: 60_000 });
    const documents = Array.from({ length: 20_000 }, (_, n) => ({ n, title: `Note ${n}`, body: "A short note body." }));
    for (let from = 0; from < documents.length; from += 5_000) {
      const seeded = await send("insertDocuments", "POST", `/_mock/v1/apps/${appId}/data/d/c`, {
        body: { documents: documents.slice(from, from + 5_000) },
      });
      expect(seeded.status).toBe(201);
    }
    const reader = await anonymous(appId);
    // Warm up (the first call compiles validators and the engine's paths).
    await action(appId, reader, "find", { query: { n: { $lt: 10 } } });
    const { result, workMs, stallMs } = await stallDuring(() =>
      action(appId, reader, "count", { query: { n: { $gte: 0 } } }),
    );
    expect(result.body).toEqual({ $numberLong: "20000" });
    expect(stallMs).toBeLessThan(Math.max(100, workMs / 4));
  }, 60_000);

  it("an insertMany of many documents lets other requests run while it is prepared and stored", async () => {
    const appId = await newApp({
      limits: { documentsPerUser: 1_000_000, documentBytesPerUser: 1024 ** 3, writesPerSecondPerUser: 1_000_000 },
    });
    const writer = await registered(appId, "bulk@example.com");
    await action(appId, writer, "insertMany", { documents: [{ warm: true }] });
    const documents = Array.from({ length: 20_000 }, (_, n) => ({ n, title: `Note ${n}`, body: "A short note body." }));
    const { result, workMs, stallMs } = await stallDuring(() => action(appId, writer, "insertMany", { documents }));
    expect(result.status).toBe(200);
    expect(result.body.insertedIds).toHaveLength(20_000);
    expect(stallMs).toBeLessThan(Math.max(100, workMs / 4));
    const health = await fetch(`${url}/_mock/v1/health`);
    await expectFetchContract("getHealth", health);
  }, 60_000);
});

describe("regular expressions", () => {
  it("that compile long are compiled in a worker, not on the main thread", async () => {
    const appId = await newApp({ queryTimeoutMs: 60_000 });
    const user = await anonymous(appId);
    expect((await action(appId, user, "insertOne", { document: { s: "a".repeat(300_000) } })).status).toBe(200);
    // RE2 writes each repetition out: 300,000 instructions (re2js compiles up to about a million,
    // which a pattern well within MongoDB's length holds), and 30 patterns of 3,000.
    const requests = {
      one: { query: { s: { $regex: "a{1000}".repeat(300) } }, project: { _id: 0, n: 1 } },
      many: {
        query: { $and: Array.from({ length: 30 }, (_, i) => ({ s: { $regex: `a{1000}b{1000}c{${i + 1}}` } })) },
        project: { _id: 0, n: 1 },
      },
    };
    const answers = { one: [{}], many: [] };
    for (const [name, argument] of Object.entries(requests)) {
      const [found, heldMs] = await heldWhile(() => action(appId, user, "find", argument));
      expect(found.body, name).toEqual(answers[name as keyof typeof answers]);
      // (~5 ms here; compiled on the main thread, 0.74 s and 0.17 s.)
      expect(heldMs, name).toBeLessThan(100);
    }
    // A change stream's filter: checked when the stream opens, then run on each event.
    const held = mainThreadHeld();
    const stream = await openWatch(url, appId, user, {
      ...namespace,
      filter: { "fullDocument.s": { $regex: "a{1000}".repeat(300) } },
    });
    const openHeldMs = held();
    try {
      expect(stream.response.status).toBe(200);
      await expect.poll(async () => (await send("getApp", "GET", `/_mock/v1/apps/${appId}`)).body.watchers).toBe(1);
      expect((await action(appId, user, "insertOne", { document: { s: "b" } })).status).toBe(200);
      expect((await action(appId, user, "insertOne", { document: { s: "a".repeat(300_000), n: 2 } })).status).toBe(200);
      expect(await stream.next()).toContain('"n":{"$numberInt":"2"}');
    } finally {
      stream.close();
    }
    // (~7 ms here; compiled on the main thread when the stream opened, 0.19 s: 2.5 s for 1,000 of
    // them, the most RE2 compiles, which a URL still holds.)
    expect(openHeldMs).toBeLessThan(100);
  }, 120_000);
});

describe("a request of a very wide object (200,000 keys, 6 MB)", () => {
  const wide = (n: number, value: (i: number) => unknown) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, value(i)]));
  /**
   * The most a request may hold the main thread at once: 150 ms, or on a slower machine 2.5 times
   * its time to write 200,000 fields' JSON at once — what is left between two slices (a collection,
   * a copy's table of 200,000 keys growing) takes longer there: 140–190 ms where that write took
   * ~100 ms, against ~45–55 ms on the project's usual host. Work done at once stays well past it.
   */
  let heldBound = 150;
  beforeAll(() => {
    const fields = wide(200_000, (i) => i);
    const before = performance.now();
    JSON.stringify(fields);
    heldBound = Math.max(150, 2.5 * (performance.now() - before));
  });
  /** An action's call sent as text made beforehand (the test shares the server's thread). */
  async function call(appId: string, token: string, text: string) {
    const response = await fetch(`${url}${base}/app/${appId}/functions/call`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: text,
    });
    const body = await response.text();
    expectTextContract("callFunction", response, body);
    return { status: response.status, body: JSON.parse(body) };
  }
  const callText = (name: string, argument: unknown) =>
    JSON.stringify({ name, service: "mongodb-atlas", arguments: [argument] });
  /** An app whose users may store documents of 200,000 fields, and whose actions may take seconds in slices. */
  const wideApp = () =>
    newApp({
      queryTimeoutMs: 120_000,
      limits: { documentBytesPerAnonymousUser: 64 * 1024 ** 2, documentBytesPerUser: 64 * 1024 ** 2 },
    });

  it("is parsed and its Extended JSON read in slices: the main thread is never held long", async () => {
    const appId = await newApp({});
    const user = await anonymous(appId);
    // The action refuses an argument that is not a document once it has read it: what is measured
    // is the body's parse and the arguments' reading, all of it (whole, 1.3 s on one turn here).
    const refused = { error: "find expects one argument document", error_code: "BadRequest" };
    expect((await call(appId, user, callText("find", [wide(1_000, () => ({ $exists: false }))]))).body).toMatchObject(
      refused,
    );
    const text = callText("find", [wide(200_000, () => ({ $exists: false }))]);
    const [result, heldMs] = await heldWhile(() => call(appId, user, text));
    expect(result.body).toMatchObject(refused);
    // (~90–130 ms here, mostly listing the 200,000 keys once and collecting garbage; 1 s before.)
    expect(heldMs).toBeLessThan(2 * heldBound);
  }, 120_000);

  it("groups into 200,000 fields, the pipeline walked in slices and checked where it runs", async () => {
    const appId = await newApp({ queryTimeoutMs: 120_000 });
    const user = await anonymous(appId);
    const groupText = (n: number) =>
      callText("aggregate", {
        ...namespace,
        pipeline: [{ $group: { _id: null, ...wide(n, () => ({ $sum: 1 })) } }, { $project: { _id: 1 } }],
      });
    // Warm up: the same paths, on a pipeline wide enough for them.
    expect((await call(appId, user, groupText(20_000))).body).toEqual([]);
    const text = groupText(200_000);
    const [grouped, heldMs] = await heldWhile(() => call(appId, user, text));
    expect(grouped.body).toEqual([]);
    // (~20–40 ms here; looking for the collections it joins through every field held it 173–298
    // ms, the rules' walk of it at once 271–276 ms, its accumulators parsed at once 421 ms.)
    expect(heldMs).toBeLessThan(heldBound);
  }, 300_000);

  it("finds with 200,000 conditions and stores 200,000 fields whole, holding the main thread only in slices", async () => {
    // (The find's 200,000 conditions are compiled in a worker, past the default 2 s on a busy machine.)
    const appId = await wideApp();
    const user = await anonymous(appId);
    const inserted = await call(
      appId,
      user,
      callText("insertMany", { ...namespace, documents: [{ n: 1 }, { n: 2, k7: 0 }] }),
    );
    expect(inserted.status).toBe(200);
    const findText = (n: number) =>
      callText("find", { ...namespace, query: wide(n, () => ({ $exists: false })), project: { _id: 0 } });
    const insertText = (n: number, collection: string) =>
      callText("insertOne", { database: "d", collection, document: wide(n, (i) => i) });
    // Warm up: the same paths, on objects wide enough for them (bodies read in slices too).
    expect((await call(appId, user, findText(20_000))).body).toEqual([{ n: { $numberInt: "1" } }]);
    expect((await call(appId, user, insertText(20_000, "warm"))).status).toBe(200);
    const find = findText(200_000);
    const [found, findHeldMs] = await heldWhile(() => call(appId, user, find));
    expect(found.body).toEqual([{ n: { $numberInt: "1" } }]);
    const insert = insertText(200_000, "w");
    const [stored, insertHeldMs] = await heldWhile(() => call(appId, user, insert));
    expect(stored.status).toBe(200);
    // The document comes back whole, every field as it was sent.
    const back = await call(appId, user, callText("findOne", { database: "d", collection: "w", query: {} }));
    const { _id, ...fields } = back.body;
    expect(Object.keys(fields)).toHaveLength(200_000);
    expect(fields.k199999).toEqual({ $numberInt: "199999" });
    expect(JSON.stringify(fields)).toBe(JSON.stringify(wide(200_000, (i) => ({ $numberInt: String(i) }))));
    // (Each walk of the wide object was one step of 0.1–0.4 s; the longest now is a slice or a
    // collection of garbage, ~20–60 ms here.)
    expect(findHeldMs).toBeLessThan(heldBound);
    expect(insertHeldMs).toBeLessThan(heldBound);
  }, 300_000);

  it("stores and matches 200,000 fields a dozen levels down, holding the main thread in slices", async () => {
    const appId = await wideApp();
    const user = await anonymous(appId);
    /** A wide object under twelve levels of one field each (arrays among them). */
    const deep = (n: number, value: (i: number) => unknown) => {
      let nested: unknown = wide(n, value);
      for (let level = 0; level < 12; level++) nested = { [`l${level}`]: level % 3 ? nested : [nested] };
      return nested;
    };
    const insertText = (n: number) => callText("insertOne", { ...namespace, document: { deep: deep(n, (i) => i) } });
    const findText = (n: number) =>
      callText("find", { ...namespace, query: { deep: deep(n, () => 0) }, project: { _id: 0, n: 1 } });
    // Warm up: the same paths, on objects wide enough for them.
    expect((await call(appId, user, insertText(20_000))).status).toBe(200);
    expect((await call(appId, user, findText(20_000))).body).toEqual([]);
    const insert = insertText(200_000);
    const [inserted, insertHeldMs] = await heldWhile(() => call(appId, user, insert));
    expect(inserted.status).toBe(200);
    const find = findText(200_000);
    const [found, findHeldMs] = await heldWhile(() => call(appId, user, find));
    expect(found.body).toEqual([]);
    // (~25–35 ms here on both stores; walked in slices only a few levels down, the insert's copy,
    // sizes and text held it 0.18–0.5 s, the find's job text 0.07–0.12 s.)
    expect(insertHeldMs).toBeLessThan(heldBound);
    expect(findHeldMs).toBeLessThan(heldBound);
  }, 300_000);

  it("updates 100,000 fields, sorts by 200,000 keys and projects 100,000 holding the main thread in slices", async () => {
    const appId = await wideApp();
    const user = await anonymous(appId);
    const requests = {
      set: (n: number) =>
        callText("updateOne", { ...namespace, query: { _id: 1 }, update: { $set: wide(n, (i) => i) } }),
      findOneAndUpdate: (n: number) =>
        callText("findOneAndUpdate", {
          ...namespace,
          filter: { _id: 1 },
          update: { $set: wide(n, (i) => 2 * i) },
          returnNewDocument: true,
          projection: { _id: 0, k1: 1 },
        }),
      sort: (n: number) => callText("find", { ...namespace, query: {}, sort: wide(n, () => 1), project: { k3: 1 } }),
      // (Its paths checked as MongoDB's parser checks them: in a tree, each path once.)
      exclusion: (n: number) => callText("find", { ...namespace, query: {}, project: wide(n, () => 0) }),
    };
    const answers = {
      set: { matchedCount: { $numberInt: "1" }, modifiedCount: { $numberInt: "1" } },
      findOneAndUpdate: { k1: { $numberInt: "2" } },
      sort: [{ _id: { $numberInt: "1" }, k3: { $numberInt: "6" } }],
      exclusion: [{ _id: { $numberInt: "1" } }],
    };
    expect((await call(appId, user, callText("insertOne", { ...namespace, document: { _id: 1 } }))).status).toBe(200);
    const heldMs: Record<string, number> = {};
    for (const [name, request] of Object.entries(requests)) {
      // Warm up: the same paths, on objects wide enough for them.
      expect((await call(appId, user, request(20_000))).status).toBe(200);
      // (The updates half the other cases' width: each takes seconds in slices, and at once their
      // walks held the thread well past the bound already; the sort's keys as wide as theirs.)
      const text = request(name === "sort" ? 200_000 : 100_000);
      const [answered, ms] = await heldWhile(() => call(appId, user, text));
      heldMs[name] = ms;
      expect(answered.body, name).toEqual(answers[name as keyof typeof answers]);
    }
    // (~10–50 ms here on both stores, a slice or a collection of garbage; at once, the update's new
    // document read back from the worker, its copies and the check of its paths held it 0.3–0.4 s
    // (0.7–1.2 s at 200,000 fields), and the sort's keys read from every match 0.1 s here, 0.36–0.52
    // s over a document of 200,000 fields.)
    for (const [name, ms] of Object.entries(heldMs)) expect(ms, name).toBeLessThan(heldBound);
  }, 300_000);

  it("streams a 200,000-field update's change holding the main thread only in slices", async () => {
    const appId = await wideApp();
    const user = await anonymous(appId);
    // The stream's reader is a process of its own: reading an 8 MB event here would hold this
    // thread too. It prints the number of each event it has read whole, looking at each chunk
    // once (appending chunks to one text searched from its start read the 8 MB event in ~5 s).
    const readerScript = `(async () => {
      const response = await fetch(process.env.STREAM_URL, {
        headers: { accept: "text/event-stream", authorization: "Bearer " + process.env.STREAM_TOKEN },
      });
      const decoder = new TextDecoder();
      let events = 0;
      // Whether an event has begun, whether it is a comment (a heartbeat), the last character read.
      let begun = false;
      let comment = false;
      let last = "";
      for await (const chunk of response.body) {
        const text = decoder.decode(chunk, { stream: true });
        let at = 0;
        while (at < text.length) {
          if (!begun) {
            begun = true;
            comment = text[at] === ":";
          }
          // Where the blank line that ends the event ends: across two chunks, or in this one.
          let end = 0;
          if (at > 0 || last !== "\\n" || text[0] !== "\\n") {
            const found = text.indexOf("\\n\\n", at);
            if (found < 0) {
              last = text[text.length - 1];
              break;
            }
            end = found + 1;
          }
          if (!comment) console.log(String(++events));
          begun = false;
          last = "";
          at = end + 1;
        }
      }
    })();`;
    const reader = spawn(process.execPath, ["-e", readerScript], {
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, STREAM_URL: `${url}${watchPath(appId, namespace)}`, STREAM_TOKEN: user },
    });
    try {
      let events = 0;
      reader.stdout.on("data", (data) => {
        for (const line of String(data).split("\n")) if (line !== "") events = Number(line);
      });
      const update = (n: number) =>
        callText("updateOne", { ...namespace, query: { _id: 1 }, update: { $set: wide(n, (i) => i) } });
      await expect.poll(async () => (await send("getApp", "GET", `/_mock/v1/apps/${appId}`)).body.watchers).toBe(1);
      expect((await call(appId, user, callText("insertOne", { ...namespace, document: { _id: 1 } }))).status).toBe(200);
      await expect.poll(() => events).toBe(1);
      // Warm up: the same paths, on a document wide enough for them.
      expect((await call(appId, user, update(20_000))).status).toBe(200);
      await expect.poll(() => events).toBe(2);
      const text = update(200_000);
      const held = mainThreadHeld();
      expect((await call(appId, user, text)).status).toBe(200);
      await expect.poll(() => events, { timeout: 60_000 }).toBe(3);
      const heldMs = held();
      // (~45–55 ms here on both stores, beside the other attack suites; with the event's text written
      // at once for the stream, 0.31 s, and on PostgreSQL for the notification and read back whole
      // from change_log, 0.97 s; with the event's updated fields' keys not kept, each walk of it
      // listed the 200,000 at once: 117–182 ms beside the other suites.)
      expect(heldMs).toBeLessThan(heldBound);
    } finally {
      reader.kill();
    }
  }, 300_000);

  it("stores a document of a million numbers (16 MB) holding the main thread only in slices", async () => {
    const appId = await wideApp();
    const user = await anonymous(appId);
    const numbers = (n: number) => Array.from({ length: n }, (_, i) => i * 1234567);
    // Warm up: the same paths, on fewer numbers.
    const warm = await call(appId, user, callText("insertOne", { ...namespace, document: { n: numbers(20_000) } }));
    expect(warm.status).toBe(200);
    const text = callText("insertOne", { ...namespace, document: { n: numbers(1_000_000) } });
    const [inserted, heldMs] = await heldWhile(() => call(appId, user, text));
    expect(inserted.status).toBe(200);
    // (~25-42 ms here. The test of its 11 MB of text for Extended JSON's marks, at once, held it
    // ~180 ms, its digits tried one by one; on PostgreSQL its text, grown a member at a time, was
    // put together in one piece for the statement and again for the change's notification: 112-136 ms.)
    expect(heldMs).toBeLessThan(heldBound / 2);
  }, 300_000);

  it("reads a Data API request of 200,000 fields holding the main thread only in slices", async () => {
    const appId = await newApp({
      queryTimeoutMs: 120_000,
      dataApi: {
        versions: ["v1"],
        runAsSystem: true,
        canEvaluate: { "%%request.requestHeaders.X-Key": "open-sesame" },
      },
    });
    // (The request's text is made beforehand: the test shares the server's thread.)
    const request = (n: number) =>
      JSON.stringify({ dataSource: "mongodb-atlas", ...namespace, document: wide(n, (i) => i) });
    const insert = (body: string) =>
      fetch(`${url}/app/${appId}/endpoint/data/v1/action/insertOne`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-key": "open-sesame" },
        body,
      });
    // Warm up: the same paths, on a document wide enough for them.
    expect((await insert(request(20_000))).status).toBe(200);
    const text = request(200_000);
    const [inserted, heldMs] = await heldWhile(() => insert(text));
    expect(inserted.status).toBe(200);
    expect(await inserted.json()).toEqual({ insertedId: expect.stringMatching(/^[0-9a-f]{24}$/) });
    // (~25 ms here; its body read at once as Extended JSON, ~0.6 s.)
    expect(heldMs).toBeLessThan(heldBound);
  }, 300_000);

  it("signs in through a custom function with a payload of 200,000 fields, holding the main thread in slices", async () => {
    // Anyone may send a custom function's login whatever payload: it is written for the function.
    const appId = await newApp({
      providers: { "custom-function": { enabled: true, authFunctionName: "authenticate" } },
      functions: { authenticate: { source: `exports = (payload) => "user-" + Object.keys(payload).length;` } },
    });
    const login = (body: string) =>
      fetch(`${url}${base}/app/${appId}/auth/providers/custom-function/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
    const payload = (n: number) =>
      JSON.stringify({ ...wide(n, (i) => i), options: { device: { sdkVersion: "2.0.1" } }, provider: "x" });
    // Warm up: the same paths, on a payload wide enough for them.
    expect((await login(payload(20_000))).status).toBe(200);
    const text = payload(200_000);
    const [answered, heldMs] = await heldWhile(() => login(text));
    const body = await answered.text();
    expectTextContract("login", answered, body);
    expect(answered.status).toBe(200);
    // The function saw the payload without the login's own fields.
    const profile = await send("getProfile", "GET", `${base}/auth/profile`, { token: JSON.parse(body).access_token });
    expect(profile.body.identities[0]).toMatchObject({ id: "user-200000", provider_type: "custom-function" });
    // (~20 ms here; its payload copied without the login's fields and written at once, ~0.3 s.)
    expect(heldMs).toBeLessThan(heldBound);
  }, 300_000);
});
