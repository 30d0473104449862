/**
 * What the change streams of an instance hold unsent, together (runtime/stream-backlog.ts, decision
 * 0024): past the instance's budget (lowered here to 4 MiB from 256 MiB), a stream that is sent an
 * event while 1 MiB or more of its events, and at least the streams' average, are unread ends with
 * `StreamBufferLimitExceeded`, and a stream whose client reads goes on receiving every event.
 */
import { EventEmitter } from "node:events";
import { request as httpRequest, type IncomingMessage } from "node:http";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, expect, it } from "vitest";
import { StreamBacklog } from "../../src/runtime/stream-backlog.ts";
import { openData } from "../helpers/app.ts";
import { sendChecked, signIn } from "../helpers/fetch-contract.ts";
import { listening } from "../helpers/listen.ts";
import { openWatch, watchPath } from "../helpers/watch.ts";

const budget = 4 * 1024 * 1024;
let app: FastifyInstance;
let url: string;
beforeAll(async () => {
  // (A longer grace for the last words: the test reads the slow streams only after the writes.)
  ({ app, url } = await listening({ budgets: { streams: budget }, streamDrainGraceMs: 60_000 }));
});
afterAll(() => app.close());

const namespace = { database: "db", collection: "notes" };

/** A change stream whose client does not read (its socket fills, then the server holds the rest). */
function unread(appId: string, token: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${url}${watchPath(appId, namespace)}`, {
      headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" },
    });
    request.on("response", (response) => {
      response.pause();
      resolve(response);
    });
    request.on("error", reject);
    request.end();
  });
}

/** Everything a paused stream still sends, read to its end. */
function readToEnd(response: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    response.setEncoding("utf8");
    response.on("data", (chunk: string) => {
      text += chunk;
    });
    response.on("end", () => resolve(text));
    response.on("error", reject);
    response.resume();
  });
}

it("ends the slow streams once the instance holds too much unsent, and keeps the one that reads", async () => {
  const config = {
    ...openData,
    maxStreamBufferBytes: 256 * 1024 * 1024,
    limits: { documentBytesPerUser: 1024 ** 3 },
  };
  const { appId } = (await sendChecked(url, "createApp", "POST", "/_mock/v1/apps", { body: { config } })).body;
  const writer = await signIn(url).registered(appId, "writer@example.com");
  const slow = [
    await unread(appId, await signIn(url).anonymous(appId)),
    await unread(appId, await signIn(url).anonymous(appId)),
  ];
  const reader = await openWatch(url, appId, await signIn(url).anonymous(appId), namespace);
  expect(reader.response.status).toBe(200);
  await expect
    .poll(async () => (await sendChecked(url, "getApp", "GET", `/_mock/v1/apps/${appId}`)).body.watchers)
    .toBe(3);

  const events = 80;
  const text = "x".repeat(256 * 1024);
  const received: Promise<string[]> = (async () => {
    const blocks: string[] = [];
    while (blocks.length < events) {
      const block = await reader.next();
      if (block === null) break;
      blocks.push(block);
    }
    return blocks;
  })();
  for (let n = 0; n < events; n++) {
    const written = await sendChecked(url, "callFunction", "POST", `/api/client/v2.0/app/${appId}/functions/call`, {
      token: writer,
      body: { name: "insertOne", service: "mongodb-atlas", arguments: [{ ...namespace, document: { n, text } }] },
    });
    expect(written.status).toBe(200);
  }
  // The reading client got every event, and its stream is still open.
  const blocks = await received;
  expect(blocks).toHaveLength(events);
  expect(blocks.every((block) => block.startsWith("data: "))).toBe(true);
  expect((await sendChecked(url, "getApp", "GET", `/_mock/v1/apps/${appId}`)).body.watchers).toBe(1);
  // The slow ones were ended, with the instance's reason, after fewer events than were written.
  for (const response of slow) {
    const all = await readToEnd(response);
    expect(all).toContain('"error_code":"StreamBufferLimitExceeded"');
    expect(all).toContain(`while the server's streams hold more than ${budget} bytes unsent`);
    expect(all.split("\ndata: ").length).toBeLessThan(events);
  }
  reader.close();
  await expect.poll(() => app.emulator.streamBacklog.bytes).toBe(0);
}, 60_000);

it("ends a slow stream before the write that would take the instance past its budget", () => {
  const mib = 1024 * 1024;
  /** An output whose unsent bytes the test sets (as a socket's writableLength). */
  const output = (unsent: number) => Object.assign(new EventEmitter(), { writableLength: unsent });
  const backlog = new StreamBacklog(4 * mib);
  const [a, b, c] = [output(0), output(0), output(0)];
  const [first, second, third] = [a, b, c].map((o) => backlog.open(o as never));
  a.writableLength = 1.5 * mib;
  b.writableLength = 1.5 * mib;
  expect(first!.wrote()).toBe(false);
  expect(second!.wrote()).toBe(false);
  // 3 MiB held: a 2 MiB event to a stream holding nothing would make 5 MiB, this stream the
  // largest holder: it ends instead of writing (it was written first, then ended, before).
  expect(third!.wouldEnd(2 * mib)).toBe(true);
  // A small event, or one that keeps the total within the budget, is written.
  expect(third!.wouldEnd(64 * 1024)).toBe(false);
  expect(new StreamBacklog(8 * mib).open(output(0) as never).wouldEnd(2 * mib)).toBe(false);
});

it("ends streams that each hold less than 1 MiB when there are enough of them to pass the budget", () => {
  const kib = 1024;
  const output = (unsent: number) => Object.assign(new EventEmitter(), { writableLength: unsent });
  // A budget of 4 MiB: ten streams each holding 600 KiB (never read) hold 6 MiB together.
  const backlog = new StreamBacklog(4 * 1024 * kib);
  const outputs = Array.from({ length: 10 }, () => output(0));
  const accounts = outputs.map((o) => backlog.open(o as never));
  const ended = outputs.map((o, i) => {
    o.writableLength = 600 * kib;
    return accounts[i]!.wrote();
  });
  // Once the total passes the budget (the seventh), each is ended as it is sent an event: the
  // budget's share of each holding stream (585, then 512… KiB) is below what it holds.
  expect(ended).toEqual([false, false, false, false, false, false, true, true, true, true]);
  // A stream holding a small event or two is not ended, however many streams there are.
  const reader = output(0);
  const readerAccount = backlog.open(reader as never);
  reader.writableLength = 64 * kib;
  expect(readerAccount.wrote()).toBe(false);
});
