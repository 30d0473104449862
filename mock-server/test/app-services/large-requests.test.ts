/**
 * Request bodies of 16 KiB or more in flight at once (runtime/large-requests.ts, decision 0024):
 * each takes a place before its body is read — from one client address at most two at once of
 * 1 MiB or more ("large"), sixteen of 16 KiB to 1 MiB — and is charged the body bytes it has
 * sent until its response closes: at most 64 MiB on an instance. Past the
 * address's places, or when its declared size does not fit beside what the others have sent, the
 * request is refused with 429 before its body is read; a body whose bytes would pass the budget is
 * refused as it arrives; a body that sends nothing for the idle time loses its connection. Most
 * requests here declare 2 MiB and send a few bytes of it, from several loopback addresses, to an
 * instance whose budget is 3 MiB.
 */
import { type ClientRequest, request as httpRequest, type IncomingMessage } from "node:http";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startServer } from "../../src/server.ts";
import { browser, mailOf, newAccount } from "../helpers/emailjs.ts";
import { expectTextContract, sendChecked, signIn } from "../helpers/fetch-contract.ts";
import { listening } from "../helpers/listen.ts";
import { until } from "../helpers/until.ts";

let app: FastifyInstance;
let url: string;
let token: string;
/** This instance's budget: room for 3 MiB of bodies; a body idle for a second loses its connection. */
const budget = { bytes: 3 * 1024 * 1024, idleMs: 1_000 };
beforeAll(async () => {
  ({ app, url } = await listening({ budgets: { bodies: budget.bytes }, largeRequestIdleMs: budget.idleMs }));
  token = await signIn(url).anonymous("local-app");
});
afterAll(() => app.close());

/** What most requests here declare: large (1 MiB or more); two of them are more than the budget. */
const declared = 2 * 1024 * 1024;
const open: ClientRequest[] = [];
afterAll(() => {
  for (const request of open) request.destroy();
});

const callPath = "/api/client/v2.0/app/local-app/functions/call";
/** What each request sends of its body at first. */
const start = '{"name":"sum","arguments":[';

