/**
 * Open change streams have caps of their own — per user (lower for anonymous users), per client
 * address and per app (on PostgreSQL counted by every instance together), each answering 429 — and
 * no longer count toward the app's concurrency cap, so one client holding many streams cannot lock
 * everyone else out of the app (docs/decisions/0011-revocation.md, 0018-fair-shares.md).
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openData } from "../helpers/app.ts";
import { expectFetchContract, sendChecked, signIn } from "../helpers/fetch-contract.ts";
import { listening } from "../helpers/listen.ts";
import { openWatch, type WatchReader } from "../helpers/watch.ts";

let app: FastifyInstance;
let url: string;
beforeAll(async () => {
  ({ app, url } = await listening());
});
afterAll(() => app.close());

const base = "/api/client/v2.0";
const namespace = { database: "db", collection: "capped" };

const send = (operationId: string, method: string, path: string, options: { body?: unknown; token?: string } = {}) =>
  sendChecked(url, operationId, method, path, options);
const anonymous = (appId: string) => signIn(url).anonymous(appId);
const registered = (appId: string, email: string) => signIn(url).registered(appId, email);

async function newApp(config: Record<string, unknown>): Promise<string> {
  return (await send("createApp", "POST", "/_mock/v1/apps", { body: { config: { ...openData, ...config } } })).body
    .appId as string;
}

const watchers = async (appId: string) => (await send("getApp", "GET", `/_mock/v1/apps/${appId}`)).body.watchers;

/** Opens a stream that must be accepted, and waits until the emulator counts it. */
async function accepted(appId: string, token: string): Promise<WatchReader> {
  const before = await watchers(appId);
  const stream = await openWatch(url, appId, token, namespace);
  expect(stream.response.status).toBe(200);
  await expect.poll(() => watchers(appId), { timeout: 5000, interval: 10 }).toBe(before + 1);
  return stream;
}

async function refused(appId: string, token: string) {
  const stream = await openWatch(url, appId, token, namespace);
  expect(stream.response.status).toBe(429);
  return expectFetchContract("callFunctionStreaming", stream.response);
}

describe("change stream caps", () => {
  it("refuses a user's stream past maxStreamsPerUser (429), lets other users open theirs, and frees the place on close", async () => {
    const appId = await newApp({ maxStreamsPerUser: 2 });
    const ann = await anonymous(appId);
    const bob = await anonymous(appId);
    const first = await accepted(appId, ann);
    const second = await accepted(appId, ann);
    expect(await refused(appId, ann)).toMatchObject({
      error: "too many change streams: a user may have 2 open at once",
      error_code: "TooManyRequests",
    });
    const bobs = await accepted(appId, bob);
    first.close();
    await expect.poll(() => watchers(appId), { timeout: 5000, interval: 10 }).toBe(2);
    const again = await accepted(appId, ann);
    for (const stream of [second, bobs, again]) stream.close();
  });

  it("refuses any stream past maxStreamsPerApp (429)", async () => {
    const appId = await newApp({ maxStreamsPerApp: 2 });
    const streams = [await accepted(appId, await anonymous(appId)), await accepted(appId, await anonymous(appId))];
    expect(await refused(appId, await anonymous(appId))).toMatchObject({
      error: "too many change streams: the app may have 2 open at once",
      error_code: "TooManyRequests",
    });
    for (const stream of streams) stream.close();
  });

  it("gives anonymous users a lower cap: ten of them cannot take all the app's streams", async () => {
    const appId = await newApp({ maxStreamsPerApp: 25, maxStreamsPerAnonymousUser: 2 });
    const streams: WatchReader[] = [];
    for (let i = 0; i < 10; i++) {
      const guest = await anonymous(appId);
      streams.push(await accepted(appId, guest), await accepted(appId, guest));
      expect(await refused(appId, guest)).toMatchObject({
        error: "too many change streams: an anonymous user may have 2 open at once",
        error_code: "TooManyRequests",
      });
    }
    // The rest of the app's places are there for the users who signed up.
    const ada = await registered(appId, "ada@example.com");
    for (let i = 0; i < 5; i++) streams.push(await accepted(appId, ada));
    expect(await refused(appId, ada)).toMatchObject({
      error: "too many change streams: the app may have 25 open at once",
    });
    for (const stream of streams) stream.close();
  });

  it("caps the streams of one client address, whatever their users", async () => {
    const appId = await newApp({ maxStreamsPerAddress: 3 });
    const streams = [];
    for (let i = 0; i < 3; i++) streams.push(await accepted(appId, await anonymous(appId)));
    expect(await refused(appId, await registered(appId, "bob@example.com"))).toMatchObject({
      error: "too many change streams: one address may have 3 open at once",
      error_code: "TooManyRequests",
    });
    streams.shift()!.close();
    await expect.poll(() => watchers(appId), { timeout: 5000, interval: 10 }).toBe(2);
    streams.push(await accepted(appId, await anonymous(appId)));
    for (const stream of streams) stream.close();
  });

  it("does not count open streams toward the concurrency cap", async () => {
    const appId = await newApp({ maxConcurrentRequests: 2 });
    const token = await anonymous(appId);
    const streams = [];
    for (let i = 0; i < 4; i++) streams.push(await accepted(appId, token));
    const call = await send("callFunction", "POST", `${base}/app/${appId}/functions/call`, {
      token,
      body: { name: "sum", arguments: [1, 2] },
    });
    expect(call.status).toBe(200);
    expect((await send("getProfile", "GET", `${base}/auth/profile`, { token })).status).toBe(200);
    for (const stream of streams) stream.close();
  });
});
