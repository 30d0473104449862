/**
 * Shutting down (SIGTERM/SIGINT → `close()`): requests in flight finish, change streams, event
 * streams and held mail waits end at once, and a request that takes longer than the drain time is
 * cut so shutdown stays bounded.
 */

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Document } from "../src/data/documents.ts";
import { MongoService } from "../src/data/mongo-actions.ts";
import { startServer } from "../src/server.ts";
import { ensureBuilt, killAll, startEmulatorProcess } from "./helpers/emulator-process.ts";
import { expectAnsweredWhileDraining, keptConnection } from "./helpers/kept-connection.ts";
import { logLines } from "./helpers/log-lines.ts";
import { until } from "./helpers/until.ts";

const quiet = { port: 0, logLevel: "silent" as const, watchFunctions: false, passwordHashCost: 4 };
/** The server behind a proxy on this host (`--trust-proxy 127.0.0.1`). */
const behindProxy = { ...quiet, trustProxy: ["127.0.0.1"] };

/** A GET whose body is read to the end; resolves with the status and body, or "cut". */
function get(
  url: string,
  headers: Record<string, string> = {},
): { done: Promise<{ status: number; body: string } | "cut">; headers: Promise<number> } {
  let onHeaders: (status: number) => void = () => {};
  const headersArrived = new Promise<number>((resolve) => (onHeaders = resolve));
  const done = new Promise<{ status: number; body: string } | "cut">((resolve) => {
    const req = request(url, { headers }, (res) => {
      onHeaders(res.statusCode ?? 0);
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      res.on("error", () => resolve("cut"));
    });
    req.on("error", () => resolve("cut"));
    req.end();
  });
  return { done, headers: headersArrived };
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return (await response.json()) as Record<string, string>;
}

