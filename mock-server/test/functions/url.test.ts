/**
 * WHATWG URLs in functions (docs/decisions/0038): `URL` and `URLSearchParams`, globals as in Node
 * 10 on, and Node's `url` module whole — the reference's own example function builds its request
 * with `require("url").URL`. What each answers is what this process's Node answers.
 */
import * as nodeUrl from "node:url";
import { describe, expect, it } from "vitest";
import { functionsRunner } from "../helpers/app.ts";

const functions: Record<string, string> = {
  // The reference's example (functions/examples/complex-function.js), up to its request.
  weather: `exports = async function GetWeather(city) {
    const { URL } = require("url");
    const weatherUrl = new URL("https://example.com");
    weatherUrl.pathname = "/weather";
    weatherUrl.search = \`?location="\${city}"\`;
    return weatherUrl.toString();
  };`,
  parts: `exports = (input, base) => {
    const u = base == null ? new URL(input) : new URL(input, base);
    const fields = ["href", "origin", "protocol", "username", "password", "host", "hostname", "port", "pathname", "search", "hash"];
    return Object.fromEntries(fields.map((f) => [f, u[f]]).concat([["json", u.toJSON()], ["query", [...u.searchParams]]]));
  };`,
  params: `exports = () => {
    const p = new URLSearchParams("b=2&a=1&a=3&c=%20x+y");
    p.append("d", "é&=");
    p.delete("c");
    p.sort();
    const u = new URL("https://example.com/p?x=1");
    u.searchParams.set("x", "two words");
    u.searchParams.append("y", "1");
    return {
      text: p.toString(),
      all: p.getAll("a"),
      has: [p.has("a"), p.has("c")],
      entries: [...p.entries()],
      fromObject: new URLSearchParams({ q: "a b", n: 1 }).toString(),
      fromPairs: new URLSearchParams([["k", "v"], ["k", "w"]]).toString(),
      linked: u.href,
      size: [...new URLSearchParams("a=1&b=2").keys()].length,
    };
  };`,
  same: `exports = () => {
    const url = require("url");
    return [url.URL === URL, url.URLSearchParams === URLSearchParams, require("node:url") === url, typeof globalThis.URL];
  };`,
  invalid: `exports = (input) => {
    try { new URL(input); return "parsed"; } catch (error) {
      return { type: error instanceof TypeError, code: error.code, input: error.input, message: error.message };
    }
  };`,
  legacy: `exports = () => {
    const url = require("url");
    const parsed = url.parse("https://user:pw@example.com:8443/a/b?x=1#h", true);
    return { host: parsed.host, query: parsed.query, resolved: url.resolve("https://example.com/a/b", "../c"), formatted: url.format({ protocol: "https", host: "example.com", pathname: "/p", query: { q: "1" } }) };
  };`,
  format: `exports = (href, options) => {
    try { return require("url").format(new URL(href), options); } catch (error) { return error.message; }
  };`,
  domains: `exports = (domains) => {
    const url = require("url");
    return domains.map((d) => [url.domainToASCII(d), url.domainToUnicode(d)]);
  };`,
  files: `exports = (path, href) => {
    const url = require("url");
    const fail = (f) => { try { return f(); } catch (error) { return [error.code, error.message]; } };
    return { url: url.pathToFileURL(path).href, path: fail(() => url.fileURLToPath(href)) };
  };`,
  replace: `exports = () => {
    try { globalThis.URL = null; } catch (e) {}
    try { URL.prototype.toString = () => "mine"; } catch (e) {}
    return [typeof URL, new URL("https://example.com").toString()];
  };`,
};

const run = functionsRunner(functions);

/** A value as a function's reply gives it: strings and arrays as they are, numbers as Extended JSON. */
const asReplied = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