/** A request declaring a body of `size` bytes, of which only the start is sent; its reply if one comes. */
function largeCall(
  fromAddress: string,
  path = callPath,
  size = declared,
): {
  request: ClientRequest;
  reply: Promise<{ response: IncomingMessage; body: string }>;
  closed: Promise<void>;
} {
  const { port } = new URL(url);
  const request = httpRequest({
    host: "127.0.0.1",
    port,
    localAddress: fromAddress,
    method: "POST",
    path,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": size },
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
  const closed = new Promise<void>((resolve) => request.on("close", () => resolve()));
  request.write(start);
  return { request, reply, closed };
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

/** A function call with a chunked body (its size undeclared), of which only the start is sent. */
function chunkedCall(at: string, signedIn: string, fromAddress: string) {
  const { port } = new URL(at);
  const request = httpRequest({
    host: "127.0.0.1",
    port,
    localAddress: fromAddress,
    method: "POST",
    path: callPath,
    headers: {
      authorization: `Bearer ${signedIn}`,
      "content-type": "application/json",
      "transfer-encoding": "chunked",
    },
  });
  open.push(request);
  const reply = new Promise<IncomingMessage>((resolve, reject) => {
    request.on("response", resolve);
    request.on("error", reject);
  });
  reply.catch(() => undefined);
  request.write('{"name":"sum",');
  return { request, reply };
}

const inFlight = () => app.emulator.largeRequests.bytes;

async function closeAll() {
  for (const request of open.splice(0)) request.destroy();
  await until(() => inFlight() === 0, "every place to be given back");
}

it("lets one address send two large bodies at once; declaring bodies and sending nothing holds no bytes", async () => {
  const first = largeCall("127.0.0.2");
  largeCall("127.0.0.2");
  // Admitted, and charged only what they sent: 4 MiB declared on a 3 MiB budget.
  await until(() => inFlight() === 2 * start.length, "two large requests to be admitted and their starts read");
  // A third from the same address waits for nothing: it is refused before its body is read.
  await expectRefused(largeCall("127.0.0.2").reply, /one client address may send 2 bodies/);
  // Another address's request is admitted while the first two send nothing.
  largeCall("127.0.0.3");
  await until(() => inFlight() === 3 * start.length, "the other address's request to be admitted");
  // Small requests go on meanwhile.
  const small = await sendChecked(url, "callFunction", "POST", callPath, {
    token,
    body: { name: "sum", arguments: [1, 2] },
  });
  expect(small.status).toBe(200);
  // A request that ends (here: its client goes away) gives its place back.
  first.request.destroy();
  await until(() => inFlight() === 2 * start.length, "the abandoned request's bytes to be given back");
  largeCall("127.0.0.2");
  await until(() => inFlight() === 3 * start.length, "the address's second place to be taken again");
});

it("holds bodies of 16 KiB to 1 MiB too: sixteen at once from an address, charged, cut when idle", async () => {
  await closeAll();
  // Before, such bodies were neither counted nor timed: 400 connections from two addresses, each
  // sending just under 1 MiB and then nothing, held 393 MB of the process for Node's five minutes.
  const sizable = 64 * 1024;
  const held = Array.from({ length: 16 }, () => largeCall("127.0.0.20", callPath, sizable));
  await until(() => inFlight() === 16 * start.length, "sixteen bodies of 64 KiB to be admitted and charged");
  await expectRefused(
    largeCall("127.0.0.20", callPath, sizable).reply,
    /one client address may send 16 bodies of 16 KiB to 1 MiB at once/,
  );
  // Its large places are its own: a body of 1 MiB or more from that address is still admitted.
  largeCall("127.0.0.20");
  await until(() => inFlight() === 17 * start.length, "the address's large body to be admitted beside them");
  // A body under 16 KiB takes no place and is not charged.
  const small = largeCall("127.0.0.20", callPath, 16 * 1024 - 1);
  small.request.write("1,");
  // Each sent nothing after its start: every one of them loses its connection after the idle time.
  await Promise.all(held.map((h) => h.closed));
  await until(() => inFlight() === 0, "the idle bodies' bytes to be given back");
  expect(app.emulator.largeRequests.places).toBe(0);
  expect(small.request.destroyed).toBe(false);
});

it("bounds a whole request's arrival on every server: five minutes, its headers one", async () => {
  // (Node's own bounds; Fastify turns the first off on the servers it makes, as the tests' are.)
  const started = await startServer({ port: 0, logLevel: "silent", watchFunctions: false });
  try {
    for (const server of [app.server, started.app.server]) {
      expect(server.requestTimeout).toBe(300_000);
      expect(server.headersTimeout).toBe(60_000);
    }
  } finally {
    await started.close();
  }
});

it("refuses a large request before reading it when its declared size does not fit beside what others sent", async () => {
  await closeAll();
  const sender = largeCall("127.0.0.4", callPath, declared + start.length + 1);
  sender.request.write("1,".repeat(declared / 2));
  await until(() => inFlight() === declared + start.length, "the sender's bytes to be read");
  await expectRefused(largeCall("127.0.0.5", callPath, declared).reply, /as many large bodies as it takes at once/);
  // (A bad call: its last argument is missing. Answered all the same.)
  sender.request.end("]");
  expect((await sender.reply).response.statusCode).toBe(400);
  await until(() => inFlight() === 0, "the answered request's bytes to be given back");
});

it("refuses a body as it arrives when its bytes would take the instance past its budget", async () => {
  await closeAll();
  // Both fit when admitted (nothing sent yet); together they are 4 MiB of a 3 MiB budget.
  const holding = largeCall("127.0.0.6");
  const late = largeCall("127.0.0.7");
  await until(() => inFlight() === 2 * start.length, "both requests to be admitted");
  holding.request.write("1,".repeat(declared / 2 - 1000));
  await until(() => inFlight() === declared - 2000 + 2 * start.length, "the first one's bytes to be read");
  late.request.end("1,".repeat((declared - start.length) / 2));
  await expectRefused(late.reply, /as many large bodies as it takes at once/);
  // The refused body's bytes are given back; the first one's are still charged.
  await until(() => inFlight() === declared - 2000 + start.length, "the refused body's bytes to be given back");
  expect(holding.request.destroyed).toBe(false);
});

it("closes the connection of a large body that sends nothing for the idle time, and gives its place back", async () => {
  await closeAll();
  const stalled = largeCall("127.0.0.8");
  const sending = largeCall("127.0.0.9");
  await until(() => inFlight() === 2 * start.length, "both requests to be admitted");
  // One sends a little more a few times an idle time; the other sends nothing more.
  const keepSending = setInterval(() => sending.request.write("1,"), budget.idleMs / 4);
  try {
    await stalled.closed;
    expect(sending.request.destroyed).toBe(false);
    await until(() => inFlight() < 2 * start.length, "the stalled request's bytes to be given back");
    // Its address's place is back too: it may send two large bodies at once again.
    largeCall("127.0.0.8");
    largeCall("127.0.0.8");
    await until(() => inFlight() >= 3 * start.length, "the address's two places to be taken again");
  } finally {
    clearInterval(keepSending);
  }
});

it("admits a body of undeclared length (chunked) as the largest allowed, and charges what it sends", async () => {
  await closeAll();
  // Here the largest body (18 MB) is more than the whole budget: refused before it is read.
  const refused = await chunkedCall(url, token, "127.0.0.10").reply;
  expect(refused.statusCode).toBe(429);
  // With the default budget, admitted; charged what it sends; its place given back once answered.
  const other = await listening();
  try {
    const request = chunkedCall(other.url, await signIn(other.url).anonymous("local-app"), "127.0.0.10");
    await until(() => other.app.emulator.largeRequests.bytes === '{"name":"sum",'.length, "the first bytes to be read");
    request.request.end('"arguments":[2,3]}');
    expect((await request.reply).statusCode).toBe(200);
    await until(() => other.app.emulator.largeRequests.bytes === 0, "the place to be given back once answered");
  } finally {
    await other.app.close();
  }
});

it("holds EmailJS requests to the same places, refused with EmailJS's words", async () => {
  await closeAll();
  largeCall("127.0.0.6", "/api/v1.0/email/send");
  largeCall("127.0.0.6", "/api/v1.0/email/send");
  await until(() => inFlight() === 2 * start.length, "two large sends to be admitted");
  const { response, body } = await largeCall("127.0.0.6", "/api/v1.0/email/send").reply;
  expect(response.statusCode).toBe(429);
  expect(body).toBe("Too Many Requests");
  const headers = { "content-type": String(response.headers["content-type"]) };
  expectTextContract("sendEmail", new Response(body, { status: 429, headers }), body);
});

it("charges a large multipart form (EmailJS sendForm, whose parser reads the request itself) and delivers it", async () => {
  await closeAll();
  const { publicKey } = await newAccount(app);
  const form = new FormData();
  form.append("user_name", "Bob");
  form.append("resume", new Blob([new Uint8Array(1536 * 1024)], { type: "application/pdf" }), "cv.pdf");
  form.append("service_id", "local_service");
  form.append("template_id", "contact_form");
  form.append("user_id", publicKey);
  const response = await fetch(`${url}/api/v1.0/email/send-form`, { method: "POST", headers: browser, body: form });
  expect(response.status).toBe(200);
  expect(await response.text()).toBe("OK");
  const [mail] = await mailOf(app, publicKey);
  expect(mail?.attachments).toEqual([
    { field: "resume", filename: "cv.pdf", contentType: "application/pdf", size: 1536 * 1024 },
  ]);
  await until(() => inFlight() === 0, "the form's place to be given back");
});

/** A multipart form declaring `declared` bytes, of whose file `bytes` are sent (more with `send`). */
function multipartUpload(fromAddress: string, bytes: number) {
  const { port } = new URL(url);
  const boundary = "----large";
  const request = httpRequest({
    host: "127.0.0.1",
    port,
    localAddress: fromAddress,
    method: "POST",
    path: "/api/v1.0/email/send-form",
    headers: { ...browser, "content-type": `multipart/form-data; boundary=${boundary}`, "content-length": declared },
  });
  open.push(request);
  request.on("error", () => undefined);
  const closed = new Promise<void>((resolve) => request.on("close", () => resolve()));
  request.write(`--${boundary}\r\nContent-Disposition: form-data; name="resume"; filename="cv.pdf"\r\n\r\n`);
  request.write(Buffer.alloc(bytes));
  return { request, closed, send: (more: number) => request.write(Buffer.alloc(more)) };
}

it("counts a multipart body from its socket, and closes it when it stalls", async () => {
  await closeAll();
  const upload = multipartUpload("127.0.0.12", 1024 * 1024);
  // (What came in with the headers is not counted.)
  await until(() => inFlight() >= 768 * 1024, "the form's bytes to be counted from its socket");
  await upload.closed;
  await until(() => inFlight() === 0, "the stalled form's bytes to be given back");
});

it("closes the newest multipart bodies whose bytes take the instance past its budget", async () => {
  await closeAll();
  // Both admitted while they have sent little; then each sends 1.6 MiB of a 3 MiB budget.
  const older = multipartUpload("127.0.0.13", 0);
  const newer = multipartUpload("127.0.0.14", 0);
  await until(() => app.emulator.largeRequests.places === 2, "both forms to be admitted");
  older.send(1600 * 1024);
  await until(() => inFlight() >= 1400 * 1024, "the first form's bytes to be counted");
  newer.send(1600 * 1024);
  await newer.closed;
  expect(older.request.destroyed).toBe(false);
  await until(() => inFlight() <= budget.bytes, "the closed form's bytes to be given back");
});

it("answers a body declared past the largest allowed 413 before reading it, never 429: it could never be taken", async () => {
  for (const path of [callPath, "/api/v1.0/email/send"]) {
    const { reply, request } = largeCall("127.0.0.16", path, 70_000_000);
    const { response } = await reply;
    expect(response.statusCode, path).toBe(413);
    request.destroy();
  }
});

it("charges nothing for bytes a body still sends after its request was answered (413 past the size limit)", async () => {
  const other = await listening();
  try {
    const signedIn = await signIn(other.url).anonymous("local-app");
    const { request, reply } = chunkedCall(other.url, signedIn, "127.0.0.15");
    const status = reply.then((response) => response.statusCode);
    // Past the 18 MB limit, in pieces; the answer (413) comes while the rest is still being sent.
    const piece = Buffer.alloc(1024 * 1024, 0x20);
    for (let i = 0; i < 19; i++) request.write(piece);
    expect(await status).toBe(413);
    for (let i = 0; i < 4; i++) request.write(piece);
    await new Promise<void>((resolve) => request.write(piece, () => resolve()));
    await until(() => other.app.emulator.largeRequests.places === 0, "the answered request's place to be given back");
    expect(other.app.emulator.largeRequests.bytes).toBe(0);
    request.destroy();
  } finally {
    await other.app.close();
  }
});
