/**
 * Node's http and https clients in functions (docs/decisions/0038): App Services has all of those
 * modules but their servers, and names axios 1.3.6 as the way to send HTTP requests besides
 * context.http. Requests go out from the emulator as context.http's do (the hosts the server
 * allows, within a time limit); here against a local target, through Node's API itself, and
 * through the unchanged axios 1.3.6, node-fetch 2 and form-data packages from an app folder's
 * functions/node_modules.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, functionResult, testApp } from "../helpers/app.ts";
import { appFolderWithPackages } from "../helpers/app-folder.ts";

let target: Server;
let origin: string;
let closedOrigin: string;
/** The requests the target received, in order. */
const received: { method: string; url: string; headers: IncomingMessage["headers"]; body: string }[] = [];

let app: FastifyInstance;
let token: string;
const appId = "http-module-abcde";
const run = (name: string, ...args: unknown[]) => functionResult(app, appId, token, name, args);
// SendGrid's package brings a newer axios (1.12 on: it requires http2 as it loads): an app of its own.
const mailAppId = "sendgrid-abcde";
let mailToken: string;

const mailFunctions: Record<string, string> = {
  send: `exports = async (origin) => {
    const mail = require("@sendgrid/mail");
    mail.setApiKey("SG.test-key");
    mail.client.setDefaultRequest("baseUrl", origin);
    const [response] = await mail.send({ to: "ann@example.com", from: "app@example.com", subject: "Hi", text: "Hello" });
    return response.statusCode;
  };`,
  network: `exports = () => {
    const net = require("net");
    const refusals = [];
    for (const attempt of [() => net.connect(80, "example.com"), () => require("tls").connect(443, "example.com"), () => require("http2").connect("https://example.com"), () => new net.Socket().connect(80)]) {
      try { attempt(); refusals.push("none"); } catch (error) { refusals.push(error.code); }
    }
    return {
      ip: [net.isIP("127.0.0.1"), net.isIP("::1"), net.isIP("example.com"), net.isIPv4("1.2.3.4"), net.isIPv6("1.2.3.4")],
      status: require("http2").constants.HTTP2_HEADER_STATUS,
      refusals,
    };
  };`,
};

