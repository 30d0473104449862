/**
 * Change streams follow the user's rights (docs/decisions/0011-revocation.md): disabling or deleting
 * the user, revoking its sessions, logging out, disabling or deleting the API key of the session, a
 * password reset and the session's expiry each end the streams opened on the ended sessions at
 * once — with `event: error` InvalidSession, then the end — while the user's other streams go on.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../../src/store/store.ts";
import { openData } from "../helpers/app.ts";
import { expectFetchContract, sendChecked } from "../helpers/fetch-contract.ts";
import { listening } from "../helpers/listen.ts";
import { openWatch, streamError, type WatchReader } from "../helpers/watch.ts";

let app: FastifyInstance;
let url: string;
beforeAll(async () => {
  ({ app, url } = await listening());
});
afterAll(() => app.close());

const base = "/api/client/v2.0";

const send = (operationId: string, method: string, path: string, options: { body?: unknown; token?: string } = {}) =>
  sendChecked(url, operationId, method, path, options);

interface Session {
  access_token: string;
  refresh_token: string;
  user_id: string;
}

async function newApp(config: Record<string, unknown> = {}): Promise<string> {
  const created = await send("createApp", "POST", "/_mock/v1/apps", {
    body: { config: { ...openData, providers: { "local-userpass": { autoConfirm: true } }, ...config } },
  });
  return created.body.appId as string;
}

/** A new session of an e-mail/password user (created by the first call for its address). */
async function emailSession(appId: string, email: string, password = "secret-1"): Promise<Session> {
  const created = await send("createUser", "POST", `/_mock/v1/apps/${appId}/users`, { body: { email, password } });
  expect([201, 409]).toContain(created.status);
  const { body } = await send("login", "POST", `${base}/app/${appId}/auth/providers/local-userpass/login`, {
    body: { username: email, password },
  });
  return body as Session;
}

const namespace = { database: "db", collection: "watched" };

async function watchers(appId: string): Promise<number> {
  return (await send("getApp", "GET", `/_mock/v1/apps/${appId}`)).body.watchers as number;
}

/** Opens streams and waits until the emulator counts them all. */
async function watch(appId: string, ...sessions: Session[]): Promise<WatchReader[]> {
  const before = await watchers(appId);
  const streams = await Promise.all(sessions.map((s) => openWatch(url, appId, s.access_token, namespace)));
  for (const stream of streams) expect(stream.response.status).toBe(200);
  await expect.poll(() => watchers(appId), { timeout: 5000, interval: 10 }).toBe(before + sessions.length);
  return streams;
}

/** The stream got `event: error` InvalidSession and then its end, without any change to wake it. */
async function expectEnded(stream: WatchReader) {
  expect(streamError(await stream.next())).toMatchObject({ error_code: "InvalidSession" });
  expect(await stream.next()).toBeNull();
}

/** The stream still delivers: a document inserted now arrives as its next event. */
async function expectDelivering(appId: string, writer: Session, ...streams: WatchReader[]) {
  const marker = `m-${Math.random().toString(36).slice(2)}`;
  const inserted = await send("callFunction", "POST", `${base}/app/${appId}/functions/call`, {
    token: writer.access_token,
    body: { name: "insertOne", service: "mongodb-atlas", arguments: [{ ...namespace, document: { marker } }] },
  });
  expect(inserted.status).toBe(200);
  for (const stream of streams) expect(await stream.next()).toContain(marker);
}

