/**
 * Two emulator processes on one PostgreSQL database act as one service: tokens of one work on the
 * other; a revocation (refresh), a disabled API key hold on both at the next request; a disabled or
 * deleted user is refused by the other's access-token requests as soon as it hears of it, and within
 * the revocation window however late that is (docs/decisions/0020-auth-cache.md); the change streams
 * open on the other end at once; races between them are decided by the database's constraints, and a
 * change stream on one sees the writes made through the other.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openData } from "../helpers/app.ts";
import { type EmulatorProcess, ensureBuilt, killAll, startEmulatorProcess } from "../helpers/emulator-process.ts";
import { expectFetchContract } from "../helpers/fetch-contract.ts";
import { adminQuery, emulatorDatabase, postgresAdminUrl, type TestDatabase } from "../helpers/postgres.ts";
import { until } from "../helpers/until.ts";
import { openWatch, streamError, type WatchReader, watchPath } from "../helpers/watch.ts";

const secret = "multi-instance-signing-secret-0123456789";
let database: TestDatabase;
let a: EmulatorProcess;
let b: EmulatorProcess;

beforeAll(async () => {
  await ensureBuilt();
  database = await emulatorDatabase("multi");
  const args = ["--database", database.url, "--signing-secret", secret, "--password-hash-cost", "4"];
  [a, b] = await Promise.all([startEmulatorProcess(args), startEmulatorProcess(args)]);
}, 60_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  killAll();
  await database?.drop();
});

const base = "/api/client/v2.0";

async function send(
  on: EmulatorProcess,
  operationId: string,
  method: string,
  path: string,
  options: { body?: unknown; token?: string } = {},
) {
  const response = await fetch(`${on.url}${path}`, {
    method,
    headers: {
      ...(options.body !== undefined ? { "content-type": "application/json" } : {}),
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const body = (await expectFetchContract(operationId, response)) as Record<string, any>;
  return { status: response.status, body };
}

interface Session {
  access_token: string;
  refresh_token: string;
  user_id: string;
}

async function newApp(on: EmulatorProcess, config: Record<string, unknown> = {}): Promise<string> {
  const { status, body } = await send(on, "createApp", "POST", "/_mock/v1/apps", { body: { config } });
  expect(status).toBe(201);
  return body.appId as string;
}

async function seedUser(on: EmulatorProcess, appId: string, email: string): Promise<Session> {
  await send(on, "createUser", "POST", `/_mock/v1/apps/${appId}/users`, { body: { email, password: "secret-1" } });
  const { body } = await send(on, "login", "POST", `${base}/app/${appId}/auth/providers/local-userpass/login`, {
    body: { username: email, password: "secret-1" },
  });
  return body as unknown as Session;
}

const profile = (on: EmulatorProcess, token: string) =>
  send(on, "getProfile", "GET", `${base}/auth/profile`, { token });

describe("two instances on one database", () => {
  it("accept each other's tokens: an access token and a refresh of the session", async () => {
    const appId = await newApp(a);
    const session = await seedUser(a, appId, "ann@example.com");
    const seen = await profile(b, session.access_token);
    expect(seen.status).toBe(200);
    expect(seen.body.user_id).toBe(session.user_id);
    const refreshed = await send(b, "refreshAccessToken", "POST", `${base}/auth/session`, {
      token: session.refresh_token,
    });
    expect(refreshed.status).toBe(201);
    expect((await profile(a, refreshed.body.access_token)).status).toBe(200);
  });

  it("refuse a session revoked on the other at its next request", async () => {
    const appId = await newApp(a);
    const session = await seedUser(a, appId, "rev@example.com");
    expect((await send(a, "logOut", "DELETE", `${base}/auth/session`, { token: session.refresh_token })).status).toBe(
      204,
    );
    const refused = await send(b, "refreshAccessToken", "POST", `${base}/auth/session`, {
      token: session.refresh_token,
    });
    expect(refused.status).toBe(401);
    expect(refused.body.error_code).toBe("InvalidSession");
  });

  it("refuse a user disabled or deleted on the other as soon as it hears of it", async () => {
    const appId = await newApp(a);
    const disabled = await seedUser(a, appId, "off@example.com");
    const deleted = await seedUser(a, appId, "gone@example.com");
    // b keeps what it read (its access-token requests then need no database).
    for (let n = 0; n < 3; n++) {
      expect((await profile(b, disabled.access_token)).status).toBe(200);
      expect((await profile(b, deleted.access_token)).status).toBe(200);
    }
    await send(a, "updateUser", "PATCH", `/_mock/v1/apps/${appId}/users/${disabled.user_id}`, {
      body: { disabled: true },
    });
    // a refuses before the change answers; b once its notification arrives (within the window).
    expect((await profile(a, disabled.access_token)).status).toBe(401);
    await expect.poll(async () => (await profile(b, disabled.access_token)).status).toBe(401);
    expect((await send(a, "deleteUser", "DELETE", `${base}/auth/delete`, { token: deleted.access_token })).status).toBe(
      204,
    );
    await expect.poll(async () => (await profile(b, deleted.access_token)).status).toBe(401);
  });

  it.skipIf(process.env.TEST_DATABASE_URL)(
    "refuse a session ended on the other within the revocation window even while hearing nothing",
    async () => {
      const appId = await newApp(a);
      const ended = await seedUser(a, appId, "stalled@example.com");
      const stays = await seedUser(a, appId, "stays@example.com");
      for (let n = 0; n < 3; n++) expect((await profile(b, ended.access_token)).status).toBe(200);
      // The server processes of both listening connections stopped: nothing is delivered, nothing breaks.
      const { rows } = await adminQuery(
        postgresAdminUrl(),
        "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = 'app-services-emulator-listener'",
        [database.name],
      );
      expect(rows).toHaveLength(2);
      for (const { pid } of rows) process.kill(Number(pid), "SIGSTOP");
      try {
        expect((await send(a, "logOut", "DELETE", `${base}/auth/session`, { token: ended.refresh_token })).status).toBe(
          204,
        );
        // b's notifications are no longer current: within the window it asks the database instead.
        await expect.poll(async () => (await profile(b, ended.access_token)).status, { timeout: 10_000 }).toBe(401);
        expect((await profile(b, stays.access_token)).status).toBe(200);
      } finally {
        for (const { pid } of rows) process.kill(Number(pid), "SIGCONT");
      }
      expect((await profile(b, ended.access_token)).status).toBe(401);
    },
  );

  it("refuse an API key disabled on the other at its next login", async () => {
    const appId = await newApp(a, { providers: { "api-key": { enabled: true } } });
    const session = await seedUser(a, appId, "keys@example.com");
    const created = await send(a, "createApiKey", "POST", `${base}/auth/api_keys`, {
      token: session.refresh_token,
      body: { name: "deploy" },
    });
    const key = created.body.key as string;
    const login = (on: EmulatorProcess) =>
      send(on, "login", "POST", `${base}/app/${appId}/auth/providers/api-key/login`, { body: { key } });
    expect((await login(b)).status).toBe(200);
    await send(a, "disableApiKey", "PUT", `${base}/auth/api_keys/${created.body._id}/disable`, {
      token: session.refresh_token,
    });
    expect((await login(b)).status).toBe(401);
  });

  it("end a change stream open on one when its user is disabled, its session logged out or its API key disabled on the other", async () => {
    const appId = await newApp(a, { ...openData, providers: { "api-key": { enabled: true } } });
    const disabled = await seedUser(a, appId, "stream-off@example.com");
    const out = await seedUser(a, appId, "stream-out@example.com");
    const stays = await seedUser(a, appId, "stream-stays@example.com");
    const created = await send(a, "createApiKey", "POST", `${base}/auth/api_keys`, {
      token: stays.refresh_token,
      body: { name: "watcher" },
    });
    const keySession = (
      await send(a, "login", "POST", `${base}/app/${appId}/auth/providers/api-key/login`, {
        body: { key: created.body.key },
      })
    ).body as unknown as Session;
    const namespace = { database: "d", collection: "watched" };
    const streams = await Promise.all(
      [disabled, out, keySession, stays].map((s) => openWatch(b.url, appId, s.access_token, namespace)),
    );
    for (const stream of streams) expect(stream.response.status).toBe(200);
    await until(
      async () => (await send(b, "getApp", "GET", `/_mock/v1/apps/${appId}`)).body.watchers === 4,
      "the four streams on b",
    );
    const [ofDisabled, ofLoggedOut, ofKey, ofStays] = streams as [WatchReader, WatchReader, WatchReader, WatchReader];
    const ended = async (stream: WatchReader) => {
      expect(streamError(await stream.next())).toMatchObject({ error_code: "InvalidSession" });
      expect(await stream.next()).toBeNull();
    };

    await send(a, "updateUser", "PATCH", `/_mock/v1/apps/${appId}/users/${disabled.user_id}`, {
      body: { disabled: true },
    });
    await ended(ofDisabled);
    expect((await send(a, "logOut", "DELETE", `${base}/auth/session`, { token: out.refresh_token })).status).toBe(204);
    await ended(ofLoggedOut);
    await send(a, "disableApiKey", "PUT", `${base}/auth/api_keys/${created.body._id}/disable`, {
      token: stays.refresh_token,
    });
    await ended(ofKey);
    // The user's password session goes on: a write through a reaches its stream on b.
    const written = await send(a, "callFunction", "POST", `${base}/app/${appId}/functions/call`, {
      token: stays.access_token,
      body: { name: "insertOne", service: "mongodb-atlas", arguments: [{ ...namespace, document: { still: "here" } }] },
    });
    expect(written.status).toBe(200);
    expect(await ofStays.next()).toContain('"still":"here"');
    ofStays.close();
  });

  it("end a change stream open on one when the other drops its collection, after drop and invalidate", async () => {
    const appId = await newApp(a, openData);
    const user = await seedUser(a, appId, "dropped@example.com");
    const namespace = { database: "d", collection: "dropped" };
    const write = await send(a, "callFunction", "POST", `${base}/app/${appId}/functions/call`, {
      token: user.access_token,
      body: { name: "insertOne", service: "mongodb-atlas", arguments: [{ ...namespace, document: { n: 1 } }] },
    });
    expect(write.status).toBe(200);
    const stream = await openWatch(b.url, appId, user.access_token, namespace);
    await until(
      async () => (await send(b, "getApp", "GET", `/_mock/v1/apps/${appId}`)).body.watchers === 1,
      "the stream on b",
    );
    const dropped = await fetch(`${a.url}/_mock/v1/apps/${appId}/data/d/dropped`, { method: "DELETE" });
    expect(dropped.status).toBe(204);
    expect(await stream.next()).toMatch(/^data: \{"_id":\{"_data":"[0-9A-F]+"\},"operationType":"drop",/);
    expect(await stream.next()).toMatch(/^data: \{"_id":\{"_data":"[0-9A-F]+"\},"operationType":"invalidate",/);
    expect(await stream.next()).toBeNull();
  });

  it("let exactly one of two simultaneous registrations of an address win (one per instance, many rounds)", async () => {
    const appId = await newApp(a);
    for (let round = 0; round < 10; round++) {
      const email = `race-${round}@example.com`;
      const register = (on: EmulatorProcess) =>
        send(on, "registerUser", "POST", `${base}/app/${appId}/auth/providers/local-userpass/register`, {
          body: { email, password: "secret-1" },
        });
      const statuses = (await Promise.all([register(a), register(b), register(a), register(b)])).map((r) => r.status);
      expect(
        statuses.filter((s) => s === 201),
        email,
      ).toHaveLength(1);
      expect(
        statuses.filter((s) => s === 409),
        email,
      ).toHaveLength(3);
    }
    const users = await send(b, "listUsers", "GET", `/_mock/v1/apps/${appId}/users`);
    expect(users.body.users).toHaveLength(10);
  });

  it("let exactly one of two simultaneous API keys of one name win", async () => {
    const appId = await newApp(a, { providers: { "api-key": { enabled: true } } });
    const session = await seedUser(a, appId, "names@example.com");
    for (let round = 0; round < 5; round++) {
      const create = (on: EmulatorProcess) =>
        send(on, "createApiKey", "POST", `${base}/auth/api_keys`, {
          token: session.refresh_token,
          body: { name: `key-${round}` },
        });
      const statuses = (await Promise.all([create(a), create(b)])).map((r) => r.status).sort();
      expect(statuses).toEqual([201, 409]);
    }
    const listed = await send(b, "listApiKeys", "GET", `${base}/auth/api_keys`, { token: session.refresh_token });
    expect(listed.body).toHaveLength(5);
  });

  it("decide a key's deletion racing a key of its name, or its user's deletion, without a deadlock", async () => {
    const appId = await newApp(a, { providers: { "api-key": { enabled: true } } });
    const keys = `${base}/auth/api_keys`;
    for (let round = 0; round < 15; round++) {
      // A key deleted on one while a key of its name is made on the other: both answered.
      const owner = await seedUser(a, appId, `keys-${round}@example.com`);
      const create = (on: EmulatorProcess) =>
        send(on, "createApiKey", "POST", keys, { token: owner.refresh_token, body: { name: "ci" } });
      const { body: made } = await create(a);
      const [deleted, again] = await Promise.all([
        send(a, "deleteApiKey", "DELETE", `${keys}/${made._id}`, { token: owner.refresh_token }),
        create(b),
      ]);
      expect([deleted.status, again.status], `round ${round}`).toSatisfy(
        ([d, c]: number[]) => d === 204 && (c === 201 || c === 409),
      );
      const listed = await send(a, "listApiKeys", "GET", keys, { token: owner.refresh_token });
      expect(listed.body).toHaveLength(again.status === 201 ? 1 : 0);
      // A key disabled on one while its user is deleted on the other: the user goes with its keys.
      const { body: other } = await create(a);
      const [disabled, removed] = await Promise.all([
        send(a, "disableApiKey", "PUT", `${keys}/${other._id}/disable`, { token: owner.refresh_token }),
        send(b, "removeUser", "DELETE", `/_mock/v1/apps/${appId}/users/${owner.user_id}`),
      ]);
      expect(removed.status, `round ${round}`).toBe(204);
      expect([204, 401, 404], `round ${round}`).toContain(disabled.status);
    }
    const { rows } = await adminQuery(database.url, "SELECT count(*)::int AS n FROM api_keys WHERE app_id = $1", [
      appId,
    ]);
    expect(rows[0].n).toBe(0);
  });

  it("announce an app's writes only while some instance watches it", async () => {
    const appId = await newApp(a, { rules: { default: { read: true, write: true } } });
    const anon = (await send(a, "login", "POST", `${base}/app/${appId}/auth/providers/anon-user/login`, { body: {} }))
      .body as unknown as Session;
    const insert = (n: number) =>
      send(a, "callFunction", "POST", `${base}/app/${appId}/functions/call`, {
        token: anon.access_token,
        body: {
          name: "insertOne",
          service: "mongodb-atlas",
          arguments: [{ database: "d", collection: "c", document: { n } }],
        },
      });
    // A listener of our own counts what writers announce for this app.
    const listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    const announced: string[] = [];
    listener.on("notification", (message) => {
      if (message.channel === "harness_changes" && message.payload?.includes(`"a":"${appId}"`))
        announced.push(message.payload);
    });
    await listener.query("LISTEN harness_changes");
    try {
      expect((await insert(1)).status).toBe(200);
      const controller = new AbortController();
      const stream = await fetch(`${b.url}${watchPath(appId, { database: "d", collection: "c" }, anon.access_token)}`, {
        signal: controller.signal,
      });
      expect(stream.status).toBe(200);
      expect((await insert(2)).status).toBe(200);
      await until(() => announced.length > 0, "the watched write's announcement");
      // Notifications arrive in commit order: the unwatched first insert would have come first.
      expect(announced).toHaveLength(1);
      expect(announced[0]).toContain('"n":{"$numberInt":"2"}');
      controller.abort();
    } finally {
      await listener.end();
    }
  });

  it("cap a user's and an app's change streams across both (a place freed on one is taken on the other)", async () => {
    const appId = await newApp(a, { rules: { default: { read: true } }, maxStreamsPerUser: 1, maxStreamsPerApp: 2 });
    const anonymous = async () =>
      (await send(a, "login", "POST", `${base}/app/${appId}/auth/providers/anon-user/login`, { body: {} })).body
        .access_token as string;
    const [ann, bob, cid] = [await anonymous(), await anonymous(), await anonymous()];
    const namespace = { database: "d", collection: "c" };
    const refusal = async (on: EmulatorProcess, token: string) => {
      const stream = await openWatch(on.url, appId, token, namespace);
      expect(stream.response.status).toBe(429);
      return expectFetchContract("callFunctionStreaming", stream.response);
    };
    const annOnA = await openWatch(a.url, appId, ann, namespace);
    expect(annOnA.response.status).toBe(200);
    // Each instance alone would allow it: the place is taken on a.
    expect(await refusal(b, ann)).toMatchObject({
      error: "too many change streams: a user may have 1 open at once",
      error_code: "TooManyRequests",
    });
    const bobOnB = await openWatch(b.url, appId, bob, namespace);
    expect(bobOnB.response.status).toBe(200);
    expect(await refusal(a, cid)).toMatchObject({
      error: "too many change streams: the app may have 2 open at once",
      error_code: "TooManyRequests",
    });
    // Ann leaves a: her place is given back, and b lets her in.
    annOnA.close();
    let annOnB: WatchReader | null = null;
    await until(async () => {
      const stream = await openWatch(b.url, appId, ann, namespace);
      if (stream.response.status === 200) annOnB = stream;
      else await stream.response.body?.cancel();
      return annOnB !== null;
    }, "ann's place given back on a");
    (annOnB as WatchReader | null)?.close();
    bobOnB.close();
  });

  it("deliver a document written through one to a change stream open on the other", async () => {
    const appId = await newApp(a, { rules: { default: { read: true, write: true } } });
    const anon = (await send(a, "login", "POST", `${base}/app/${appId}/auth/providers/anon-user/login`, { body: {} }))
      .body as unknown as Session;
    const controller = new AbortController();
    const stream = await fetch(
      `${b.url}${watchPath(appId, { database: "shop", collection: "orders" }, anon.access_token)}`,
      {
        signal: controller.signal,
      },
    );
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    let text = "";
    const arrivals: number[] = [];
    // (Decoded as a stream: a character's bytes may be split between reads. An event has arrived
    // once its block has ended.)
    const decoder = new TextDecoder();
    const reading = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        text += decoder.decode(value, { stream: true });
        const events = text
          .split("\n\n")
          .slice(0, -1)
          .filter((chunk) => chunk.startsWith("data:")).length;
        while (arrivals.length < events) arrivals.push(performance.now());
      }
    })().catch(() => undefined);
    // The stream is open on b once b counts it.
    await until(
      async () => (await send(b, "getApp", "GET", `/_mock/v1/apps/${appId}`)).body.watchers === 1,
      "the watcher",
    );
    const insertThroughA = async (document: Record<string, unknown>) => {
      const sent = await send(a, "callFunction", "POST", `${base}/app/${appId}/functions/call`, {
        token: anon.access_token,
        body: {
          name: "insertOne",
          service: "mongodb-atlas",
          arguments: [{ database: "shop", collection: "orders", document }],
        },
      });
      expect(sent.status).toBe(200);
    };
    const latencies: number[] = [];
    for (let n = 0; n < 5; n++) {
      await insertThroughA({ n });
      const acknowledged = performance.now();
      await until(() => arrivals.length > n, `change event ${n}`, { timeoutMs: 5000, everyMs: 1 });
      latencies.push(arrivals[n]! - acknowledged);
    }
    // U+0000 and U+E000 (the store's escape character) arrive as they were written, in an event
    // small enough for a notification, in one that goes through the change log, and in one large
    // enough to be read from it in slices.
    const awkward = [
      "small: \u0000\uE000\u0000",
      `large: \u0000\uE000${"x".repeat(10_000)}`,
      `larger: \u0000\uE000${"y".repeat(300_000)}`,
    ];
    for (const [i, value] of awkward.entries()) {
      await insertThroughA({ value });
      await until(() => arrivals.length > 5 + i, `change event with U+0000 ${i}`, { timeoutMs: 5000, everyMs: 1 });
    }
    controller.abort();
    await reading;
    expect(text).toContain('"operationType":"insert"');
    for (let n = 0; n < 5; n++) expect(text).toContain(`"n":{"$numberInt":"${n}"}`);
    for (const value of awkward) expect(text).toContain(`"value":${JSON.stringify(value)}`);
    // Within 100 ms of the writer's reply (the median, so one scheduling hiccup on a busy machine does not decide).
    latencies.sort((x, y) => x - y);
    expect(latencies[2]).toBeLessThan(100);
  });
});
