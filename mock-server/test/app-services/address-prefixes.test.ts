/**
 * Every per-address limit counts an IPv6 client by its /64, as the connection cap does: one host
 * commonly has a whole /64 to send from (and rotating through it is one line of code), so limits
 * keyed on single IPv6 addresses held nobody. An IPv4 address is its own key. (docs/decisions/
 * 0018-fair-shares.md: anonymous users a day, change streams at once, large bodies at once, and the
 * abuse limits of `--auth-rate-limit`; test/http/connection-cap.test.ts has the keys themselves.)
 */
import { EventEmitter } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { LargeRequests } from "../../src/runtime/large-requests.ts";
import { base, call, newApp, openData, testApp } from "../helpers/app.ts";
import { expectFetchContract, sendChecked, signIn } from "../helpers/fetch-contract.ts";
import { listening } from "../helpers/listen.ts";
import { openWatch, type WatchReader } from "../helpers/watch.ts";

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe("anonymous users a day", () => {
  it("counts the addresses of one /64 together; another /64 has its own", async () => {
    const server = await testApp();
    app = server;
    const appId = await newApp(server, { limits: { anonymousUsersPerAddress: 3 } });
    const login = (remoteAddress: string) =>
      call(server, "login", {
        method: "POST",
        url: `${base}/app/${appId}/auth/providers/anon-user/login`,
        payload: {},
        remoteAddress,
      });
    for (const address of ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff::3"])
      expect((await login(address)).response.statusCode).toBe(200);
    const refused = await login("2001:db8:1:2:abcd::99");
    expect(refused.response.statusCode).toBe(429);
    expect(refused.body).toMatchObject({ error_code: "TooManyRequests" });
    expect((await login("2001:db8:1:3::1")).response.statusCode).toBe(200);
  });
});

describe("abuse limits", () => {
  it("count the addresses of one /64 together", async () => {
    const server = await testApp({ authRateLimit: { max: 2, windowMs: 60_000 } });
    app = server;
    const appId = await newApp(server);
    const login = (username: string, remoteAddress: string) =>
      call(server, "login", {
        method: "POST",
        url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
        payload: { username, password: "wrong password" },
        remoteAddress,
      });
    expect((await login("a@example.com", "2001:db8::a")).response.statusCode).toBe(401);
    expect((await login("b@example.com", "2001:db8::b")).response.statusCode).toBe(401);
    const refused = await login("c@example.com", "2001:db8:0:0:1::c");
    expect(refused.response.statusCode).toBe(429);
    expect(Number(refused.response.headers["retry-after"])).toBeGreaterThan(0);
    expect((await login("d@example.com", "2001:db8:0:1::d")).response.statusCode).toBe(401);
  });
});

describe("change streams per address", () => {
  it("count the addresses of one /64 together", async () => {
    const { app: server, url } = await listening({ trustProxy: true });
    app = server;
    const send = (operationId: string, method: string, path: string, options: { body?: unknown } = {}) =>
      sendChecked(url, operationId, method, path, options);
    const appId = (
      await send("createApp", "POST", "/_mock/v1/apps", { body: { config: { ...openData, maxStreamsPerAddress: 2 } } })
    ).body.appId as string;
    const namespace = { database: "db", collection: "c" };
    const open = async (from: string) =>
      openWatch(url, appId, await signIn(url).anonymous(appId), namespace, { "x-forwarded-for": from });
    const streams: WatchReader[] = [];
    try {
      for (const from of ["2001:db8:5:6::1", "2001:db8:5:6::2"]) {
        const stream = await open(from);
        streams.push(stream);
        expect(stream.response.status).toBe(200);
      }
      await expect
        .poll(async () => (await send("getApp", "GET", `/_mock/v1/apps/${appId}`)).body.watchers, { timeout: 5000 })
        .toBe(2);
      const third = await open("2001:db8:5:6:7::3");
      expect(third.response.status).toBe(429);
      expect(await expectFetchContract("callFunctionStreaming", third.response)).toMatchObject({
        error: "too many change streams: one address may have 2 open at once",
      });
      const elsewhere = await open("2001:db8:5:7::1");
      streams.push(elsewhere);
      expect(elsewhere.response.status).toBe(200);
    } finally {
      for (const stream of streams) stream.close();
    }
  });
});

describe("large bodies per address", () => {
  const request = (bytes: number) =>
    ({ headers: { "content-length": String(bytes) }, socket: { bytesRead: 0 } }) as unknown as IncomingMessage;
  const response = () => new EventEmitter() as unknown as ServerResponse;

  it("count the addresses of one /64 together", () => {
    const places = new LargeRequests();
    const twoMiB = 2 * 1024 * 1024;
    const open = [response(), response()];
    expect(places.hold("2001:db8:9:9::1", request(twoMiB), open[0]!)).toBeNull();
    expect(places.hold("2001:db8:9:9::2", request(twoMiB), open[1]!)).toBeNull();
    expect(places.hold("2001:db8:9:9:1::3", request(twoMiB), response())).toBe("address");
    expect(places.hold("2001:db8:9:a::1", request(twoMiB), response())).toBeNull();
    (open[0] as unknown as EventEmitter).emit("close");
    expect(places.hold("2001:db8:9:9:1::3", request(twoMiB), response())).toBeNull();
  });
});
