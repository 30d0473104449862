/**
 * `context.request` in functions, as App Services documents it: the client's address, its
 * headers (canonical names, each a list of values), the query string without `secret`
 * parameters, the referrer and user agent when sent. A function it calls with
 * `context.functions.execute` sees the same request; so does one that runs as system for a
 * client. `%%request` in rules and `can_evaluate` read the same facts.
 */
import { connect } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, base, bearer, call, newApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
let appId: string;
let token: string;

const functions = {
  whatRequest: { source: "exports = () => context.request;" },
  nested: { source: "exports = () => context.functions.execute('whatRequest');" },
  // Reached without its name: `context` indexed.
  indexed: { source: "exports = () => context[['req', 'uest'].join('')].remoteIPAddress;" },
  asSystem: { source: "exports = () => context.request;", runAsSystem: true },
  byHeader: {
    source: "exports = () => 'let in';",
    canEvaluate: { "%%request.rawQueryString": "a=1&b=two" },
  },
};

beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
  appId = await newApp(app, { functions });
  token = (await anonymousLogin(app, appId)).access_token;
});
afterAll(() => app.close());

const callWith = (name: string, query = "", headers: Record<string, string | string[]> = {}) =>
  call(app, "callFunction", {
    method: "POST",
    url: `${base}/app/${appId}/functions/call${query}`,
    headers: { ...bearer(token), "user-agent": "Test/1.0", ...headers },
    payload: { name, arguments: [] },
    remoteAddress: "203.0.113.9",
  });

describe("context.request", () => {
  it("holds the client's address, headers, query string without secret, user agent and referrer", async () => {
    const { body } = await callWith("whatRequest", "?a=1&secret=hush&b=two&secret=again", {
      referer: "https://notes.example/list",
      "x-many": ["one", "two"],
    });
    expect(body).toMatchObject({
      remoteIPAddress: "203.0.113.9",
      rawQueryString: "a=1&b=two",
      httpReferrer: "https://notes.example/list",
      httpUserAgent: "Test/1.0",
      requestHeaders: {
        "User-Agent": ["Test/1.0"],
        Referer: ["https://notes.example/list"],
        "X-Many": ["one", "two"],
        Authorization: [`Bearer ${token}`],
        "Content-Type": ["application/json"],
      },
    });
    expect(Object.keys(body.requestHeaders).every((name) => /^[A-Z0-9][^A-Z]*(-[A-Z0-9][^A-Z]*)*$/.test(name))).toBe(
      true,
    );
  });

  it("holds a header named __proto__ as any other, over a real connection", async () => {
    const url = await app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = new URL(url);
    const payload = JSON.stringify({ name: "whatRequest", arguments: [] });
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), "127.0.0.1", () => {
        socket.write(
          `POST ${base}/app/${appId}/functions/call HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
            `Authorization: Bearer ${token}\r\nContent-Type: application/json\r\n__proto__: polluted?\r\n` +
            `Content-Length: ${Buffer.byteLength(payload)}\r\nConnection: close\r\n\r\n${payload}`,
        );
      });
      let text = "";
      socket.setEncoding("utf8");
      socket.on("data", (chunk: string) => (text += chunk));
      socket.on("end", () => resolve(text));
      socket.on("error", reject);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 200 /);
    const body = JSON.parse(reply.slice(reply.indexOf("\r\n\r\n") + 4));
    expect(Object.getOwnPropertyDescriptor(body.requestHeaders, "__proto__")?.value).toEqual(["polluted?"]);
  });

  it("leaves out a referrer and user agent the request did not give (none, or empty)", async () => {
    const { body } = await call(app, "callFunction", {
      method: "POST",
      url: `${base}/app/${appId}/functions/call`,
      // (The injected request would say it is lightMyRequest.)
      headers: { ...bearer(token), "user-agent": "" },
      payload: { name: "whatRequest", arguments: [] },
    });
    expect(body).not.toHaveProperty("httpReferrer");
    expect(body).not.toHaveProperty("httpUserAgent");
    expect(body.rawQueryString).toBe("");
  });

  it("is there for a function that reaches it without naming it", async () => {
    expect((await callWith("indexed")).body).toBe("203.0.113.9");
  });

  it("is the client's in a function it calls, and in one that runs as system", async () => {
    for (const name of ["nested", "asSystem"]) {
      const { body } = await callWith(name, "?n=1");
      expect(body, name).toMatchObject({ remoteIPAddress: "203.0.113.9", rawQueryString: "n=1" });
    }
  });

  it("is what %%request reads: the query string without its secret", async () => {
    expect((await callWith("byHeader", "?a=1&secret=s&b=two")).body).toBe("let in");
    expect((await callWith("byHeader", "?a=1")).body).toMatchObject({ error_code: "FunctionExecutionError" });
  });
});
