/**
 * A server between listening and serving (http/while-starting.ts): health 200, readiness 503
 * `starting`, other requests held until it serves — their bodies unread, answered by the server
 * that serves, in order — or given the area's 503 with `Retry-After` past the hold's time or count.
 */
import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { whileStarting } from "../../src/http/while-starting.ts";

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function listening(listener: RequestListener): Promise<string> {
  const server = createServer(listener);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("a starting server", () => {
  it("holds requests until it serves, and hands them over with their bodies", async () => {
    const starting = whileStarting(() => ({ status: "ok" }), { holdMs: 60_000, maxHeld: 10 });
    // (As a server does: once it serves, new requests go to its handler.)
    let current: RequestListener = starting.listener;
    const base = await listening((request, res) => current(request, res));
    expect((await fetch(`${base}/_mock/v1/health`)).status).toBe(200);
    expect((await fetch(`${base}/_mock/v1/ready`)).status).toBe(503);
    const first = fetch(`${base}/api/client/v2.0/app/a/functions/call`, { method: "POST", body: '{"n":1}' });
    const second = fetch(`${base}/api/client/v2.0/app/a/location`);
    await expect.poll(() => starting.held).toBe(2);
    const served: string[] = [];
    const handler: RequestListener = (request, res) => {
      let body = "";
      request.on("data", (chunk) => (body += chunk));
      request.on("end", () => {
        served.push(`${request.method} ${request.url} ${body}`);
        res.end("served");
      });
    };
    current = handler;
    starting.serve(handler);
    expect(await (await first).text()).toBe("served");
    expect(await (await second).text()).toBe("served");
    expect(served.sort()).toEqual([
      "GET /api/client/v2.0/app/a/location ",
      'POST /api/client/v2.0/app/a/functions/call {"n":1}',
    ]);
    expect(starting.held).toBe(0);
  });

  it("answers 503 with Retry-After past the hold's time or count, and when the start fails", async () => {
    const starting = whileStarting(() => ({ status: "ok" }), { holdMs: 50, maxHeld: 1 });
    const base = await listening((request, res) => starting.listener(request, res));
    const late = await fetch(`${base}/api/client/v2.0/app/a/location`);
    expect(late.status).toBe(503);
    expect(late.headers.get("retry-after")).toBe("1");
    expect(await late.json()).toMatchObject({ error_code: "ServiceUnavailable" });

    const patient = whileStarting(() => ({ status: "ok" }), { holdMs: 60_000, maxHeld: 1 });
    const base2 = await listening((request, res) => patient.listener(request, res));
    const held = fetch(`${base2}/api/v1.0/email/send`, { method: "POST", body: "{}" });
    await expect.poll(() => patient.held).toBe(1);
    // Past the count, one more is refused at once (the control API's 503).
    const refused = await fetch(`${base2}/_mock/v1/apps`);
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ code: expect.any(String) });
    patient.fail();
    const failed = await held;
    expect(failed.status).toBe(503);
    expect(failed.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(patient.held).toBe(0);
  });
});
