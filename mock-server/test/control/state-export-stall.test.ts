/**
 * A state export (`GET /_mock/v1/state`) its client stops reading: the reply is a stream, which
 * the unsent-reply watch of whole replies does not see, and it held what it was made from — the
 * rendered state in memory, and on PostgreSQL a pooled connection and a snapshot of the database —
 * for as long as the connection stayed open. A reply that sends nothing for the idle time loses
 * its connection, and the export lets go of what it held (the database's transaction ends); one
 * that reads slowly keeps it. On PostgreSQL the documents are read through a cursor, a batch at a
 * time, not all at once. Here the state is ~17 MB of documents and the idle time 1 s.
 */
import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { call, newApp, openData, testStore } from "../helpers/app.ts";
import { listening } from "../helpers/listen.ts";
import { pausedRequest } from "../helpers/paused-request.ts";
import { statementsOf } from "../helpers/postgres.ts";
import { until } from "../helpers/until.ts";

const idleMs = 1_000;
const documentCount = 24;
let app: FastifyInstance;
let url: string;
let appId: string;
beforeAll(async () => {
  ({ app, url } = await listening({ unsentReplyIdleMs: idleMs }));
  appId = await newApp(app, openData);
  const text = "x".repeat(700_000);
  for (let n = 0; n < documentCount; n += 4) {
    const { response } = await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/big/docs`,
      payload: { documents: [0, 1, 2, 3].map((i) => ({ n: n + i, text })) },
    });
    expect(response.statusCode).toBe(201);
  }
});
afterAll(() => app.close());

const sockets: Socket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
});

/** A raw connection that asks for the export and reads nothing until told to. */
const exporter = () => pausedRequest(url, "GET /_mock/v1/state HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", sockets);

/** The export's transactions still open (PostgreSQL), or 0. */
async function openReadings(): Promise<number> {
  if (testStore() !== "postgres") return 0;
  const [row] = await (app.emulator.store as PostgresStore).database.rows<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
  );
  return row?.n ?? 0;
}

describe("a state export its client does not read", () => {
  it("loses its connection after the idle time, and lets go of what it held", async () => {
    const cutBefore = app.emulator.unsentReplies.cut;
    const stalled = await exporter();
    if (testStore() === "postgres") await until(async () => (await openReadings()) === 1, "the export's snapshot");
    await until(() => app.emulator.unsentReplies.cut === cutBefore + 1, "a cut", { timeoutMs: 10_000 });
    stalled.socket.resume();
    await until(() => stalled.state.closed, "the stalled export's connection to be closed");
    expect(stalled.state.received).toBeLessThan(documentCount * 700_000);
    await until(async () => (await openReadings()) === 0, "the export's transaction to end");
    // The next export is whole.
    const { response, body } = await call(app, "exportState", { method: "GET", url: "/_mock/v1/state" });
    expect(response.statusCode).toBe(200);
    const exported = body.apps.find((a: { appId: string }) => a.appId === appId);
    expect(exported.collections[0].documents).toHaveLength(documentCount);
  });

  it("keeps an export its client reads slowly", async () => {
    const cutBefore = app.emulator.unsentReplies.cut;
    const slow = await exporter();
    // 64 KiB every 25 ms for longer than the idle time (as http/unsent-replies.test.ts reads).
    slow.socket.on("readable", () => undefined);
    const readUntil = Date.now() + idleMs * 1.6;
    while (Date.now() < readUntil && !slow.state.closed) {
      const chunk = slow.socket.read(64 * 1024) ?? slow.socket.read();
      if (chunk === null) await new Promise((resolve) => slow.socket.once("readable", resolve));
      else await new Promise((resolve) => setTimeout(resolve, 25)); // ('data' counts it)
    }
    expect(slow.state.closed).toBe(false);
    expect(app.emulator.unsentReplies.cut).toBe(cutBefore);
    slow.socket.removeAllListeners("readable");
    slow.socket.resume();
    await until(() => slow.state.received > documentCount * 700_000, "the whole export");
    await until(async () => (await openReadings()) === 0, "the export's transaction to end");
  });

  it.runIf(testStore() === "postgres")("reads the documents through a cursor, a batch at a time", async () => {
    const { texts } = await statementsOf(() => call(app, "exportState", { method: "GET", url: "/_mock/v1/state" }));
    const cursor = texts
      .map((text) => /^DECLARE (\w+) NO SCROLL CURSOR FOR SELECT seq, ejson/.exec(text)?.[1])
      .find((name) => name !== undefined);
    expect(cursor).toBeDefined();
    // ~17 MB of documents, about 8 MB a batch (16 rows first): not all in one statement.
    const fetches = texts.filter((text) => new RegExp(`^FETCH \\d+ FROM ${cursor}$`).test(text));
    expect(fetches.length).toBeGreaterThanOrEqual(2);
  });
});
