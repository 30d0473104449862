/**
 * The database goes away while the emulator runs: requests answer 503 with the documented body
 * (quickly, not after a hang), open change streams end with an error event, nothing crashes; when
 * the database is back the emulator serves again by itself, change streams included.
 */
import { readdirSync, readFileSync } from "node:fs";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectFetchContract } from "../helpers/fetch-contract.ts";
import { listening } from "../helpers/listen.ts";
import { type PostgresCluster, startCluster } from "../helpers/postgres.ts";
import { until } from "../helpers/until.ts";
import { watchPath } from "../helpers/watch.ts";

let cluster: PostgresCluster;
let app: FastifyInstance;
let url: string;

beforeAll(async () => {
  // A private server: this test stops it (the shared one serves the other files).
  cluster = await startCluster();
  ({ app, url } = await listening({ databaseUrl: cluster.url, signingSecret: "outage-test-signing-secret-0123" }));
}, 60_000);

afterAll(async () => {
  await app?.close();
  await cluster?.stop();
});

const base = "/api/client/v2.0";

async function login(): Promise<{ access_token: string; user_id: string }> {
  const response = await fetch(`${url}${base}/app/local-app/auth/providers/anon-user/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  return (await expectFetchContract("login", response)) as { access_token: string; user_id: string };
}

const watch = (token: string) =>
  fetch(`${url}${watchPath("local-app", { database: "notes-app", collection: "notes" })}`, {
    headers: { authorization: `Bearer ${token}` },
  });

async function readAll(response: Response): Promise<string> {
  let text = "";
  const reader = response.body!.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return text;
    text += Buffer.from(value).toString();
  }
}

describe("a database outage", () => {
  it("answers 503 meanwhile, ends change streams, and recovers by itself", async () => {
    const { access_token, user_id } = await login();
    const stream = await watch(access_token);
    expect(stream.status).toBe(200);
    const streamText = readAll(stream);

    await cluster.stopServer();

    // The open stream ends with an error event (the emulator saw its notifications connection go):
    // the service's, not the session's, so clients reopen it without renewing their tokens.
    expect(await streamText).toMatch(
      /event: error\ndata: \{"error_code":"ServiceUnavailable","error":"service unavailable: the connection to the database was lost"\}\n\n$/,
    );

    const started = performance.now();
    const profile = await fetch(`${url}${base}/auth/profile`, { headers: { authorization: `Bearer ${access_token}` } });
    expect(profile.status).toBe(503);
    expect(profile.headers.get("retry-after")).toBe("1");
    expect(await expectFetchContract("getProfile", profile)).toEqual({
      error: "service temporarily unavailable: the database cannot be reached; try again shortly",
      error_code: "ServiceUnavailable",
    });
    const users = await fetch(`${url}/_mock/v1/apps/local-app/users`);
    expect(users.status).toBe(503);
    expect(await expectFetchContract("listUsers", users)).toMatchObject({ code: "Unavailable" });
    const email = await fetch(`${url}/api/v1.0/email/send`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: "http://127.0.0.1:5173" },
      body: JSON.stringify({
        user_id: "local-public-key",
        service_id: "local_service",
        template_id: "local_template",
        template_params: { to_email: "ann@example.com", subject: "Hi", message: "Hello" },
      }),
    });
    expect(email.status).toBe(503);
    expect(await expectFetchContract("sendEmail", email)).toBe("Service Unavailable");
    // Answered, not hung: well within the pool's connect timeout for each of the three.
    expect(performance.now() - started).toBeLessThan(10_000);
    // The process is fine meanwhile, and not ready for traffic.
    expect((await fetch(`${url}/_mock/v1/health`)).status).toBe(200);
    const notReady = await fetch(`${url}/_mock/v1/ready`);
    expect(notReady.status).toBe(503);
    expect(await expectFetchContract("getReadiness", notReady)).toMatchObject({
      status: "unavailable",
      reason: expect.stringMatching(/^the database cannot be reached/),
    });

    await cluster.startServer();

    const back = await until(
      async () => {
        const response = await fetch(`${url}${base}/auth/profile`, {
          headers: { authorization: `Bearer ${access_token}` },
        });
        return response.status === 200 ? response : null;
      },
      "the emulator to serve again",
      { timeoutMs: 20_000, everyMs: 100 },
    );
    await expectFetchContract("getProfile", back);
    // Ready again by itself (each readiness check asks the notifications connection back at once).
    await until(async () => (await fetch(`${url}/_mock/v1/ready`)).status === 200, "readiness", {
      timeoutMs: 10_000,
      everyMs: 50,
    });

    // Change streams work again once the notifications connection is back (until then they are
    // refused with the documented 503, never opened to miss events).
    const again = await until(
      async () => {
        const response = await watch(access_token);
        if (response.status === 503) await expectFetchContract("callFunctionStreaming", response);
        return response.status === 503 ? null : response;
      },
      "a change stream to open again",
      { timeoutMs: 10_000, everyMs: 50 },
    );
    expect(again.status).toBe(200);
    const reader = again.body!.getReader();
    const inserted = await fetch(`${url}${base}/app/local-app/functions/call`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${access_token}` },
      body: JSON.stringify({
        name: "insertOne",
        service: "mongodb-atlas",
        arguments: [{ database: "notes-app", collection: "notes", document: { title: "back", owner_id: user_id } }],
      }),
    });
    expect(inserted.status).toBe(200);
    let text = "";
    await until(
      async () => {
        const { value } = await reader.read();
        text += Buffer.from(value ?? new Uint8Array()).toString();
        return text.includes('"title":"back"');
      },
      "the change event after the outage",
      { timeoutMs: 10_000 },
    );
    await reader.cancel();
  });

  it("answers a MongoDB action and readiness while the database answers nothing, and serves after", async () => {
    const { access_token, user_id } = await login();
    const find = () =>
      fetch(`${url}${base}/app/local-app/functions/call`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${access_token}` },
        body: JSON.stringify({
          name: "find",
          service: "mongodb-atlas",
          arguments: [{ database: "notes-app", collection: "notes", query: { owner_id: user_id } }],
        }),
      });
    expect((await find()).status).toBe(200);
    // Frozen, not gone: connections stay open and the kernel acknowledges, but nothing answers (a
    // stopped server, a host out of memory). A statement's timeout and its cancellation are the
    // server's to carry out, so waiting for them waited until it woke.
    const frozen = postgresProcesses(cluster.pid()!);
    for (const pid of frozen) process.kill(pid, "SIGSTOP");
    try {
      const during = await find();
      expect([400, 503]).toContain(during.status);
      expect(await expectFetchContract("callFunction", during)).toMatchObject({
        error_code: during.status === 400 ? "MongoDBError" : "ServiceUnavailable",
      });
      const notReady = await fetch(`${url}/_mock/v1/ready`);
      expect(notReady.status).toBe(503);
      expect(await expectFetchContract("getReadiness", notReady)).toMatchObject({ status: "unavailable" });
    } finally {
      for (const pid of frozen) process.kill(pid, "SIGCONT");
    }
    await until(async () => (await find()).status === 200, "the emulator to serve again", {
      timeoutMs: 20_000,
      everyMs: 100,
    });
  }, 60_000);
});

/** A PostgreSQL server's processes: the postmaster and every process it started. */
function postgresProcesses(postmaster: number): number[] {
  const children = readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return (
          readFileSync(`/proc/${pid}/stat`, "utf8")
            .replace(/^.*\) /s, "")
            .split(" ")[1] === String(postmaster)
        );
      } catch {
        return false;
      }
    })
    .map(Number);
  return [postmaster, ...children];
}