const functions: Record<string, string> = {
  node: `exports = (origin) => new Promise((resolve, reject) => {
    const http = require("http");
    const url = new URL(origin + "/echo?x=1");
    const req = http.request({ hostname: url.hostname, port: url.port, path: url.pathname + url.search, method: "POST",
      headers: { "Content-Type": "text/plain", "X-Two": ["a", "b"] }, auth: "ann:secret" }, (res) => {
      const chunks = [];
      res.on("data", (chunk) => chunks.push(chunk));
      res.on("end", () => resolve({
        statusCode: res.statusCode, statusMessage: res.statusMessage, complete: res.complete,
        type: res.headers["content-type"], cookies: res.headers["set-cookie"], custom: res.headers["x-custom"],
        raw: res.rawHeaders.length > 0, body: JSON.parse(Buffer.concat(chunks).toString()),
        headerNames: req.getHeaderNames().sort(), sent: req.headersSent,
      }));
    });
    req.on("error", reject);
    req.write("hello ");
    req.end("world");
  });`,
  get: `exports = (origin) => new Promise((resolve, reject) => {
    require("http").get(origin + "/gzip", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => { text += chunk; });
      res.on("end", () => resolve({ text, encoding: res.headers["content-encoding"] ?? null, length: res.headers["content-length"] }));
    }).on("error", reject);
  });`,
  redirect: `exports = (origin) => new Promise((resolve, reject) => {
    require("http").get(origin + "/moved", (res) => { res.resume(); resolve([res.statusCode, res.headers.location]); }).on("error", reject);
  });`,
  errors: `exports = async (origin, closedOrigin) => {
    const http = require("http");
    const failure = (url) => new Promise((resolve) => {
      http.get(url, () => resolve("answered")).on("error", (error) => resolve([error.code ?? null, error.message.length > 0]));
    });
    const timedOut = await new Promise((resolve) => {
      const req = http.get(origin + "/hang");
      req.setTimeout(100, () => { req.destroy(); resolve("timeout"); });
      req.on("error", () => {});
    });
    const refusals = [];
    for (const attempt of [
      () => require("https").request(origin + "/echo"),
      () => http.createServer(),
      () => http.request({ host: "127.0.0.1", headers: { "Bad Name": "x" } }),
    ]) {
      try { attempt(); refusals.push("none"); } catch (error) { refusals.push(error.code || error.message); }
    }
    return {
      closed: await failure(closedOrigin + "/"),
      notAllowed: await failure("http://example.com/"),
      timedOut,
      refusals,
      statusCodes: [http.STATUS_CODES[404], http.METHODS.includes("PATCH")],
    };
  };`,
  crowd: `exports = (origin, n) => new Promise((resolve) => {
    // Requests that wait for an answer that does not come, and the error of each refused one; then
    // all of them given up (their places free again).
    const refused = [];
    const made = [];
    for (let i = 0; i < n; i++) {
      made.push(require("http").get(origin + "/hang").on("error", (error) => {
        refused.push(error.message);
        if (refused.length === n - 64) {
          for (const each of made) each.destroy();
          resolve(refused);
        }
      }));
    }
  });`,
  axios: `exports = async (origin) => {
    const axios = require("axios");
    const got = await axios.get(origin + "/json", { params: { q: "a b" } });
    const posted = await axios.post(origin + "/echo", { n: 1 }, { headers: { "X-Custom": "yes" } });
    const followed = await axios.get(origin + "/moved");
    let missing;
    try { await axios.get(origin + "/missing"); } catch (error) { missing = [error.name, error.response.status, error.response.data]; }
    let timeout;
    try { await axios.get(origin + "/hang", { timeout: 100 }); } catch (error) { timeout = error.code; }
    const gzipped = await axios.get(origin + "/gzip");
    const FormData = require("form-data");
    const form = new FormData();
    form.append("name", "Ann");
    const multipart = await axios.post(origin + "/echo", form, { headers: form.getHeaders() });
    return {
      got: [got.status, got.data, got.headers["content-type"]],
      posted: [posted.data.method, JSON.parse(posted.data.body), posted.data.headers["x-custom"], posted.data.headers["content-type"]],
      followed: [followed.status, followed.data],
      missing,
      timeout,
      gzipped: gzipped.data,
      multipart: [multipart.data.headers["content-type"].startsWith("multipart/form-data; boundary="), multipart.data.body.includes('name="name"')],
    };
  };`,
  fetch: `exports = async (origin) => {
    const fetch = require("node-fetch");
    const response = await fetch(origin + "/json");
    const posted = await fetch(origin + "/echo", { method: "PUT", body: "plain", headers: { "Content-Type": "text/plain" } });
    return [response.ok, response.status, await response.json(), (await posted.json()).body];
  };`,
};

beforeAll(async () => {
  target = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      received.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      const path = (req.url ?? "").split("?")[0];
      if (path === "/hang") return;
      if (path === "/moved") {
        res.writeHead(302, { location: "/json" }).end();
        return;
      }
      if (path === "/missing") {
        res.writeHead(404, { "content-type": "text/plain" }).end("no such thing");
        return;
      }
      if (path === "/gzip") {
        const zipped = gzipSync(Buffer.from("squeezed text ".repeat(20)));
        res.writeHead(200, {
          "content-type": "text/plain",
          "content-encoding": "gzip",
          "content-length": zipped.length,
        });
        res.end(zipped);
        return;
      }
      if (path === "/v3/mail/send") {
        res.writeHead(202).end();
        return;
      }
      if (path === "/json") {
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ hello: "world", url: req.url }));
        return;
      }
      res.setHeader("set-cookie", ["a=1", "b=2"]);
      res.setHeader("x-custom", "yes");
      res.writeHead(201, "Made It", { "content-type": "application/json" });
      res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body }));
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  // A port nothing listens on: one a server had, closed.
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  closedOrigin = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
  await new Promise((resolve) => closed.close(resolve));
  app = await testApp({
    appDirs: [
      appFolderWithPackages(appId, functions, ["axios", "node-fetch"]),
      appFolderWithPackages(mailAppId, mailFunctions, ["@sendgrid/mail"]),
    ],
  });
  token = (await anonymousLogin(app, appId)).access_token as string;
  mailToken = (await anonymousLogin(app, mailAppId)).access_token as string;
});
afterAll(async () => {
  await app?.close();
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
});

