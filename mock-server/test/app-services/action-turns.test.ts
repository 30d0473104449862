/**
 * A client's MongoDB actions take turns per user, then per client address whatever its users
 * (runtime/action-turns.ts, decision 0018): at most `maxMongoActionsPerUser` (and
 * `maxMongoActionsPerAddress`) run at once, more wait in the user's (the address's) own line —
 * others' actions are not behind it — and past 256 waiting in either an action is refused with
 * 429; one whose client leaves while it waits never runs.
 */
import { request } from "node:http";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maxMongoActionsWaiting } from "../../src/config/app-config.ts";
import type { AppRuntime } from "../../src/runtime/app-runtime.ts";
import { anonymousLogin, mongoAction, newApp, testApp } from "../helpers/app.ts";
import { listening } from "../helpers/listen.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

const held = { database: "db", collection: "held" };

/** Holds the collection's write turn (the memory store's) until the answer's function is called. */
async function holdWrites(runtime: AppRuntime): Promise<() => Promise<void>> {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let started!: () => void;
  const holding = new Promise<void>((resolve) => {
    started = resolve;
  });
  const write = runtime.data.write(held.database, held.collection, async () => {
    started();
    await gate;
    return { changes: [], events: () => [], result: () => undefined };
  });
  await holding;
  return async () => {
    release();
    await write;
  };
}

describe("a client's MongoDB actions", () => {
  it("run a few at once, the rest waiting in the user's own line; others' are not behind them", async () => {
    const appId = await newApp(app, {
      maxMongoActionsPerUser: 2,
      rules: { default: { read: true, write: true, insert: true, delete: true } },
    });
    const runtime = (await app.emulator.apps.get(appId))!;
    const [busy, other] = await Promise.all([anonymousLogin(app, appId), anonymousLogin(app, appId)]);
    const release = await holdWrites(runtime);
    const inserts = Array.from({ length: 5 }, (_, i) =>
      mongoAction(app, appId, busy.access_token, "insertOne", { ...held, document: { _id: i } }),
    );
    // Two are running (waiting for the collection), three wait their turn.
    await expect.poll(() => runtime.actionTurns.counts("user:").waiting).toBe(3);
    expect(runtime.actionTurns.counts("user:").running).toBe(2);
    // Another user's action runs now, beside them.
    const found = await mongoAction(app, appId, other.access_token, "find", {
      database: "db",
      collection: "free",
      query: {},
    });
    expect(found.response.statusCode).toBe(200);
    expect(runtime.actionTurns.counts("user:").running).toBe(2);
    await release();
    for (const done of await Promise.all(inserts)) expect(done.response.statusCode).toBe(200);
    expect(runtime.actionTurns.counts()).toEqual({ running: 0, waiting: 0 });
    const all = await mongoAction(app, appId, other.access_token, "find", { ...held, query: {}, sort: { _id: 1 } });
    expect(all.body).toHaveLength(5);
  });

  for (const line of ["user", "address"] as const)
    it(`drop an action whose client left while it waited in its ${line}'s line: it never runs`, async () => {
      const { app: served, url } = await listening();
      try {
        const appId = await newApp(served, {
          ...(line === "user" ? { maxMongoActionsPerUser: 1 } : { maxMongoActionsPerAddress: 1 }),
          rules: { default: { read: true, write: true, insert: true, delete: true } },
        });
        const runtime = (await served.emulator.apps.get(appId))!;
        const user = await anonymousLogin(served, appId);
        // (The address's line: another user of the same address; the user's: the same user.)
        const waiter = line === "user" ? user : await anonymousLogin(served, appId);
        const release = await holdWrites(runtime);
        const running = mongoAction(served, appId, user.access_token, "insertOne", { ...held, document: { _id: 1 } });
        await expect.poll(() => runtime.actionTurns.counts(`${line}:`).running).toBe(1);
        // A client asks for a second insert over a connection, waits its turn, and leaves.
        const leaving = request(`${url}/api/client/v2.0/app/${appId}/functions/call`, {
          method: "POST",
          headers: { authorization: `Bearer ${waiter.access_token}`, "content-type": "application/json" },
        });
        leaving.on("error", () => undefined);
        leaving.end(
          JSON.stringify({
            name: "insertOne",
            service: "mongodb-atlas",
            arguments: [{ ...held, document: { _id: 2 } }],
          }),
        );
        await expect.poll(() => runtime.actionTurns.counts(`${line}:`).waiting).toBe(1);
        leaving.destroy();
        await expect.poll(() => runtime.actionTurns.counts(`${line}:`).waiting).toBe(0);
        // Its user's turn is given back with it.
        expect(runtime.actionTurns.counts("user:").running).toBe(1);
        await release();
        expect((await running).response.statusCode).toBe(200);
        expect(runtime.actionTurns.counts()).toEqual({ running: 0, waiting: 0 });
        const ids = await mongoAction(served, appId, user.access_token, "find", { ...held, query: {} });
        expect(ids.body).toEqual([{ _id: { $numberInt: "1" } }]);
      } finally {
        await served.close();
      }
    });

  for (const line of ["user", "address"] as const)
    it(`are refused with 429 past ${maxMongoActionsWaiting} waiting in the ${line}'s line, and the refused one writes nothing`, async () => {
      const appId = await newApp(app, {
        ...(line === "user"
          ? { maxMongoActionsPerUser: 1 }
          : { maxMongoActionsPerUser: 10_000, maxMongoActionsPerAddress: 1 }),
        rules: { default: { read: true, write: true, insert: true, delete: true } },
        // (Not the writes-a-second limit: these writes come at once.)
        limits: { writesPerSecondPerAnonymousUser: 100_000 },
      });
      const runtime = (await app.emulator.apps.get(appId))!;
      const user = await anonymousLogin(app, appId);
      const release = await holdWrites(runtime);
      const insert = (id: number) =>
        mongoAction(app, appId, user.access_token, "insertOne", { ...held, document: { _id: id } });
      const accepted = Array.from({ length: 1 + maxMongoActionsWaiting }, (_, i) => insert(i));
      await expect.poll(() => runtime.actionTurns.counts(`${line}:`).waiting).toBe(maxMongoActionsWaiting);
      expect(runtime.actionTurns.counts(`${line}:`).running).toBe(1);
      const refused = await insert(-1);
      expect(refused.response.statusCode).toBe(429);
      expect(refused.body).toEqual({
        error: `too many MongoDB actions: ${line === "user" ? "a user" : "one address"} may have ${maxMongoActionsWaiting} waiting at once`,
        error_code: "TooManyRequests",
        link: expect.any(String),
      });
      // The refused action gave its turns back: the accepted ones hold their user's turns.
      expect(runtime.actionTurns.counts("user:").running).toBe(line === "user" ? 1 : 1 + maxMongoActionsWaiting);
      await release();
      for (const done of await Promise.all(accepted)) expect(done.response.statusCode).toBe(200);
      expect(runtime.actionTurns.counts()).toEqual({ running: 0, waiting: 0 });
      const found = await mongoAction(app, appId, user.access_token, "count", { ...held, query: { _id: -1 } });
      expect(found.body).toEqual({ $numberLong: "0" });
    });
});

