/**
 * Large request bodies in flight at once (runtime/large-requests.ts, decision 0024): each holds a
 * place for its declared size until its response closes, at most 64 MiB on an instance and two at
 * once from one client address; past that the request is refused with 429 before its body is read.
 * The requests here declare 18 MB and send a few bytes of it, from several loopback addresses.
 */
import { type ClientRequest, request as httpRequest, type IncomingMessage } from "node:http";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, expect, it } from "vitest";
import { largeRequestLimits } from "../../src/runtime/large-requests.ts";
import { expectTextContract, sendChecked, signIn } from "../helpers/fetch-contract.ts";
import { listening } from "../helpers/listen.ts";
import { until } from "../helpers/until.ts";

let app: FastifyInstance;
let url: string;
let token: string;
beforeAll(async () => {
  ({ app, url } = await listening());
  token = await signIn(url).anonymous("local-app");
});
afterAll(() => app.close());

const declared = 18 * 1024 * 1024;
const open: ClientRequest[] = [];
afterAll(() => {
  for (const request of open) request.destroy();
});

const callPath = "/api/client/v2.0/app/local-app/functions/call";

/** A request declaring an 18 MB body, of which only the start is sent; its reply if one comes. */
function largeCall(
  fromAddress: string,
  path = callPath,
): {
  request: ClientRequest;
  reply: Promise<{ response: IncomingMessage; body: string }>;
} {
  const { port } = new URL(url);
  const request = httpRequest({
    host: "127.0.0.1",
    port,
    localAddress: fromAddress,
    method: "POST",
    path,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": declared },
  });
  open.push(request);
  const reply = new Promise<{ response: IncomingMessage; body: string }>((resolve, reject) => {
    request.on("response", (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        body += chunk;
      });
      response.on("end", () => resolve({ response, body }));
    });
    request.on("error", reject);
  });
  reply.catch(() => undefined);
  request.write('{"name":"sum","arguments":[');
  return { request, reply };
}

async function expectRefused(reply: Promise<{ response: IncomingMessage; body: string }>, words: RegExp) {
  const { response, body } = await reply;
  expect(response.statusCode).toBe(429);
  expect(response.headers["retry-after"]).toBe("1");
  const parsed = expectTextContract(
    "callFunction",
    new Response(body, { status: 429, headers: { "content-type": String(response.headers["content-type"]) } }),
    body,
  ) as { error: string; error_code: string };
  expect(parsed.error_code).toBe("TooManyRequests");
  expect(parsed.error).toMatch(words);
}

const inFlight = () => app.emulator.largeRequests.bytes;

it("lets one address send two large bodies at once, and every address share the instance's bytes", async () => {
  expect(largeRequestLimits.bytes).toBeLessThan(4 * declared);
  const first = largeCall("127.0.0.2");
  largeCall("127.0.0.2");
  await until(() => inFlight() === 2 * declared, "two large requests to be admitted");
  // A third from the same address waits for nothing: it is refused before its body is read.
  await expectRefused(largeCall("127.0.0.2").reply, /one client address may send 2 bodies/);
  largeCall("127.0.0.3");
  await until(() => inFlight() === 3 * declared, "a third address's request to be admitted");
  // The instance holds 54 of its 64 MiB: another 18 MB from a new address does not fit.
  await expectRefused(largeCall("127.0.0.4").reply, /as many large bodies as it takes at once/);
  // Small requests go on meanwhile.
  const small = await sendChecked(url, "callFunction", "POST", "/api/client/v2.0/app/local-app/functions/call", {
    token,
    body: { name: "sum", arguments: [1, 2] },
  });
  expect(small.status).toBe(200);
  // A request that ends (here: its client goes away) gives its place back.
  first.request.destroy();
  await until(() => inFlight() === 2 * declared, "the abandoned request's place to be given back");
  largeCall("127.0.0.4");
  await until(() => inFlight() === 3 * declared, "the new address's request to be admitted");
});

it("counts a body of undeclared length (chunked) as the largest allowed, until it is answered", async () => {
  for (const request of open) request.destroy();
  await until(() => inFlight() === 0, "every place to be given back");
  const { port } = new URL(url);
  const chunked = httpRequest({
    host: "127.0.0.1",
    port,
    localAddress: "127.0.0.5",
    method: "POST",
    path: "/api/client/v2.0/app/local-app/functions/call",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "transfer-encoding": "chunked" },
  });
  open.push(chunked);
  chunked.on("error", () => undefined);
  chunked.write('{"name":"sum",');
  await until(() => inFlight() === 18 * 1024 * 1024, "the chunked request to hold the largest size");
  chunked.end('"arguments":[2,3]}');
  await until(() => inFlight() === 0, "the chunked request's place to be given back once answered");
});

it("holds EmailJS requests to the same places, refused with EmailJS's words", async () => {
  for (const request of open) request.destroy();
  await until(() => inFlight() === 0, "every place to be given back");
  largeCall("127.0.0.6", "/api/v1.0/email/send");
  largeCall("127.0.0.6", "/api/v1.0/email/send");
  await until(() => inFlight() === 2 * declared, "two large sends to be admitted");
  const { response, body } = await largeCall("127.0.0.6", "/api/v1.0/email/send").reply;
  expect(response.statusCode).toBe(429);
  expect(body).toBe("Too Many Requests");
  const headers = { "content-type": String(response.headers["content-type"]) };
  expectTextContract("sendEmail", new Response(body, { status: 429, headers }), body);
});