describe("Node's http module in a function", () => {
  it("sends a request written in pieces and reads its response as Node's client does", async () => {
    const result = await run("node", origin);
    expect(result).toMatchObject({
      statusCode: { $numberInt: "201" },
      statusMessage: "Made It",
      complete: true,
      type: "application/json",
      cookies: ["a=1", "b=2"],
      custom: "yes",
      raw: true,
      headerNames: ["authorization", "content-type", "host", "x-two"],
      sent: true,
    });
    expect(result.body).toMatchObject({
      method: "POST",
      url: "/echo?x=1",
      body: "hello world",
      headers: { "content-type": "text/plain", "x-two": "a, b", authorization: `Basic ${btoa("ann:secret")}` },
    });
  });

  it("gives a compressed response decoded, without its Content-Encoding, and does not follow redirects itself", async () => {
    expect(await run("get", origin)).toEqual({
      text: "squeezed text ".repeat(20),
      encoding: null,
      length: String("squeezed text ".repeat(20).length),
    });
    expect(await run("redirect", origin)).toEqual([{ $numberInt: "302" }, "/json"]);
  });

  it("fails as Node's client does: refused connections, hosts not allowed, timeouts, bad input, no servers", async () => {
    expect(await run("errors", origin, closedOrigin)).toEqual({
      closed: ["ECONNREFUSED", true],
      notAllowed: [null, true],
      timedOut: "timeout",
      refusals: ["ERR_INVALID_PROTOCOL", expect.stringMatching(/servers are not supported/), "ERR_INVALID_HTTP_TOKEN"],
      statusCodes: ["Not Found", true],
    });
  });

  it("lets a process's modules have at most 64 requests at once, and frees a destroyed one's place", async () => {
    // (Twice: the first crowd's requests were destroyed, and those the emulator made were given up.)
    for (let round = 0; round < 2; round++) {
      expect(await run("crowd", origin, 70)).toEqual(Array(6).fill("at most 64 requests of modules at once"));
    }
  });
});

describe("HTTP packages in a function, unchanged", () => {
  it("runs axios 1.3.6 (the version App Services names): JSON, errors, redirects, timeouts, gzip, form-data", async () => {
    expect(await run("axios", origin)).toEqual({
      got: [{ $numberInt: "200" }, { hello: "world", url: "/json?q=a+b" }, "application/json"],
      posted: ["POST", { n: { $numberInt: "1" } }, "yes", "application/json"],
      followed: [{ $numberInt: "200" }, { hello: "world", url: "/json" }],
      missing: ["AxiosError", { $numberInt: "404" }, "no such thing"],
      timeout: "ECONNABORTED",
      gzipped: "squeezed text ".repeat(20),
      multipart: [true, true],
    });
  });

  it("sends mail through @sendgrid/mail (axios 1.12 on), pointed at a local target", async () => {
    const before = received.length;
    expect(await functionResult(app, mailAppId, mailToken, "send", [origin])).toEqual({ $numberInt: "202" });
    const request = received.slice(before).find((one) => one.url === "/v3/mail/send")!;
    expect(request.method).toBe("POST");
    expect(request.headers.authorization).toBe("Bearer SG.test-key");
    expect(JSON.parse(request.body)).toMatchObject({
      from: { email: "app@example.com" },
      subject: "Hi",
      personalizations: [{ to: [{ email: "ann@example.com" }] }],
    });
  });

  it("has net, tls and http2 as packages load them, with no connection of their own", async () => {
    expect(await functionResult(app, mailAppId, mailToken, "network", [])).toEqual({
      ip: [4, 6, 0, true, false].map((v) => (typeof v === "number" ? { $numberInt: String(v) } : v)),
      status: ":status",
      refusals: ["ERR_NOT_SUPPORTED", "ERR_NOT_SUPPORTED", "ERR_NOT_SUPPORTED", "ERR_NOT_SUPPORTED"],
    });
  });

  it("runs node-fetch 2", async () => {
    expect(await run("fetch", origin)).toEqual([
      true,
      { $numberInt: "200" },
      { hello: "world", url: "/json" },
      "plain",
    ]);
  });
});
