/**
 * The event streams behind the reverse proxies people use, configured as anyone first writes them:
 * nginx with a plain `proxy_pass` and its defaults (responses buffered, HTTP/1.0 to the upstream)
 * and a read timeout shorter than the gap the test's heartbeats leave; Caddy with a plain
 * `reverse_proxy`. Clients speak HTTP/1.1 to one site and HTTP/2 (TLS, ALPN) to another. Events
 * must arrive while the stream stays open, and the stream must outlive the proxy's read timeout.
 */
import { connect, constants } from "node:http2";
import type { FastifyInstance } from "fastify";
import { generate } from "selfsigned";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningProxy, startCaddy, startNginx } from "../../../scripts/proxies.mjs";
import { anonymousLogin, newApp } from "../helpers/app.ts";
import { listening } from "../helpers/listen.ts";
import { until } from "../helpers/until.ts";
import { watchPath } from "../helpers/watch.ts";

/** Heartbeats every 100 ms; nginx cuts an upstream quiet for 1 s. */
const heartbeatMs = 100;

let app: FastifyInstance;
let upstream: string;
let cert: string;
let key: string;

beforeAll(async () => {
  let url: string;
  ({ app, url } = await listening({ streamHeartbeatMs: heartbeatMs }));
  upstream = new URL(url).host;
  const pems = await generate([{ name: "commonName", value: "127.0.0.1" }], {
    keyType: "ec",
    extensions: [{ name: "subjectAltName", altNames: [{ type: 7, ip: "127.0.0.1" }] }],
  });
  cert = pems.cert;
  key = pems.private;
}, 30_000);

afterAll(async () => {
  await app?.close();
});

/** Each proxy with two sites: plain HTTP/1.1, and TLS with HTTP/2. */
const proxies = {
  nginx: () =>
    startNginx({
      ports: 2,
      files: { "tls.crt": cert, "tls.key": key },
      http: ([plain, tls]) => `
      server {
        listen 127.0.0.1:${plain};
        proxy_read_timeout 1s;
        location / { proxy_pass http://${upstream}; }
      }
      server {
        listen 127.0.0.1:${tls} ssl http2;
        ssl_certificate tls.crt;
        ssl_certificate_key tls.key;
        proxy_read_timeout 1s;
        location / { proxy_pass http://${upstream}; }
      }`,
    }),
  Caddy: () =>
    startCaddy({
      ports: 2,
      files: { "tls.crt": cert, "tls.key": key },
      sites: ([plain, tls], dir) => `
http://127.0.0.1:${plain} {
\treverse_proxy ${upstream}
}
https://127.0.0.1:${tls} {
\ttls ${dir}/tls.crt ${dir}/tls.key
\treverse_proxy ${upstream}
}`,
    }),
};

interface Stream {
  /** The HTTP version the client spoke to the proxy. */
  version: string;
  text(): string;
  ended(): boolean;
  close(): void;
}

/** Reads a GET through the proxy over HTTP/1.1 (fetch). */
async function viaHttp1(proxy: RunningProxy, path: string, headers: Record<string, string>): Promise<Stream> {
  const stop = new AbortController();
  const response = await fetch(`http://127.0.0.1:${proxy.ports[0]}${path}`, { headers, signal: stop.signal });
  expect(response.status).toBe(200);
  let received = "";
  let ended = false;
  void (async () => {
    try {
      for await (const chunk of response.body!.pipeThrough(new TextDecoderStream())) received += chunk;
    } catch {
      // aborted
    }
    ended = true;
  })();
  return { version: "1.1", text: () => received, ended: () => ended, close: () => stop.abort() };
}

/** Reads a GET through the proxy over HTTP/2 (node:http2, ALPN over TLS). */
async function viaHttp2(proxy: RunningProxy, path: string, headers: Record<string, string>): Promise<Stream> {
  const session = connect(`https://127.0.0.1:${proxy.ports[1]}`, { ca: cert });
  const stream = session.request({ [constants.HTTP2_HEADER_PATH]: path, ...headers });
  const status = await new Promise<number>((resolve, reject) => {
    stream.once("response", (h) => resolve(Number(h[constants.HTTP2_HEADER_STATUS])));
    stream.once("error", reject);
  });
  expect(status).toBe(200);
  expect(session.alpnProtocol).toBe("h2");
  let received = "";
  let ended = false;
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => (received += chunk));
  stream.on("close", () => (ended = true));
  stream.on("error", () => undefined);
  return {
    version: "2",
    text: () => received,
    ended: () => ended,
    close: () => {
      stream.close();
      session.close();
    },
  };
}

async function anonymousUser() {
  const appId = await newApp(app);
  return { appId, token: (await anonymousLogin(app, appId)).access_token };
}

const heartbeats = (stream: Stream) => stream.text().split(":\n\n").length - 1;

describe.each(Object.entries(proxies))("behind %s with its defaults", (_name, start) => {
  let proxy: RunningProxy;
  beforeAll(async () => {
    proxy = await start();
  }, 30_000);
  afterAll(() => proxy?.stop());

  describe.each([
    ["HTTP/1.1", viaHttp1],
    ["HTTP/2", viaHttp2],
  ])("over %s", (_version, via) => {
    const open = (path: string, headers: Record<string, string>) => via(proxy, path, headers);
    it("a change stream delivers each change at once, and outlives the proxy's read timeout", async () => {
      const { appId, token } = await anonymousUser();
      const stream = await open(watchPath(appId, { database: "notes-app", collection: "notes" }), {
        accept: "text/event-stream",
        authorization: `Bearer ${token}`,
      });
      // The rules let the user read their own notes only: each insert is one event.
      const userId = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()).sub as string;
      const insert = (title: string) =>
        app.inject({
          method: "POST",
          url: `/api/client/v2.0/app/${appId}/functions/call`,
          headers: { authorization: `Bearer ${token}` },
          payload: {
            service: "mongodb-atlas",
            name: "insertOne",
            arguments: [{ database: "notes-app", collection: "notes", document: { owner_id: userId, title } }],
          },
        });
      try {
        await until(() => stream.text().startsWith(": connected"), "the stream to open");
        await insert("first");
        await until(() => stream.text().includes('"first"'), "the first event", { timeoutMs: 2_000 });
        // Quiet for longer than nginx's read timeout (10 heartbeats = 1 s): the heartbeats keep it open.
        const before = heartbeats(stream);
        await until(() => heartbeats(stream) >= before + 15, "15 heartbeats", { timeoutMs: 5_000 });
        expect(stream.ended()).toBe(false);
        await insert("second");
        await until(() => stream.text().includes('"second"'), "the second event", { timeoutMs: 2_000 });
      } finally {
        stream.close();
      }
    });

    it("the control API's live events arrive at once", async () => {
      const stream = await open("/_mock/v1/events", {});
      try {
        await until(() => stream.text().startsWith(": connected"), "the stream to open");
        await app.inject({ method: "POST", url: "/_mock/v1/apps", payload: {} });
        await until(() => stream.text().includes('"type":"app"'), "the app event", { timeoutMs: 2_000 });
        expect(stream.ended()).toBe(false);
      } finally {
        stream.close();
      }
    });
  });
});
