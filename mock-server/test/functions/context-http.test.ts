/**
 * `context.http` of App Services functions: requests go out from the emulator's process (never
 * the function's), to the hosts `--function-http-hosts` allows (loopback only in the harness),
 * within the call's time limit and a response size cap; the answer is the service's response
 * document, its body a BSON Binary whose `text()` gives the text. A status of 4xx or 5xx is an
 * answer, not an error; a request that cannot be made throws in the function.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OutboundHttp, outboundHosts, publicAddress } from "../../src/functions/outbound-http.ts";
import { anonymousLogin, callAppFunction, newApp, testApp } from "../helpers/app.ts";
import { until } from "../helpers/until.ts";

let target: Server;
let origin: string;
/** The requests the target received, in order. */
const received: { method: string; url: string; headers: IncomingMessage["headers"]; body: string }[] = [];
/** Requests of `/hang` that arrived, and those whose connection has closed (the emulator gave up on them). */
let hangsArrived = 0;
let hangsClosed = 0;

let app: FastifyInstance;
let appId: string;
let token: string;

/** The app's functions, each made of its source by name. */
const sources: Record<string, string> = {};
sources.response = `exports = async (url) => {
        const response = await context.http.get({ url, headers: { "X-Test": ["one", "two"], Accept: "text/plain" } });
        return {
          status: response.status,
          statusCode: response.statusCode,
          contentLength: response.contentLength,
          headers: response.headers,
          cookies: response.cookies,
          binary: response.body instanceof BSON.Binary,
          text: response.body.text(),
        };
      };`;
sources.methods = `exports = async (url) => {
        const json = await context.http.post({ url, body: { n: 1, when: new Date(0) }, encodeBodyAsJSON: true });
        const text = await context.http.put({ url, body: "plain words", headers: { "Content-Type": ["text/plain"] } });
        await context.http.patch({ url, body: new BSON.Binary(new Uint8Array([104, 105])) });
        await context.http.delete({ url });
        const head = await context.http.head({ url });
        await context.http.post({ url, form: { name: "Ann", age: 30 } });
        // (With the header the reference tells a form to carry.)
        await context.http.post({ url, form: { name: "Bo" }, headers: { "Content-Type": ["multipart/form-data"] } });
        return [JSON.parse(json.body.text()).body, JSON.parse(text.body.text()).body, head.statusCode];
      };`;
sources.parts = `exports = (host) => context.http.get({
        scheme: "http", host, path: "/echo", query: { tag: ["a", "b"], q: ["x y"] },
        cookies: { session: "abc", theme: "dark" }, username: "ann", password: "secret",
      });`;
sources.statuses = `exports = async (origin) => {
        const missing = await context.http.get({ url: origin + "/missing" });
        const moved = await context.http.get({ url: origin + "/moved" });
        const followed = await context.http.get({ url: origin + "/moved", followRedirects: true });
        return [missing.statusCode, missing.body.text(), moved.statusCode, moved.headers.Location, followed.statusCode];
      };`;
sources.refusals = `exports = async (origin) => {
        const tries = [
          () => context.http.get({ url: "http://example.com/" }),
          () => context.http.get({ url: origin + "/moved?to=" + encodeURIComponent("http://example.com/"), followRedirects: true }),
          () => context.http.get({ url: "ftp://127.0.0.1/" }),
          () => context.http.get({}),
          () => context.http.post({ url: origin + "/echo", body: { n: 1 } }),
          () => context.http.get({ url: origin + "/echo", digestAuth: true, username: "a", password: "b" }),
        ];
        const out = [];
        for (const attempt of tries) {
          try { await attempt(); out.push("sent"); } catch (error) { out.push(error.message); }
        }
        return out;
      };`;
sources.big = `exports = async (url) => { try { await context.http.get({ url }); return "read"; } catch (error) { return error.message; } };`;
sources.texts = `exports = async (origin, hexes) => {
  const texts = [];
  for (const hex of hexes) texts.push((await context.http.get({ url: origin + "/bytes?hex=" + hex })).body.text());
  return texts;
};`;
sources.hang = `exports = (url) => context.http.get({ url });`;

/** Calls the app's function `name` with these arguments: the status and body of the answer. */
async function probe(name: string, ...args: unknown[]) {
  const { response, body } = await callAppFunction(app, appId, token, name, args);
  return { status: response.statusCode, body };
}

