/**
 * Large replies their clients do not read (http/unsent-replies.ts): what a connection does not
 * take stays in the process, so a reply that sends nothing for the idle time loses its
 * connection, and past the instance's budget of unsent bytes the replies stalled longest lose
 * theirs; a client that reads keeps its reply, and one that reads slowly keeps it too. Here a
 * `find` answers 12 MB, the budget is 16 MiB and the idle time 1.5 s.
 */
import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { call } from "../helpers/app.ts";
import { sendChecked } from "../helpers/fetch-contract.ts";
import { listening } from "../helpers/listen.ts";
import { pausedRequest } from "../helpers/paused-request.ts";
import { until } from "../helpers/until.ts";

const metricsToken = "metrics-token-for-the-tests";
const limits = { bytes: 16 * 1024 * 1024, idleMs: 1_500 };
let app: FastifyInstance;
let url: string;
let token: string;
let body: string;
let replyBytes: number;

beforeAll(async () => {
  ({ app, url } = await listening({
    budgets: { replies: limits.bytes },
    unsentReplyIdleMs: limits.idleMs,
    metricsToken,
  }));
  const login = await sendChecked(
    url,
    "login",
    "POST",
    "/api/client/v2.0/app/local-app/auth/providers/anon-user/login",
    {
      body: {},
    },
  );
  token = login.body.access_token as string;
  const userId = login.body.user_id as string;
  const text = "x".repeat(120_000);
  const documents = Array.from({ length: 100 }, (_, n) => ({ owner_id: userId, n, text }));
  const inserted = await sendChecked(url, "insertDocuments", "POST", "/_mock/v1/apps/local-app/data/notes-app/notes", {
    body: { documents },
  });
  expect(inserted.status).toBe(201);
  body = JSON.stringify({
    name: "find",
    service: "mongodb-atlas",
    arguments: [{ database: "notes-app", collection: "notes", query: {}, sort: { n: 1 } }],
  });
  const found = await fetch(`${url}/api/client/v2.0/app/local-app/functions/call`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body,
  });
  replyBytes = (await found.text()).length;
  expect(replyBytes).toBeGreaterThan(12_000_000);
});
afterAll(() => app.close());

const sockets: Socket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
});

/** A raw connection that asks for the find and reads nothing (until `read` is called). */
const asker = () =>
  pausedRequest(
    url,
    `POST /api/client/v2.0/app/local-app/functions/call HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
      `Authorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    sockets,
  );

async function metric(name: string): Promise<number> {
  const { body: text } = await call(app, "getMetrics", {
    method: "GET",
    url: "/_mock/v1/metrics",
    headers: { authorization: `Bearer ${metricsToken}` },
  });
  const line = (text as string).split("\n").find((l) => l.startsWith(`${name} `));
  return Number(line?.split(" ")[1]);
}

describe("replies their clients do not read", () => {
  it("cuts a reply that sends nothing for the idle time, and counts what it holds meanwhile", async () => {
    const cutBefore = await metric("appservices_replies_cut_total");
    const stalled = await asker();
    await until(async () => (await metric("appservices_reply_unsent_bytes")) > 0, "the reply to be held unsent");
    await until(async () => (await metric("appservices_replies_cut_total")) === cutBefore + 1, "a cut", {
      timeoutMs: 10_000,
    });
    // Read now: the connection ends before the whole reply came.
    stalled.socket.resume();
    await until(() => stalled.state.closed, "the stalled reply's connection to be closed");
    expect(stalled.state.received).toBeLessThan(replyBytes);
    await until(async () => (await metric("appservices_reply_unsent_bytes")) === 0, "nothing to be held");
  });

  it("keeps a reply its client reads slowly", async () => {
    const cutBefore = await metric("appservices_replies_cut_total");
    const slow = await asker();
    // 64 KiB every 25 ms for longer than the idle time: the write the system has not taken yet
    // shrinks all along, though the reply is far from all out (its length counts it whole).
    slow.socket.on("readable", () => undefined);
    const readUntil = Date.now() + limits.idleMs * 1.6;
    while (Date.now() < readUntil && !slow.state.closed) {
      const chunk = slow.socket.read(64 * 1024) ?? slow.socket.read();
      if (chunk === null) await new Promise((resolve) => slow.socket.once("readable", resolve));
      else await new Promise((resolve) => setTimeout(resolve, 25)); // ('data' counts it)
    }
    expect(slow.state.received).toBeLessThan(replyBytes);
    expect(slow.state.closed).toBe(false);
    expect(await metric("appservices_replies_cut_total")).toBe(cutBefore);
    // The rest, at once: the whole reply.
    slow.socket.removeAllListeners("readable");
    slow.socket.resume();
    await until(() => slow.state.received > replyBytes, "the whole reply");
    expect(slow.state.closed).toBe(false);
  });

  it("past the budget, cuts the replies stalled longest; a client that reads is served", async () => {
    const replies = app.emulator.unsentReplies;
    const cutBefore = await metric("appservices_replies_cut_total");
    const cutsBefore = replies.cut;
    for (let i = 0; i < 4; i++) await asker();
    // Four replies of 12 MB unread are past 16 MiB, whatever the sockets' buffers take (however long
    // a busy machine takes to make them): from then, some go well before the idle time (at the
    // second look, a look every 375 ms here).
    await until(() => replies.bytes > limits.bytes || replies.cut > cutsBefore, "the replies past the budget", {
      timeoutMs: 30_000,
    });
    await until(async () => (await metric("appservices_replies_cut_total")) > cutBefore, "a reply to be cut", {
      timeoutMs: limits.idleMs * 0.75,
      everyMs: 5,
    });
    // Back under the budget within a look or two: a reply whose connection the system still takes
    // bytes from (a receiving buffer that grows, 32 MiB on some hosts) is left until it stalls.
    await until(
      async () => (await metric("appservices_reply_unsent_bytes")) <= limits.bytes,
      "the replies back under the budget",
      { timeoutMs: limits.idleMs * 0.75, everyMs: 5 },
    );
    const reader = await fetch(`${url}/api/client/v2.0/app/local-app/functions/call`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body,
    });
    expect(reader.status).toBe(200);
    expect((await reader.text()).length).toBe(replyBytes);
  });
});
