/**
 * How long the server keeps an idle connection: longer than the proxies in front of it keep theirs
 * (nginx's upstream `keepalive_timeout` and the usual load balancers' idle timeouts are 60 s). A
 * proxy that sends a request on a connection just as the server closes it gets a reset, answered to
 * the client as 502 for a request it cannot send again (a POST) — so the proxy must be the one to
 * close first. Node's own default, 5 s, is what `startServer` had.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../src/server.ts";

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ port: 0, logLevel: "silent", watchFunctions: false });
});
afterAll(() => server?.close());

function keepAliveHeader(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { connection: "keep-alive" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(String(res.headers["keep-alive"] ?? "")));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("idle connections", () => {
  it("are kept longer than a proxy's 60 s, and the server says so", async () => {
    const header = await keepAliveHeader(`${server.url}/api/client/v2.0/app/local-app/location`);
    const seconds = Number(/^timeout=(\d+)$/.exec(header)?.[1]);
    expect(seconds).toBeGreaterThan(60);
    expect(server.app.server.keepAliveTimeout).toBe(seconds * 1000);
  });
});