beforeAll(async () => {
  target = createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => (body += chunk));
    request.on("end", () => {
      received.push({ method: request.method!, url: request.url!, headers: request.headers, body });
      const url = new URL(request.url!, "http://target");
      if (url.pathname === "/echo") {
        response.setHeader("content-type", "application/json");
        response.setHeader("set-cookie", ["a=1; Path=/", "b=two"]);
        response.setHeader("x-many", ["one", "two"]);
        response.end(JSON.stringify({ method: request.method, query: url.search, body }));
      } else if (url.pathname === "/missing") {
        response.statusCode = 404;
        response.end("no such thing");
      } else if (url.pathname === "/moved") {
        response.statusCode = 302;
        response.setHeader("location", url.searchParams.get("to") ?? "/echo");
        response.end();
      } else if (url.pathname === "/big") {
        response.setHeader("content-type", "application/octet-stream");
        const chunk = Buffer.alloc(1024 * 1024, 120);
        let left = 17;
        const next = () => {
          while (left > 0) {
            left--;
            if (!response.write(chunk)) return void response.once("drain", next);
          }
          response.end();
        };
        next();
      } else if (url.pathname === "/sized") {
        const size = Number(url.searchParams.get("n"));
        response.setHeader("content-length", size);
        response.end(Buffer.alloc(size, 98));
      } else if (url.pathname === "/bytes") {
        response.end(Buffer.from(url.searchParams.get("hex") ?? "", "hex"));
      } else if (url.pathname === "/hangs") {
        response.end(String(hangsArrived));
      } else if (url.pathname === "/hang") {
        hangsArrived++;
        response.on("close", () => hangsClosed++);
      } else {
        response.end("ok");
      }
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  app = await testApp({ allowFunctionSource: true });
  appId = await newApp(app, {
    functionTimeoutMs: 1500,
    functions: Object.fromEntries(Object.entries(sources).map(([name, source]) => [name, { source }])),
  });
  token = (await anonymousLogin(app, appId)).access_token;
});
afterAll(async () => {
  await app.close();
  target.closeAllConnections();
  await new Promise((resolve) => target.close(resolve));
});

describe("context.http", () => {
  it("sends a GET and answers the service's response document, its body a Binary with text()", async () => {
    const { status, body } = await probe("response", `${origin}/echo?x=1`);
    expect(status).toBe(200);
    const text = JSON.stringify({ method: "GET", query: "?x=1", body: "" });
    expect(body).toEqual({
      status: "200 OK",
      statusCode: { $numberInt: "200" },
      contentLength: { $numberInt: String(text.length) },
      headers: expect.objectContaining({
        "Content-Type": ["application/json"],
        "Set-Cookie": ["a=1; Path=/", "b=two"],
        "X-Many": ["one, two"],
      }),
      cookies: { a: "1", b: "two" },
      binary: true,
      text,
    });
    const sent = received.at(-1)!;
    expect(sent.headers["x-test"]).toBe("one, two");
    expect(sent.headers.accept).toBe("text/plain");
  });

  it("posts a document as Extended JSON, a string or a Binary as it is, a form as multipart; sends each method", async () => {
    const { body } = await probe("methods", `${origin}/echo`);
    expect(body).toEqual([
      JSON.stringify({ n: 1, when: { $date: "1970-01-01T00:00:00Z" } }),
      "plain words",
      { $numberInt: "200" },
    ]);
    expect(received.slice(-7).map((request) => request.method)).toEqual([
      "POST",
      "PUT",
      "PATCH",
      "DELETE",
      "HEAD",
      "POST",
      "POST",
    ]);
    expect(received.at(-7)!.headers["content-type"]).toBe("application/json");
    expect(received.at(-5)!.body).toBe("hi");
    // A form goes as multipart/form-data, one part a field, its boundary named (a type given
    // without one is the type fetch gives it, which names it).
    const form = received.at(-2)!;
    expect(form.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/);
    expect(form.body).toMatch(/name="name"\r\n\r\nAnn\r\n/);
    expect(form.body).toMatch(/name="age"\r\n\r\n30\r\n/);
    const typed = received.at(-1)!;
    const boundary = /^multipart\/form-data; boundary=(.+)$/.exec(String(typed.headers["content-type"]))?.[1];
    expect(typed.body).toContain(`--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nBo\r\n`);
  });

  it("reads a body's text as UTF-8, as TextDecoder does", async () => {
    const samples = [
      ...fc.sample(fc.uint8Array({ maxLength: 12 }), 40),
      ...fc.sample(fc.string({ unit: "binary", maxLength: 6 }), 20).map((text) => new TextEncoder().encode(text)),
      Uint8Array.from([0x68, 0xc3, 0xa9, 0xe2, 0x9c, 0x93, 0xf0, 0x9f, 0x98, 0x80, 0xff, 0xe2, 0x82, 0x41]),
      Uint8Array.from([0xed, 0xa0, 0x80, 0xf4, 0x90, 0x80, 0x80, 0xc0, 0xaf, 0xe0, 0x80, 0xf0, 0x9f, 0x98]),
    ];
    const hexes = samples.map((bytes) => Buffer.from(bytes).toString("hex"));
    const { body } = await probe("texts", origin, hexes);
    expect(body).toEqual(samples.map((bytes) => new TextDecoder().decode(bytes)));
  });

  it("builds the URL from its parts, with query values, cookies and basic authentication", async () => {
    const { host } = new URL(origin);
    await probe("parts", host);
    const sent = received.at(-1)!;
    expect(sent.url).toBe("/echo?tag=a&tag=b&q=x+y");
    expect(sent.headers.cookie).toBe("session=abc; theme=dark");
    expect(sent.headers.authorization).toBe(`Basic ${Buffer.from("ann:secret").toString("base64")}`);
  });

  it("answers a 4xx or 5xx as a response, and follows redirects only when asked", async () => {
    const { body } = await probe("statuses", origin);
    expect(body).toEqual([
      { $numberInt: "404" },
      "no such thing",
      { $numberInt: "302" },
      ["/echo"],
      { $numberInt: "200" },
    ]);
  });

  it("refuses hosts it does not allow, redirects to them included, before sending anything", async () => {
    const before = received.length;
    const { body } = await probe("refusals", origin);
    expect(body).toEqual([
      "context.http: requests to 'example.com' are not allowed here (--function-http-hosts)",
      "context.http: requests to 'example.com' are not allowed here (--function-http-hosts)",
      "context.http: the URL's scheme must be http or https, not 'ftp'",
      "context.http: a url (or a host) is required",
      "context.http: a document body needs encodeBodyAsJSON: true (or give the body as a string)",
      "context.http: digestAuth is not supported by this server",
    ]);
    // Only the redirect itself reached the target.
    expect(received.slice(before).map((request) => request.url)).toEqual([
      `/moved?to=${encodeURIComponent("http://example.com/")}`,
    ]);
  });

  it("throws when a response passes 16 MB, and gives up on a request when the call's time runs out", async () => {
    const big = await probe("big", `${origin}/big`);
    expect(big.body).toBe("context.http: the response body is larger than 16 MiB");
    const hung = await probe("hang", `${origin}/hang`);
    expect(hung.status).toBe(400);
    expect(hung.body).toMatchObject({
      error_code: "ExecutionTimeLimitExceeded",
      error: "execution time limit exceeded",
    });
    await until(() => hangsClosed === 1, "the hung request given up");
  });

  it("gives up a request the call did not wait for when the call ends, not at its time limit", async () => {
    const longer = await newApp(app, {
      functionTimeoutMs: 60_000,
      functions: {
        // Returns once the request it does not wait for has reached the server.
        leave: {
          source: `exports = async (origin, seen) => {
            context.http.get({ url: origin + "/hang" });
            while ((await context.http.get({ url: origin + "/hangs" })).body.text() === seen) {}
            return "left";
          };`,
        },
      },
    });
    const user = (await anonymousLogin(app, longer)).access_token;
    const before = hangsClosed;
    const { body } = await callAppFunction(app, longer, user, "leave", [origin, String(hangsArrived)]);
    expect(body).toBe("left");
    await until(() => hangsClosed === before + 1, "the request the call left behind given up", { timeoutMs: 10_000 });
  });
});

describe("the responses functions read at once", () => {
  it("share a budget: a response that would pass it throws, and its bytes are given back", async () => {
    const http = new OutboundHttp(["127.0.0.1"], 3 * 1024 * 1024);
    const deadline = Date.now() + 10_000;
    const small = await http.send("get", { url: `${origin}/sized?n=1000` }, deadline);
    expect(small.contentLength).toBe(1000);
    // /big sends 17 MiB: past the budget after 3 MiB, as it would be with other responses held.
    await expect(http.send("get", { url: `${origin}/big` }, deadline)).rejects.toThrow(
      "context.http: the server is reading too many responses for functions at once; try again later",
    );
    const again = await http.send("get", { url: `${origin}/sized?n=${2 * 1024 * 1024}` }, deadline);
    expect(again.contentLength).toBe(2 * 1024 * 1024);
  });
});

describe("the hosts functions may reach", () => {
  it("are loopback in the harness and any in production, unless given; a leading dot takes subdomains", () => {
    const harness = new OutboundHttp(outboundHosts(null, false));
    expect(["localhost", "127.0.0.1", "[::1]", "app.localhost"].map((h) => harness.allows(h))).toEqual([
      true,
      true,
      true,
      true,
    ]);
    // Any loopback address, as the loopback names are.
    expect(["127.0.0.2", "127.1.2.3", "[::ffff:127.0.0.1]"].every((h) => harness.allows(h))).toBe(true);
    expect(["example.com", "10.0.0.1", "0.0.0.0", "[::ffff:10.0.0.1]"].some((h) => harness.allows(h))).toBe(false);
    expect(new OutboundHttp(outboundHosts(null, true)).allows("api.stripe.com")).toBe(true);
    const given = new OutboundHttp(outboundHosts([".example.com", "10.0.0.1"], true));
    expect(["example.com", "api.example.com", "API.Example.com", "10.0.0.1"].every((h) => given.allows(h))).toBe(true);
    expect(["badexample.com", "example.com.evil", "localhost"].some((h) => given.allows(h))).toBe(false);
  });
});

describe("addresses behind `*`", () => {
  const port = () => new URL(origin).port;
  const deadline = () => Date.now() + 10_000;

  it("are public ones only: loopback, private, link-local, shared and special addresses are not", () => {
    for (const address of ["8.8.8.8", "1.1.1.1", "2001:4860:4860::8888", "2a00:1450:4001:80b::200e"])
      expect(publicAddress(address), address).toBe(true);
    for (const address of [
      "127.0.0.1",
      "127.1.2.3",
      "10.0.0.1",
      "172.16.5.4",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "255.255.255.255",
      "224.0.0.1",
      "192.0.2.1",
      "::1",
      "::",
      "::ffff:127.0.0.1",
      "::ffff:10.0.0.1",
      "fd00:ec2::254",
      "fe80::1",
      "2002:7f00:1::",
      "64:ff9b::7f00:1",
      "not an address",
    ])
      expect(publicAddress(address), address).toBe(false);
  });

  it("refuse an address given in the URL that is not public, before connecting", async () => {
    const anyHost = new OutboundHttp(outboundHosts(null, true));
    const before = received.length;
    for (const [host, kind] of [
      ["127.0.0.1", "loopback"],
      ["0.0.0.0", "unspecified"],
      ["[::1]", "loopback"],
      ["[::ffff:127.0.0.1]", "loopback"],
      ["169.254.169.254", "link-local"],
      ["10.0.0.1", "private"],
    ]) {
      const url = `http://${host}:${port()}/echo`;
      // (As the URL writes it: [::ffff:127.0.0.1] is ::ffff:7f00:1.)
      const named = new URL(url).hostname.replace(/^\[(.*)\]$/, "$1");
      await expect(anyHost.send("get", { url }, deadline())).rejects.toThrow(
        `context.http: requests to '${named}' are not allowed here: it is a ${kind} address (name it in --function-http-hosts to allow it)`,
      );
    }
    expect(received.length).toBe(before);
  });

  it("refuse a name that resolves to an address that is not public, also at a redirect; one named in the list is allowed", async () => {
    const anyHost = new OutboundHttp(outboundHosts(["*", "127.0.0.1"], true));
    const before = received.length;
    await expect(anyHost.send("get", { url: `http://localhost:${port()}/echo` }, deadline())).rejects.toThrow(
      /^context\.http: requests to 'localhost' are not allowed here: it is at a loopback address \((127\.0\.0\.1|::1)\) \(name it in --function-http-hosts to allow it\)$/,
    );
    expect(received.length).toBe(before);
    const to = encodeURIComponent(`http://localhost:${port()}/echo`);
    await expect(
      anyHost.send("get", { url: `${origin}/moved?to=${to}`, followRedirects: true }, deadline()),
    ).rejects.toThrow(/requests to 'localhost' are not allowed here: it is at a loopback address/);
    expect(received.length).toBe(before + 1);

    const named = new OutboundHttp(outboundHosts(["*", "localhost"], true));
    const answer = await named.send("get", { url: `http://localhost:${port()}/echo` }, deadline());
    expect(answer.statusCode).toBe(200);
  });
});
