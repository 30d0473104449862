/**
 * Each request's id: in its log lines (`reqId`) and in the reply's `X-Request-Id`; taken from the
 * proxy's `X-Request-Id` when the proxy is trusted (`--trust-proxy`), made here otherwise.
 */
import { get } from "node:http";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testApp } from "../helpers/app.ts";
import { listening } from "../helpers/listen.ts";
import { watchPath } from "../helpers/watch.ts";

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const location = "/api/client/v2.0/app/local-app/location";

async function loggingApp(trustProxy: boolean | number | string[] = false) {
  const stream = new PassThrough();
  let logged = "";
  stream.on("data", (chunk: Buffer) => (logged += chunk.toString("utf8")));
  const app = await testApp({ logLevel: "info", logStream: stream, trustProxy });
  const reqIds = () =>
    logged
      .split("\n")
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as { reqId?: string }).reqId);
  return { app, reqIds };
}

describe("request ids", () => {
  it("each reply carries its own in X-Request-Id, the id of its log lines", async () => {
    const { app, reqIds } = await loggingApp();
    try {
      const first = await app.inject({ method: "GET", url: location });
      const second = await app.inject({ method: "GET", url: "/api/client/v2.0/app/nope/location" });
      const firstId = first.headers["x-request-id"] as string;
      const secondId = second.headers["x-request-id"] as string;
      expect(firstId).toMatch(uuid);
      expect(secondId).toMatch(uuid);
      expect(secondId).not.toBe(firstId);
      expect(second.statusCode).toBe(404);
      expect(reqIds().filter((id) => id === firstId)).toHaveLength(2); // incoming, completed
      expect(reqIds().filter((id) => id === secondId)).toHaveLength(2);
    } finally {
      await app.close();
    }
  });

  it("takes a trusted proxy's X-Request-Id", async () => {
    const { app, reqIds } = await loggingApp(["127.0.0.1"]);
    try {
      const reply = await app.inject({
        method: "GET",
        url: location,
        headers: { "x-request-id": "5f0c9e2a8d1b4c3e9f7a6b5c4d3e2f1a" },
      });
      expect(reply.headers["x-request-id"]).toBe("5f0c9e2a8d1b4c3e9f7a6b5c4d3e2f1a");
      expect(reqIds()).toContain("5f0c9e2a8d1b4c3e9f7a6b5c4d3e2f1a");
    } finally {
      await app.close();
    }
  });

  it.each([
    ["no proxy is trusted", false, "127.0.0.1", "abc-123"],
    ["the peer is not a trusted proxy", ["10.0.0.1"], "127.0.0.1", "abc-123"],
    ["a hop count trusts no direct peer when it is 0", 0, "127.0.0.1", "abc-123"],
    ["the id is not a plain token", true, "127.0.0.1", "two words"],
    ["the id is too long", true, "127.0.0.1", "x".repeat(129)],
  ] as const)("makes its own when %s", async (_case, trustProxy, remoteAddress, given) => {
    const app = await testApp({ trustProxy: trustProxy as boolean | number | string[] });
    try {
      const reply = await app.inject({
        method: "GET",
        url: location,
        remoteAddress,
        headers: { "x-request-id": given },
      });
      expect(reply.headers["x-request-id"]).toMatch(uuid);
    } finally {
      await app.close();
    }
  });

  it("trusts a proxy by hop count and by CIDR", async () => {
    for (const trustProxy of [1, ["10.1.0.0/16"]] as const) {
      const app = await testApp({ trustProxy: trustProxy as number | string[] });
      try {
        const reply = await app.inject({
          method: "GET",
          url: location,
          remoteAddress: "10.1.2.3",
          headers: { "x-request-id": "req:42" },
        });
        expect(reply.headers["x-request-id"]).toBe("req:42");
      } finally {
        await app.close();
      }
    }
  });
});

describe("a change stream's reply", () => {
  let server: Awaited<ReturnType<typeof listening>>;
  beforeAll(async () => {
    server = await listening();
  });
  afterAll(() => server.app.close());

  it("carries its request id too", async () => {
    const login = await server.app.inject({
      method: "POST",
      url: "/api/client/v2.0/app/local-app/auth/providers/anon-user/login",
      payload: {},
    });
    const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const req = get(
        `${server.url}${watchPath("local-app", { database: "notes-app", collection: "notes" })}`,
        { headers: { accept: "text/event-stream", authorization: `Bearer ${login.json().access_token}` } },
        (response) => {
          resolve(response.headers);
          req.destroy();
        },
      );
      req.on("error", reject);
    });
    expect(headers["x-request-id"]).toMatch(uuid);
  });
});
