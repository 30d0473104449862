/**
 * Metrics in Prometheus' text format (prom-client): kept only when asked for, served on the main
 * port behind `--metrics-token` or on a separate address (`--metrics-address`), never openly.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../src/server.ts";
import { anonymousLogin, call, callAppFunction, newApp, testApp, testStore } from "../helpers/app.ts";
import { downPort, smtpServer } from "../helpers/smtp.ts";
import { until } from "../helpers/until.ts";
import { openWatch } from "../helpers/watch.ts";

const token = "metrics-token-for-the-tests";
const base = "/api/client/v2.0/app/local-app";
const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const item of opened) await item.close();
});

async function metricsOf(app: FastifyInstance): Promise<string> {
  const { response, body } = await call(app, "getMetrics", {
    method: "GET",
    url: "/_mock/v1/metrics",
    headers: { authorization: `Bearer ${token}` },
  });
  expect(response.statusCode).toBe(200);
  expect(response.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
  return body as string;
}

/** The value of one series (name and labels exactly as written), or undefined. */
function value(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("getMetrics", () => {
  it("answers 404 when metrics were not asked for", async () => {
    const app = await testApp();
    try {
      const { response, body } = await call(app, "getMetrics", { method: "GET", url: "/_mock/v1/metrics" });
      expect(response.statusCode).toBe(404);
      expect(body.error).toMatch(/--metrics-token.*--metrics-address/);
    } finally {
      await app.close();
    }
  });

  it("requires the metrics token, even where the control API is open", async () => {
    const app = await testApp({ metricsToken: token });
    try {
      for (const authorization of [undefined, "Bearer wrong", `Bearer ${token}x`]) {
        const { response } = await call(app, "getMetrics", {
          method: "GET",
          url: "/_mock/v1/metrics",
          headers: authorization ? { authorization } : {},
        });
        expect(response.statusCode).toBe(401);
      }
    } finally {
      await app.close();
    }
  });

  it("are served in production mode without a control token, behind the metrics token", async () => {
    const app = await testApp({
      production: true,
      signingSecret: "a-test-signing-secret-of-32-chars",
      metricsToken: token,
    });
    try {
      expect(value(await metricsOf(app), "appservices_ready")).toBe(1);
      const without = await call(app, "getMetrics", { method: "GET", url: "/_mock/v1/metrics" });
      expect(without.response.statusCode).toBe(401);
    } finally {
      await app.close();
    }
  });

  it("counts requests by operation and status, their latency, rate-limit refusals and readiness", async () => {
    const app = await testApp({ metricsToken: token, authRateLimit: { max: 1, windowMs: 60_000 } });
    try {
      await app.inject({ method: "GET", url: `${base}/location` });
      await app.inject({ method: "GET", url: `${base}/location` });
      const wrong = { username: "nobody@example.com", password: "not-the-password" };
      const first = await app.inject({
        method: "POST",
        url: `${base}/auth/providers/local-userpass/login`,
        payload: wrong,
      });
      const second = await app.inject({
        method: "POST",
        url: `${base}/auth/providers/local-userpass/login`,
        payload: wrong,
      });
      expect([first.statusCode, second.statusCode]).toEqual([401, 429]);
      const text = await metricsOf(app);
      expect(value(text, 'appservices_http_requests_total{operation="getLocation",status="200"}')).toBe(2);
      expect(value(text, 'appservices_http_requests_total{operation="login",status="401"}')).toBe(1);
      expect(value(text, 'appservices_http_requests_total{operation="login",status="429"}')).toBe(1);
      expect(value(text, 'appservices_http_request_duration_seconds_count{operation="getLocation"}')).toBe(2);
      expect(text).toContain('appservices_http_request_duration_seconds_bucket{le="0.005",operation="getLocation"}');
      expect(value(text, 'appservices_rate_limit_refusals_total{operation="login"}')).toBe(1);
      expect(value(text, "appservices_ready")).toBe(1);
      expect(text).toMatch(/^appservices_process_cpu_seconds_total /m);
      expect(text).toMatch(/^appservices_nodejs_eventloop_lag_p99_seconds /m);
      if (testStore() === "postgres") {
        expect(value(text, 'appservices_database_pool_connections{state="total"}')).toBeGreaterThan(0);
        expect(value(text, "appservices_database_pool_max")).toBe(20);
      } else {
        expect(text).not.toContain("appservices_database_pool");
      }
      app.emulator.markStopping();
      expect(value(await metricsOf(app), "appservices_ready")).toBe(0);
    } finally {
      await app.close();
    }
  });

  it("counts open change streams", async () => {
    const app = await testApp({ metricsToken: token });
    await app.listen({ host: "127.0.0.1", port: 0 });
    opened.push(app);
    const address = app.server.address() as { port: number };
    const url = `http://127.0.0.1:${address.port}`;
    const login = await app.inject({ method: "POST", url: `${base}/auth/providers/anon-user/login`, payload: {} });
    const stream = await openWatch(url, "local-app", login.json().access_token, {
      database: "notes-app",
      collection: "notes",
    });
    expect(value(await metricsOf(app), "appservices_change_streams_open")).toBe(1);
    stream.close();
    await until(async () => value(await metricsOf(app), "appservices_change_streams_open") === 0, "the stream to end");
  });

  it("counts function processes, and those seen busy", async () => {
    const app = await testApp({ metricsToken: token, allowFunctionSource: true });
    opened.push(app);
    const appId = await newApp(app, {
      functions: {
        compute: {
          source: "exports = (ms) => { const end = Date.now() + ms; while (Date.now() < end) {} return 1; };",
        },
      },
    });
    const session = await anonymousLogin(app, appId);
    const before = await metricsOf(app);
    expect(value(before, "appservices_function_processes")).toBe(0);
    expect(value(before, "appservices_function_processes_busy_total")).toBe(0);
    expect(value(before, "appservices_function_processes_out_of_memory_total")).toBe(0);
    // A computation of three seconds holds its process past the liveness limit: seen busy, once.
    const computing = callAppFunction(app, appId, session.access_token, "compute", [3000]);
    await expect
      .poll(async () => value(await metricsOf(app), "appservices_function_processes_busy_total"), { timeout: 2500 })
      .toBe(1);
    expect(value(await metricsOf(app), "appservices_function_processes")).toBe(1);
    expect((await computing).body).toEqual({ $numberInt: "1" });
    // Its process ended with its call (no other call needed one).
    await expect.poll(async () => value(await metricsOf(app), "appservices_function_processes")).toBe(0);
    expect(value(await metricsOf(app), "appservices_function_processes_busy_total")).toBe(1);
  });

  it("shows the outbox: mail waiting for delivery, and delivery attempts by outcome", async () => {
    const smtp = await smtpServer(0, /^refused@/);
    opened.push(smtp);
    const app = await testApp({
      metricsToken: token,
      smtpUrl: `smtp://127.0.0.1:${smtp.port}`,
      smtpRetry: { baseDelayMs: 5, maxDelayMs: 5, maxRefusals: 1 },
    });
    try {
      for (const email of ["ann@example.com", "refused@example.com"])
        await app.inject({
          method: "POST",
          url: `${base}/auth/providers/local-userpass/register`,
          payload: { email, password: "secret-1" },
        });
      const text = await until(async () => {
        const now = await metricsOf(app);
        return value(now, 'appservices_mail_delivery_attempts_total{outcome="failed"}') === 1 ? now : null;
      }, "the refused message to fail");
      expect(value(text, 'appservices_mail_delivery_attempts_total{outcome="sent"}')).toBe(1);
      expect(value(text, "appservices_mail_outbox_queued")).toBe(0);
    } finally {
      await app.close();
    }
  });

  it("counts a message waiting while the SMTP server is down", async () => {
    const down = await downPort();
    const { port } = down;
    const app = await testApp({
      metricsToken: token,
      smtpUrl: `smtp://127.0.0.1:${port}`,
      smtpRetry: { baseDelayMs: 60_000, maxDelayMs: 60_000, maxRefusals: 5 },
    });
    try {
      await app.inject({
        method: "POST",
        url: `${base}/auth/providers/local-userpass/register`,
        payload: { email: "ann@example.com", password: "secret-1" },
      });
      const text = await until(async () => {
        const now = await metricsOf(app);
        return value(now, 'appservices_mail_delivery_attempts_total{outcome="retry"}') === 1 ? now : null;
      }, "a failed attempt");
      expect(value(text, "appservices_mail_outbox_queued")).toBe(1);
    } finally {
      await app.close();
      await down.free();
    }
  });
});

describe("--metrics-address", () => {
  let server: RunningServer;

  it("serves the metrics at /metrics on an address of its own, without a token, and not on the main port", async () => {
    server = await startServer({
      port: 0,
      logLevel: "silent",
      watchFunctions: false,
      metricsAddress: { host: "127.0.0.1", port: 0 },
    });
    opened.push(server);
    expect(server.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    await fetch(`${server.url}${base}/location`);
    const response = await fetch(server.metricsUrl!);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(value(await response.text(), 'appservices_http_requests_total{operation="getLocation",status="200"}')).toBe(
      1,
    );
    expect((await fetch(server.metricsUrl!.replace(/\/metrics$/, "/other"))).status).toBe(404);
    expect((await fetch(`${server.url}/_mock/v1/metrics`)).status).toBe(404);
  });
});
