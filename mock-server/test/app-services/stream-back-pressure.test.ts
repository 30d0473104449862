/**
 * Back-pressure on change streams (docs/decisions/0011-revocation.md): a client that stops reading
 * makes the server hold at most the app's `maxStreamBufferBytes` of unsent events (plus the event
 * that passes it); then its stream ends, and its connection is cut once the grace for the last
 * bytes has passed — while a stream that reads receives every event.
 */
import { connect, type Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openData } from "../helpers/app.ts";
import { sendChecked } from "../helpers/fetch-contract.ts";
import { listening } from "../helpers/listen.ts";
import { until } from "../helpers/until.ts";
import { openWatch, watchPath } from "../helpers/watch.ts";

/** Shortened from the default 5 s: the test waits for the cut. */
const drainGraceMs = 300;

let app: FastifyInstance;
let url: string;
const serverSockets: Socket[] = [];
beforeAll(async () => {
  ({ app, url } = await listening({ streamDrainGraceMs: drainGraceMs }));
  app.server.on("connection", (socket: Socket) => serverSockets.push(socket));
});
afterAll(() => app.close());

const base = "/api/client/v2.0";
const namespace = { database: "db", collection: "large" };

const send = (operationId: string, method: string, path: string, options: { body?: unknown; token?: string } = {}) =>
  sendChecked(url, operationId, method, path, options);

const watchers = async (appId: string) => (await send("getApp", "GET", `/_mock/v1/apps/${appId}`)).body.watchers;

