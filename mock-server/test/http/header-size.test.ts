/**
 * A request's line and headers may take 64 KiB (Node's default is 16 KiB): room for an access token
 * carrying the 16 KiB of custom user data it may (~23 KB), in `Authorization` and in a change
 * stream's `baas_at`, on the server `npm start` and production run and on the tests' own.
 */
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maxRequestHeaderBytes } from "../../src/runtime/large-requests.ts";
import { startServer } from "../../src/server.ts";
import { maxTokenUserDataBytes } from "../../src/store/store.ts";
import { base, bearer, call, emailUser, newApp } from "../helpers/app.ts";
import { listening } from "../helpers/listen.ts";
import { watchPath } from "../helpers/watch.ts";

const servers: { url: string; close(): Promise<void>; app: Parameters<typeof newApp>[0] }[] = [];
beforeAll(async () => {
  const started = await startServer({ port: 0, logLevel: "silent", watchFunctions: false, passwordHashCost: 4 });
  servers.push({ url: started.url, close: () => started.close(), app: started.app });
  const own = await listening();
  servers.push({ url: own.url, close: () => own.app.close(), app: own.app });
});
afterAll(async () => {
  for (const server of servers) await server.close();
});

/** An access token of a user whose custom data is as large as a token carries. */
async function tokenWithLargestCustomData(app: Parameters<typeof newApp>[0]) {
  const appId = await newApp(app);
  const session = await emailUser(app, appId, "wide@example.com", "secret-1");
  const doc = { _id: "p", user_id: session.user_id, pad: "" };
  await call(app, "insertDocuments", {
    method: "POST",
    url: `/_mock/v1/apps/${appId}/data/notes-app/profiles`,
    payload: { documents: [{ ...doc, pad: "x".repeat(maxTokenUserDataBytes - JSON.stringify(doc).length) }] },
  });
  const { body } = await call(app, "refreshAccessToken", {
    method: "POST",
    url: `${base}/auth/session`,
    headers: bearer(session.refresh_token),
  });
  return { appId, token: body.access_token as string };
}

describe.each([0, 1])("the request headers a server takes (%s: startServer, then Fastify's own)", (which) => {
  it("take an access token with the most custom data, in Authorization and in a stream's URL", async () => {
    const { url, app } = servers[which]!;
    const { appId, token } = await tokenWithLargestCustomData(app);
    expect(token.length).toBeGreaterThan(20_000);
    const profile = await fetch(`${url}${base}/auth/profile`, { headers: bearer(token) });
    expect(profile.status).toBe(200);
    const stop = new AbortController();
    const stream = await fetch(`${url}${watchPath(appId, { database: "notes-app", collection: "notes" }, token)}`, {
      signal: stop.signal,
    });
    expect([stream.status, stream.headers.get("content-type")]).toEqual([200, "text/event-stream"]);
    stop.abort();
  });

  it(`refuse headers past ${maxRequestHeaderBytes} bytes with 431`, async () => {
    const { url } = servers[which]!;
    const response = await fetch(`${url}${base}/app/local-app/location`, {
      headers: { "x-padding": "x".repeat(maxRequestHeaderBytes) },
    });
    expect(response.status).toBe(431);
  });
});

/** Sends raw bytes on a new connection; answers what came back before the server closed it. */
function rawExchange(url: string, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => resolve(Buffer.concat(chunks).toString("latin1")));
    socket.setTimeout(10_000, () => socket.destroy(new Error("the server kept the connection open")));
  });
}

describe.each([0, 1])("a request the server cannot read (%s: startServer, then Fastify's own)", (which) => {
  // The connection is closed after the answer: one that does not say so is kept by a keep-alive
  // client or proxy (nginx's upstream connections), whose next request on it, another user's
  // maybe, then fails (nginx answers a POST 502).
  it("is answered 431 or 400 with Connection: close, and the connection closed", async () => {
    const { url } = servers[which]!;
    const oversize = await rawExchange(
      url,
      `GET ${base}/app/local-app/location HTTP/1.1\r\nHost: x\r\nX-Padding: ${"x".repeat(maxRequestHeaderBytes)}\r\n\r\n`,
    );
    expect(oversize).toMatch(/^HTTP\/1\.1 431 /);
    expect(oversize).toMatch(/\r\nConnection: close\r\n/i);
    const malformed = await rawExchange(url, "GET / HTTP/1.1\r\nHost x\r\n\r\n");
    expect(malformed).toMatch(/^HTTP\/1\.1 400 /);
    expect(malformed).toMatch(/\r\nConnection: close\r\n/i);
  });
});