describe("shutdown", () => {
  it("lets requests in flight finish and ends streams and waits at once", async () => {
    const server = await startServer(quiet);
    const { url } = server;
    const runtime = (await server.emulator.apps.get("local-app"))!;
    // A request that is in flight for 300 ms (a delay-only fault on location).
    await post(`${url}/_mock/v1/apps/local-app/faults`, { operationId: "getLocation", delayMs: 300 });
    const slow = get(`${url}/api/client/v2.0/app/local-app/location`);
    const login = await post(`${url}/api/client/v2.0/app/local-app/auth/providers/anon-user/login`, {});
    const watch = Buffer.from(
      JSON.stringify({
        name: "watch",
        service: "mongodb-atlas",
        arguments: [{ database: "notes-app", collection: "notes" }],
      }),
    ).toString("base64");
    const stream = get(
      `${url}/api/client/v2.0/app/local-app/functions/call?baas_request=${encodeURIComponent(watch)}`,
      {
        authorization: `Bearer ${login.access_token}`,
      },
    );
    const events = get(`${url}/_mock/v1/events`);
    const mailWait = get(`${url}/_mock/v1/mail?to=nobody@example.com&wait=60000`);
    expect(await stream.headers).toBe(200);
    expect(await events.headers).toBe(200);
    await until(
      () => runtime.streams.size === 1 && server.emulator.store.mail.pendingWaits === 1,
      "the streams and the wait",
    );

    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeLessThan(5000);
    const answered = await slow.done;
    expect(answered !== "cut" && answered.status).toBe(200);
    const waited = await mailWait.done;
    expect(waited !== "cut" && JSON.parse(waited.body)).toEqual({ messages: [], total: 0 });
    const streamed = await stream.done;
    expect(streamed !== "cut" && streamed.body).toMatch(
      /event: error\ndata: \{"error_code":"ServiceUnavailable","error":"service unavailable: the server is shutting down"\}\n\n$/,
    );
    expect(await events.done).not.toBe("cut");
  });

  it("closes without waiting for the drain a connection that carries no request (one a client opened ahead of need)", async () => {
    const server = await startServer(quiet);
    const { port } = new URL(server.url);
    const socket = connect(Number(port), "127.0.0.1");
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.on("error", () => undefined);
    const started = Date.now();
    await server.close();
    // Not the drain time (10 s) or a header timeout: closing has nothing to wait for.
    expect(Date.now() - started).toBeLessThan(1000);
    await closed;
  });

  it("answers a request that comes on a proxy's kept connection while it drains, and closes that connection after the reply", async () => {
    // A proxy's kept connection (nginx's upstream keepalive): closed under its next request, a POST
    // is lost and answered 502 by the proxy, not sent to another instance.
    const server = await startServer(behindProxy);
    await expectAnsweredWhileDraining(server, await keptConnection(server.url));
  });

  it("closes a proxy's kept connection that stays idle once it has been idle a moment, and ends the drain", async () => {
    const server = await startServer(behindProxy);
    const kept = await keptConnection(server.url);
    const started = Date.now();
    await server.close();
    await kept.closed;
    // Not the drain time (10 s) or the keep-alive time (72 s).
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("closes another client's idle kept connection at once (it sends a request again that meets the close)", async () => {
    const server = await startServer(quiet);
    const kept = await keptConnection(server.url);
    const closing = server.close();
    await kept.closed;
    expect(server.app.server.listening).toBe(false);
    await closing;
  });

  it("cuts a request that outlasts the drain time", async () => {
    const server = await startServer({ ...quiet, drainMs: 200 });
    await post(`${server.url}/_mock/v1/apps/local-app/faults`, { operationId: "getLocation", delayMs: 30_000 });
    const stuck = get(`${server.url}/api/client/v2.0/app/local-app/location`);
    await until(() => server.emulator.apps.cached("local-app")?.inFlight === 1, "the request in flight");
    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await stuck.done).toBe("cut");
  });
});

describe("trigger runs at shutdown", () => {
  // Writes `started`, then waits for a flag the test sets once the shutdown has begun, then `done`.
  const hold = `exports = async (event) => {
    const db = context.services.get("mongodb-atlas").db("app");
    await db.collection("audit").insertOne({ started: event.documentKey._id });
    while (!(await db.collection("flags").findOne({ _id: "go" }))) {}
    await db.collection("audit").insertOne({ done: event.documentKey._id });
  };`;

  async function withTrigger(drainMs: number) {
    const { logStream, lines } = logLines();
    const server = await startServer({ ...quiet, logLevel: "warn", allowFunctionSource: true, drainMs }, { logStream });
    const created = await post(`${server.url}/_mock/v1/apps`, {
      appId: "stopping",
      config: {
        functions: { hold: { source: hold, private: true } },
        rules: { default: { read: true, write: true, insert: true, delete: true } },
        triggers: [
          {
            type: "DATABASE",
            name: "held",
            functionName: "hold",
            database: "app",
            collection: "jobs",
            operationTypes: ["INSERT"],
          },
        ],
      },
    });
    const runtime = (await server.emulator.apps.get(created.appId!))!;
    const system = new MongoService(runtime, { kind: "system" });
    const audit = async () =>
      ((await system.run("find", { database: "app", collection: "audit", query: {} })) as Document[]).map(
        ({ _id, ...rest }) => rest,
      );
    await system.run("insertOne", { database: "app", collection: "jobs", document: { _id: "job-1" } });
    await until(async () => (await audit()).length === 1, "the trigger's run under way");
    return { server, system, audit, lines };
  }

  it("lets trigger runs under way finish before the app's functions stop", async () => {
    const { server, system, audit } = await withTrigger(10_000);
    const closing = server.close();
    // The requests have drained; the trigger's run still waits for its flag, the store still open.
    await system.run("insertOne", { database: "app", collection: "flags", document: { _id: "go" } });
    await closing;
    expect(await audit()).toEqual([{ started: "job-1" }, { done: "job-1" }]);
  });

  it("cuts a trigger run that outlasts the drain time, and says so", async () => {
    const { server, audit, lines } = await withTrigger(200);
    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await audit()).toEqual([{ started: "job-1" }]);
    expect(lines).toContainEqual(
      expect.objectContaining({ runs: 1, msg: "trigger runs cut by the shutdown (they outlasted the drain time)" }),
    );
  });
});

describe("shutdown of the command", () => {
  afterAll(() => killAll());

  it("takes a second Ctrl-C while it drains as the first: requests finish, the state is saved", async () => {
    // Ctrl-C in a terminal signals the whole group (npm start and the emulator), and npm start
    // passes it on: the emulator gets SIGINT twice. The second one ended the process mid-drain.
    await ensureBuilt();
    const dataDir = mkdtempSync(join(tmpdir(), "second-signal-"));
    try {
      const server = await startEmulatorProcess(["--data-dir", dataDir]);
      await post(`${server.url}/_mock/v1/apps/local-app/faults`, { operationId: "getLocation", delayMs: 1_500 });
      const slow = get(`${server.url}/api/client/v2.0/app/local-app/location`);
      const created = await post(`${server.url}/_mock/v1/apps/local-app/users`, {
        email: "second-signal@example.com",
        password: "secret-123",
      });
      expect(created.email).toBe("second-signal@example.com");
      const exit = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
        server.child.once("exit", (code, signal) => resolve([code, signal])),
      );
      server.child.kill("SIGINT");
      // Draining: it takes no new connection.
      const refused = () =>
        new Promise<boolean>((resolve) => {
          const socket = connect(Number(new URL(server.url).port), "127.0.0.1");
          socket.once("connect", () => {
            socket.destroy();
            resolve(false);
          });
          socket.once("error", () => resolve(true));
        });
      await until(refused, "the server to stop taking connections");
      server.child.kill("SIGINT");
      expect(await exit).toEqual([0, null]);
      expect(await slow.done).toMatchObject({ status: 200 });
      expect(readFileSync(join(dataDir, "state.json"), "utf8")).toContain("second-signal@example.com");
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
