/**
 * Both event streams — change streams (App Services' streaming functions/call) and the control
 * API's live events — as proxies and load balancers need them: headers that turn their buffering
 * and transformations off, a first comment at once (the headers go out, the client knows the
 * stream is open) and a heartbeat comment while nothing happens.
 */
import { type IncomingMessage, request } from "node:http";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, newApp } from "../helpers/app.ts";
import { listening } from "../helpers/listen.ts";
import { until } from "../helpers/until.ts";
import { watchPath } from "../helpers/watch.ts";

let app: FastifyInstance;
let url: string;
beforeAll(async () => {
  ({ app, url } = await listening({ streamHeartbeatMs: 40 }));
});
afterAll(() => app.close());

interface RawStream {
  response: IncomingMessage;
  /** Everything received so far. */
  text(): string;
  close(): void;
}

/** A GET read as it arrives, headers as sent (node:http, no fetch layer in between). */
function open(path: string, headers: Record<string, string> = {}): Promise<RawStream> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { headers, agent: false }, (response) => {
      let received = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (received += chunk));
      response.on("error", () => undefined);
      resolve({ response, text: () => received, close: () => req.destroy() });
    });
    req.on("error", reject);
    req.end();
  });
}

async function changeStream(): Promise<RawStream> {
  const appId = await newApp(app);
  const { access_token } = await anonymousLogin(app, appId);
  return open(watchPath(appId, { database: "notes-app", collection: "notes" }), {
    accept: "text/event-stream",
    authorization: `Bearer ${access_token}`,
  });
}

const streams = {
  "a change stream": changeStream,
  "the control API's live events": () => open("/_mock/v1/events"),
};

describe.each(Object.entries(streams))("%s", (_name, openStream) => {
  it("tells proxies not to buffer or transform it, and opens with a comment at once", async () => {
    const stream = await openStream();
    try {
      expect(stream.response.statusCode).toBe(200);
      expect(stream.response.headers["content-type"]).toMatch(/^text\/event-stream/);
      expect(stream.response.headers["cache-control"]).toBe("no-cache, no-transform");
      expect(stream.response.headers["x-accel-buffering"]).toBe("no");
      // Nothing has happened yet, and a comment has arrived all the same.
      await until(() => stream.text().startsWith(": connected\n\n"), "the opening comment");
    } finally {
      stream.close();
    }
  });

  it("sends a heartbeat comment while nothing happens", async () => {
    const stream = await openStream();
    try {
      await until(() => stream.text().split(":\n\n").length > 3, "three heartbeats", { timeoutMs: 5_000 });
      expect(stream.text().replaceAll(":\n\n", "").replace(": connected\n\n", "")).toBe("");
    } finally {
      stream.close();
    }
  });
});