describe("change streams end with the session or user behind them", () => {
  it("disabling the user ends its streams at once; other users' go on", async () => {
    const appId = await newApp();
    const ann = await emailSession(appId, "ann@example.com");
    const bob = await emailSession(appId, "bob@example.com");
    const [annStream, bobStream] = await watch(appId, ann, bob);
    const disabled = await send("updateUser", "PATCH", `/_mock/v1/apps/${appId}/users/${ann.user_id}`, {
      body: { disabled: true },
    });
    expect(disabled.status).toBe(200);
    await expectEnded(annStream!);
    await expectDelivering(appId, bob, bobStream!);
    await expect.poll(() => watchers(appId), { timeout: 5000, interval: 10 }).toBe(1);
    bobStream!.close();
  });

  it("revoking the user's sessions (control API) ends every stream of the user", async () => {
    const appId = await newApp();
    const first = await emailSession(appId, "rev@example.com");
    const second = await emailSession(appId, "rev@example.com");
    const bob = await emailSession(appId, "bob@example.com");
    const [a, b, other] = await watch(appId, first, second, bob);
    expect(
      (await send("revokeUserSessions", "DELETE", `/_mock/v1/apps/${appId}/users/${first.user_id}/sessions`)).status,
    ).toBe(204);
    await expectEnded(a!);
    await expectEnded(b!);
    await expectDelivering(appId, bob, other!);
    other!.close();
  });

  it("logging out ends the streams of that session only", async () => {
    const appId = await newApp();
    const out = await emailSession(appId, "out@example.com");
    const stays = await emailSession(appId, "out@example.com");
    const [ended, going] = await watch(appId, out, stays);
    expect((await send("logOut", "DELETE", `${base}/auth/session`, { token: out.refresh_token })).status).toBe(204);
    await expectEnded(ended!);
    await expectDelivering(appId, stays, going!);
    // Its access token opens no new stream either.
    const reopened = await openWatch(url, appId, out.access_token, namespace);
    expect(reopened.response.status).toBe(401);
    expect(await expectFetchContract("callFunctionStreaming", reopened.response)).toMatchObject({
      error: "invalid session: failed to find refresh token",
      error_code: "InvalidSession",
    });
    going!.close();
  });

  it("a login past the app's sessionsPerUser limit ends the oldest session and its stream", async () => {
    const appId = await newApp({ limits: { sessionsPerUser: 2 } });
    const oldest = await emailSession(appId, "many@example.com");
    const middle = await emailSession(appId, "many@example.com");
    const [trimmed, kept] = await watch(appId, oldest, middle);
    const newest = await emailSession(appId, "many@example.com");
    await expectEnded(trimmed!);
    await expectDelivering(appId, newest, kept!);
    kept!.close();
  });

  it("deleting the user (the client's deleteUser, the control API's removeUser) ends its streams", async () => {
    const appId = await newApp();
    const self = await emailSession(appId, "self@example.com");
    const removed = await emailSession(appId, "removed@example.com");
    const [selfStream, removedStream] = await watch(appId, self, removed);
    expect((await send("deleteUser", "DELETE", `${base}/auth/delete`, { token: self.access_token })).status).toBe(204);
    await expectEnded(selfStream!);
    expect((await send("removeUser", "DELETE", `/_mock/v1/apps/${appId}/users/${removed.user_id}`)).status).toBe(204);
    await expectEnded(removedStream!);
    expect(await watchers(appId)).toBe(0);
  });

  it("disabling or deleting an API key ends the streams of the sessions it opened", async () => {
    const appId = await newApp();
    const owner = await emailSession(appId, "keys@example.com");
    const keys: { _id: string; key: string }[] = [];
    for (const name of ["one", "two"]) {
      const created = await send("createApiKey", "POST", `${base}/auth/api_keys`, {
        token: owner.refresh_token,
        body: { name },
      });
      keys.push(created.body as { _id: string; key: string });
    }
    const loginWith = async (key: string) =>
      (await send("login", "POST", `${base}/app/${appId}/auth/providers/api-key/login`, { body: { key } }))
        .body as Session;
    const [byOne, byTwo, byPassword] = await watch(
      appId,
      await loginWith(keys[0]!.key),
      await loginWith(keys[1]!.key),
      owner,
    );
    const disabled = await send("disableApiKey", "PUT", `${base}/auth/api_keys/${keys[0]!._id}/disable`, {
      token: owner.refresh_token,
    });
    expect(disabled.status).toBe(204);
    await expectEnded(byOne!);
    await expectDelivering(appId, owner, byTwo!, byPassword!);
    const deleted = await send("deleteApiKey", "DELETE", `${base}/auth/api_keys/${keys[1]!._id}`, {
      token: owner.refresh_token,
    });
    expect(deleted.status).toBe(204);
    await expectEnded(byTwo!);
    await expectDelivering(appId, owner, byPassword!);
    byPassword!.close();
  });

  it("a password reset ends every stream of the user", async () => {
    const appId = await newApp();
    const ann = await emailSession(appId, "reset@example.com");
    const [stream] = await watch(appId, ann);
    await send("sendResetPasswordEmail", "POST", `${base}/app/${appId}/auth/providers/local-userpass/reset/send`, {
      body: { email: "reset@example.com" },
    });
    const tokens = await send(
      "listAuthTokens",
      "GET",
      `/_mock/v1/apps/${appId}/auth/tokens?email=reset%40example.com&kind=reset`,
    );
    const { token, tokenId } = tokens.body.tokens[0] as { token: string; tokenId: string };
    const reset = await send("resetPassword", "POST", `${base}/app/${appId}/auth/providers/local-userpass/reset`, {
      body: { token, tokenId, password: "new-secret" },
    });
    expect(reset.status).toBe(200);
    await expectEnded(stream!);
  });

  it("a stream lives as long as its session, not its access token, and ends when the session expires", async () => {
    const appId = await newApp({ tokens: { refreshTokenTtlSeconds: 3600 } });
    const ann = await emailSession(appId, "ttl@example.com");
    const [stream] = await watch(appId, ann);
    const advance = (seconds: number) =>
      send("advanceClock", "POST", `/_mock/v1/apps/${appId}/clock`, { body: { advanceBy: seconds } });
    // Past the access token's 30 minutes: the stream goes on (a writer with a fresh token).
    await advance(31 * 60);
    const writer = await emailSession(appId, "writer@example.com");
    await expectDelivering(appId, writer, stream!);
    // Past the session's hour: it ends at once.
    await advance(30 * 60);
    await expectEnded(stream!);
  });

  it("a session check the database cannot answer ends the stream as the service's fault, not the session's", async () => {
    const appId = await newApp();
    const ann = await emailSession(appId, "outage@example.com");
    const writer = await emailSession(appId, "outage-writer@example.com");
    const [stream] = await watch(appId, ann);
    const runtime = (await app.emulator.apps.get(appId))!;
    const userSession = runtime.store.userSession;
    // The stream's next session check (due after a second) finds the database gone.
    runtime.store.userSession = (userId, sessionId) =>
      userId === ann.user_id
        ? Promise.reject(new StoreUnavailableError("connection terminated"))
        : userSession.call(runtime.store, userId, sessionId);
    try {
      await send("advanceClock", "POST", `/_mock/v1/apps/${appId}/clock`, { body: { advanceBy: 2 } });
      const inserted = await send("callFunction", "POST", `${base}/app/${appId}/functions/call`, {
        token: writer.access_token,
        body: { name: "insertOne", service: "mongodb-atlas", arguments: [{ ...namespace, document: { n: 1 } }] },
      });
      expect(inserted.status).toBe(200);
      // Clients reopen such a stream without renewing their tokens (InvalidSession would sign them out).
      expect(streamError(await stream!.next())).toEqual({
        error_code: "ServiceUnavailable",
        error: "service unavailable: the connection to the database was lost",
      });
      expect(await stream!.next()).toBeNull();
    } finally {
      runtime.store.userSession = userSession;
    }
  });
});