describe("URLs in a function", () => {
  it("runs the reference's example: require('url').URL, its pathname and search set", async () => {
    const expected = new URL("https://example.com");
    expected.pathname = "/weather";
    expected.search = '?location="Paris"';
    expect(await run("weather", "Paris")).toBe(expected.toString());
  });

  it("parses as Node does: relative references, IDNA, ports, credentials, percent-encoding", async () => {
    for (const [input, base] of [
      ["https://user:pw@exämple.com:8443/a b/../c?x=1 2&y=é#frag"],
      ["../d?q#h", "http://example.com/a/b/c"],
      ["HTTP://EXAMPLE.COM:80/./x"],
      ["http://[::1]:3000/"],
      ["http://0x7f.1/"],
      ["mailto:ada@example.com"],
      ["file:///tmp/a%20b"],
    ] as const) {
      const u = base === undefined ? new URL(input) : new URL(input, base);
      const fields = ["href", "origin", "protocol", "username", "password", "host", "hostname", "port", "pathname"];
      const expected = {
        ...Object.fromEntries([...fields, "search", "hash"].map((f) => [f, u[f as keyof URL]])),
        json: u.toJSON(),
        query: [...u.searchParams],
      };
      expect(await run("parts", input, base), input).toEqual(asReplied(expected));
    }
  });

  it("reads and writes query strings with URLSearchParams, linked to their URL", async () => {
    const p = new URLSearchParams("b=2&a=1&a=3&c=%20x+y");
    p.append("d", "é&=");
    p.delete("c");
    p.sort();
    const u = new URL("https://example.com/p?x=1");
    u.searchParams.set("x", "two words");
    u.searchParams.append("y", "1");
    expect(await run("params")).toEqual({
      text: p.toString(),
      all: p.getAll("a"),
      has: [true, false],
      entries: [...p.entries()],
      fromObject: new URLSearchParams({ q: "a b", n: "1" }).toString(),
      fromPairs: "k=v&k=w",
      linked: u.href,
      size: { $numberInt: "2" },
    });
  });

  it("offers the same classes as globals and in the url module", async () => {
    expect(await run("same")).toEqual([true, true, true, "function"]);
  });

  it("refuses an invalid URL with Node's TypeError and code", async () => {
    expect(await run("invalid", "not a url")).toEqual({
      type: true,
      code: "ERR_INVALID_URL",
      input: "not a url",
      message: expect.stringMatching(/^Invalid URL/),
    });
    expect(await run("invalid", "https://example.com")).toBe("parsed");
  });

  it("keeps the url module's legacy API", async () => {
    const parsed = nodeUrl.parse("https://user:pw@example.com:8443/a/b?x=1#h", true);
    expect(await run("legacy")).toEqual({
      host: parsed.host,
      query: { ...parsed.query },
      resolved: nodeUrl.resolve("https://example.com/a/b", "../c"),
      formatted: nodeUrl.format({ protocol: "https", host: "example.com", pathname: "/p", query: { q: "1" } }),
    });
  });

  it("formats a URL with Node's options", async () => {
    const href = "https://user:pw@xn--exmple-cua.com/a?x=1#f";
    for (const options of [
      undefined,
      { fragment: false },
      { auth: false, search: false },
      { unicode: true },
      { unicode: true, auth: false, fragment: false, search: false },
    ]) {
      expect(await run("format", href, options), JSON.stringify(options)).toBe(nodeUrl.format(new URL(href), options));
    }
    expect(await run("format", "file:///a/b", {})).toBe(nodeUrl.format(new URL("file:///a/b"), {}));
    expect(await run("format", "http://[::1]:8080/x", { unicode: true })).toBe(
      nodeUrl.format(new URL("http://[::1]:8080/x"), { unicode: true }),
    );
    expect(await run("format", href, [])).toMatch(/^TypeError|must be of type object/);
  });

  it("converts domains to ASCII and back as Node does, '' for what is not a domain", async () => {
    const domains = [
      "español.com",
      "xn--espaol-zwa.com",
      "EXAMPLE.com",
      "xn--iñvalid.com",
      "日本語.jp",
      "",
      "xn--a.com",
      "a..b",
    ];
    expect(await run("domains", domains)).toEqual(
      domains.map((d) => [nodeUrl.domainToASCII(d), nodeUrl.domainToUnicode(d)]),
    );
  });

  it("converts file paths and file URLs as Node does on Linux, with its errors", async () => {
    const cases: [string, string][] = [
      ["/a b/%c#d?e\\f\nx", "file:///a%20b/c"],
      ["/dir/", "file://localhost/etc/hosts"],
      ["/x", "file://host/a"],
      ["/x", "file:///a%2Fb"],
      ["/x", "http://example.com/a"],
    ];
    for (const [path, href] of cases) {
      let expectedPath: unknown;
      try {
        expectedPath = nodeUrl.fileURLToPath(href);
      } catch (error) {
        const { code, message } = error as NodeJS.ErrnoException;
        expectedPath = [code, message];
      }
      expect(await run("files", path, href), `${path} ${href}`).toEqual({
        url: nodeUrl.pathToFileURL(path).href,
        path: expectedPath,
      });
    }
  });

  it("lets no call replace the classes other calls use", async () => {
    expect(await run("replace")).toEqual(["function", "https://example.com/"]);
    expect(await run("replace")).toEqual(["function", "https://example.com/"]);
  });
});
