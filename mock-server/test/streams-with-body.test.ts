/**
 * Regression (found by the fuzzer): a stream opened by a GET that carried a body (unread by the
 * server) never noticed its client leaving, so its subscription and keep-alive timer stayed for
 * good. The change stream, the control event stream and a mail wait now end when the client goes,
 * body or not.
 */
import { request } from "node:http";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin } from "./helpers/app.ts";
import { listening } from "./helpers/listen.ts";
import { until } from "./helpers/until.ts";

let app: FastifyInstance;
let url: string;
beforeAll(async () => {
  ({ app, url } = await listening());
});
afterAll(() => app.close());

/** Opens a GET stream with a body, waits for the stream's headers, then hangs up. */
function openAndLeave(path: string, headers: Record<string, string>, bodyBytes: number): Promise<number> {
  const body = Buffer.alloc(bodyBytes, 0x7b);
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        method: "GET",
        headers: { ...headers, "content-type": "application/json", "content-length": String(body.length) },
      },
      (res) => {
        const status = res.statusCode ?? 0;
        res.destroy();
        req.destroy();
        resolve(status);
      },
    );
    req.on("error", (error) => (req.destroyed ? undefined : reject(error)));
    req.end(body);
  });
}

describe("a stream opened with a body on its GET", () => {
  it.each([100_000, 2_000_000])("ends the event stream when the client leaves (%i-byte body)", async (bytes) => {
    const before = app.emulator.events.size;
    expect(await openAndLeave("/_mock/v1/events", {}, bytes)).toBe(200);
    await until(() => app.emulator.events.size === before, "the event stream's subscription to end");
  });

  it.each([100_000, 2_000_000])("ends the change stream when the client leaves (%i-byte body)", async (bytes) => {
    const { access_token } = await anonymousLogin(app, "local-app");
    const watch = Buffer.from(
      JSON.stringify({
        name: "watch",
        service: "mongodb-atlas",
        arguments: [{ database: "notes-app", collection: "notes" }],
      }),
    ).toString("base64");
    const runtime = (await app.emulator.apps.get("local-app"))!;
    expect(
      await openAndLeave(
        `/api/client/v2.0/app/local-app/functions/call?baas_request=${encodeURIComponent(watch)}`,
        { authorization: `Bearer ${access_token}` },
        bytes,
      ),
    ).toBe(200);
    await until(() => runtime.watchers === 0 && runtime.inFlight === 0, "the change stream to close");
  });
});

describe("a mail wait whose GET carried a body", () => {
  it.each([100_000, 2_000_000])("is released when the client leaves (%i-byte body)", async (bytes) => {
    const { mail } = app.emulator.store;
    const body = Buffer.alloc(bytes, 0x7b);
    const req = request(`${url}/_mock/v1/mail?to=nobody@example.com&wait=60000`, {
      method: "GET",
      headers: { "content-type": "application/json", "content-length": String(body.length) },
    });
    req.on("error", () => undefined);
    req.end(body);
    await until(() => mail.pendingWaits === 1, "the wait to be registered");
    req.destroy();
    await until(() => mail.pendingWaits === 0, "the wait to be released");
  });
});