/** A raw client of an app's change stream: the request sent, not a byte of the answer read yet. */
async function rawStream(server: string, appId: string, token: string): Promise<Socket> {
  const { port } = new URL(server);
  const client = connect(Number(port), "127.0.0.1");
  client.pause();
  await new Promise<void>((resolve) => client.once("connect", () => resolve()));
  client.write(
    `GET ${watchPath(appId, namespace)} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
      `Authorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`,
  );
  return client;
}

describe("a change stream whose client stops reading", () => {
  it("ends once its unsent events pass the cap, holds no more than that meanwhile, and others keep receiving", async () => {
    const limit = 1024 * 1024;
    const appId = (
      await send("createApp", "POST", "/_mock/v1/apps", {
        // (20 MB of documents from one anonymous writer: past its own share by default.)
        body: {
          config: {
            ...openData,
            maxStreamBufferBytes: limit,
            limits: { documentBytesPerAnonymousUser: 64 * 1024 * 1024 },
          },
        },
      })
    ).body.appId as string;
    const token = (await send("login", "POST", `${base}/app/${appId}/auth/providers/anon-user/login`, { body: {} }))
      .body.access_token as string;

    // A raw client that sends the request and never reads a byte of the answer.
    const stalled = await rawStream(url, appId, token);
    await expect.poll(() => watchers(appId), { timeout: 5000, interval: 10 }).toBe(1);
    const serverSide = serverSockets.find((s) => s.remotePort === stalled.localPort);
    expect(serverSide).toBeDefined();

    const reading = await openWatch(url, appId, token, namespace);
    expect(reading.response.status).toBe(200);
    await expect.poll(() => watchers(appId), { timeout: 5000, interval: 10 }).toBe(2);
    let received = 0;
    const readAll = (async () => {
      for (;;) {
        const block = await reading.next();
        if (block === null) return;
        if (block.startsWith("data: ")) received++;
      }
    })().catch(() => undefined);

    // 40 events of half a megabyte: 20 MB for a client that reads none of them.
    const documentBytes = 512 * 1024;
    const inserts = 40;
    let mostHeld = 0;
    for (let n = 1; n <= inserts; n++) {
      const inserted = await send("callFunction", "POST", `${base}/app/${appId}/functions/call`, {
        token,
        body: {
          name: "insertOne",
          service: "mongodb-atlas",
          arguments: [{ ...namespace, document: { n, blob: "x".repeat(documentBytes) } }],
        },
      });
      expect(inserted.status).toBe(200);
      // Once the reading stream has this event, the stalled one has been handed it too (or ended).
      await until(() => received >= n, `event ${n} on the reading stream`, { timeoutMs: 10_000 });
      mostHeld = Math.max(mostHeld, serverSide!.writableLength);
    }

    // The stalled stream ended (only the reading one is left) while it held at most the cap and the
    // event that passed it — not the 20 MB sent to it (large headroom either way).
    expect(await watchers(appId)).toBe(1);
    expect(mostHeld).toBeLessThan(limit + 2 * documentBytes);
    // Its connection is cut after the grace for the last bytes, and what it held is let go.
    await until(() => serverSide!.closed && serverSide!.writableLength === 0, "the stalled connection to be cut", {
      timeoutMs: drainGraceMs + 10_000,
    });
    expect(received).toBe(inserts);

    reading.close();
    await readAll;
    stalled.destroy();
  });
});

describe("an event larger than the cap", () => {
  /** Heartbeats every 50 ms: several fall while the event goes out; a second without progress is idle. */
  const idleMs = 1_000;
  let beating: { app: FastifyInstance; url: string };
  beforeAll(async () => {
    beating = await listening({ streamHeartbeatMs: 50, streamDrainGraceMs: drainGraceMs, unsentReplyIdleMs: idleMs });
  });
  afterAll(() => beating.app.close());

  const beatingSend = (
    operationId: string,
    method: string,
    path: string,
    options: { body?: unknown; token?: string } = {},
  ) => sendChecked(beating.url, operationId, method, path, options);
  const beatingWatchers = async (appId: string) =>
    (await beatingSend("getApp", "GET", `/_mock/v1/apps/${appId}`)).body.watchers;

  /** An app whose streams may leave 1 MiB unsent; a raw client of its stream, not reading yet. */
  async function bigEventStream() {
    const appId = (
      await beatingSend("createApp", "POST", "/_mock/v1/apps", {
        body: {
          config: {
            ...openData,
            maxStreamBufferBytes: 1024 * 1024,
            limits: { documentBytesPerAnonymousUser: 64 * 1024 * 1024 },
          },
        },
      })
    ).body.appId as string;
    const token = (
      await beatingSend("login", "POST", `${base}/app/${appId}/auth/providers/anon-user/login`, { body: {} })
    ).body.access_token as string;
    const client = await rawStream(beating.url, appId, token);
    await expect.poll(() => beatingWatchers(appId), { timeout: 5000, interval: 10 }).toBe(1);
    // One event of 12 MB: far more than the system's buffers take from a client that reads nothing.
    const inserted = await beatingSend("callFunction", "POST", `${base}/app/${appId}/functions/call`, {
      token,
      body: {
        name: "insertOne",
        service: "mongodb-atlas",
        arguments: [{ ...namespace, document: { blob: "x".repeat(12 * 1024 * 1024) } }],
      },
    });
    expect(inserted.status).toBe(200);
    return { appId, client };
  }

  it("is read whole by a client that reads it slowly, the heartbeats meanwhile ending nothing", async () => {
    const { appId, client } = await bigEventStream();
    let received = 0;
    // 256 KiB every 10 ms: about half a second for the event, some ten heartbeats.
    while (received < 12 * 1024 * 1024) {
      const chunk = (client.read(256 * 1024) ?? client.read()) as Buffer | null;
      if (chunk === null) await new Promise((resolve) => client.once("readable", resolve));
      else {
        received += chunk.length;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
    expect(await beatingWatchers(appId)).toBe(1);
    client.destroy();
  });

  it("ends its stream once the system took none of it for the idle time", async () => {
    const { appId, client } = await bigEventStream();
    await expect.poll(() => beatingWatchers(appId), { timeout: 5000, interval: 10 }).toBe(0);
    client.destroy();
  });
});