describe("one address's MongoDB actions", () => {
  const fromAddress = (appId: string, token: string, address: string, name: string, argument: object) =>
    mongoAction(app, appId, token, name, argument as Record<string, unknown>, address);
  const loginFrom = async (appId: string, address: string) => (await anonymousLogin(app, appId, address)).access_token;

  it("run a few at once whatever its users, the rest waiting in its line; other addresses' are not behind them", async () => {
    const appId = await newApp(app, {
      maxMongoActionsPerUser: 2,
      maxMongoActionsPerAddress: 3,
      rules: { default: { read: true, write: true, insert: true, delete: true } },
    });
    const runtime = (await app.emulator.apps.get(appId))!;
    const many = await Promise.all([1, 2, 3].map(() => loginFrom(appId, "203.0.113.5")));
    const elsewhere = await loginFrom(appId, "198.51.100.7");
    const release = await holdWrites(runtime);
    const inserts = many.flatMap((token, user) =>
      [0, 1].map((i) =>
        fromAddress(appId, token, "203.0.113.5", "insertOne", { ...held, document: { _id: user * 10 + i } }),
      ),
    );
    // Each user has its two turns; of the six, the address runs three and three wait.
    await expect.poll(() => runtime.actionTurns.counts("address:").waiting).toBe(3);
    expect(runtime.actionTurns.counts("address:").running).toBe(3);
    expect(runtime.actionTurns.counts("user:")).toEqual({ running: 6, waiting: 0 });
    // Another address's user's action runs now, beside them.
    const found = await fromAddress(appId, elsewhere, "198.51.100.7", "find", {
      database: "db",
      collection: "free",
      query: {},
    });
    expect(found.response.statusCode).toBe(200);
    await release();
    for (const done of await Promise.all(inserts)) expect(done.response.statusCode).toBe(200);
    expect(runtime.actionTurns.counts()).toEqual({ running: 0, waiting: 0 });
    const all = await fromAddress(appId, elsewhere, "198.51.100.7", "count", { ...held, query: {} });
    expect(all.body).toEqual({ $numberLong: "6" });
  });
});
