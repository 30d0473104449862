/** --tls-cert/--tls-key: HTTPS with a certificate the test makes; bad files stop the start. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generate } from "selfsigned";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../src/server.ts";
import { expectAnsweredWhileDraining, keptConnection } from "../helpers/kept-connection.ts";
import { until } from "../helpers/until.ts";

let dir: string;
let cert: string;
let key: string;
let otherKey: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tls-test-"));
  const altNames = { name: "subjectAltName" as const, altNames: [{ type: 7 as const, ip: "127.0.0.1" }] };
  const pems = await generate([{ name: "commonName", value: "127.0.0.1" }], { keySize: 2048, extensions: [altNames] });
  const other = await generate([{ name: "commonName", value: "other" }], { keySize: 2048 });
  cert = pems.cert;
  key = pems.private;
  writeFileSync(join(dir, "cert.pem"), cert);
  writeFileSync(join(dir, "key.pem"), key);
  writeFileSync(join(dir, "other-key.pem"), other.private);
  otherKey = join(dir, "other-key.pem");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca: cert, timeout: 5000 }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
    req.end();
  });
}

describe("HTTPS", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({
      port: 0,
      logLevel: "silent",
      watchFunctions: false,
      tlsCert: join(dir, "cert.pem"),
      tlsKey: join(dir, "key.pem"),
    });
  });
  afterAll(() => server.close());

  it("serves the client API over HTTPS, and location names the https origin", async () => {
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const health = await get(`${server.url}/_mock/v1/health`);
    expect(health.status).toBe(200);
    const location = await get(`${server.url}/api/client/v2.0/app/local-app/location`);
    expect(location.status).toBe(200);
    expect(JSON.parse(location.body).hostname).toBe(server.url);
  });

  it("does not answer plain HTTP on the TLS port", async () => {
    const plain = await fetch(`${server.url.replace("https:", "http:")}/_mock/v1/health`).then(
      (r) => r.status,
      () => "refused",
    );
    expect(plain).not.toBe(200);
  });
});

describe("HTTPS with a connection cap", () => {
  it("answers a request on a proxy's kept connection while it drains, then closes the connection", async () => {
    const draining = await startServer({
      port: 0,
      logLevel: "silent",
      watchFunctions: false,
      trustProxy: ["127.0.0.1"],
      tlsCert: join(dir, "cert.pem"),
      tlsKey: join(dir, "key.pem"),
    });
    await expectAnsweredWhileDraining(draining, await keptConnection(draining.url, cert));
  });

  it("closes an address's connection past its cap before its handshake", async () => {
    const server = await startServer({
      port: 0,
      logLevel: "silent",
      watchFunctions: false,
      tlsCert: join(dir, "cert.pem"),
      tlsKey: join(dir, "key.pem"),
      budgets: { connections: 1 },
    });
    try {
      // One connection that never starts its handshake holds the address's only place.
      const held = connect(Number(new URL(server.url).port), "127.0.0.1");
      await new Promise((resolve) => held.once("connect", resolve));
      await expect(get(`${server.url}/_mock/v1/health`)).rejects.toThrow(/socket|ECONNRESET|disconnected/i);
      held.destroy();
      const health = await until(() => get(`${server.url}/_mock/v1/health`).catch(() => undefined), "a place");
      expect(health.status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe("bad TLS options stop the start with the reason", () => {
  const base = { port: 0, logLevel: "silent" as const, watchFunctions: false };
  it.each([
    [{ tlsCert: "cert.pem", tlsKey: null }, "--tls-cert and --tls-key go together"],
    [{ tlsCert: "missing.pem", tlsKey: "key.pem" }, "Cannot read the TLS certificate"],
    [{ tlsCert: "cert.pem", tlsKey: "other-key.pem" }, "do not work"],
    [{ tlsCert: "key.pem", tlsKey: "key.pem" }, "do not work"],
  ])("%j", async (files, message) => {
    const path = (f: string | null) => (f === null ? null : f === "other-key.pem" ? otherKey : join(dir, f));
    await expect(startServer({ ...base, tlsCert: path(files.tlsCert), tlsKey: path(files.tlsKey) })).rejects.toThrow(
      message,
    );
  });
});
