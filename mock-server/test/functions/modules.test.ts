/**
 * Modules functions require (docs/decisions/0038): the packages of their app's functions/node_modules
 * (main, exports, subpaths, JSON, relative requires, cycles, scoped names) and the built-in modules
 * offered as packages (events, util, path, querystring, string_decoder, punycode, stream), loaded
 * in the functions' context; nothing outside them is found or read.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, functionResult, newApp, testApp } from "../helpers/app.ts";
import { scratchDir } from "../helpers/scratch.ts";

let app: FastifyInstance;
let token: string;
const appId = "modules-abcde";

/** An exported app whose functions/node_modules holds a few packages written here. */
function exportedApp(): string {
  const dir = scratchDir("modules-");
  const write = (path: string, text: string) => {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  const json = (value: unknown) => JSON.stringify(value);
  write("realm_config.json", json({ app_id: appId }));
  write("auth/providers.json", json({ "anon-user": { name: "anon-user", type: "anon-user", disabled: false } }));
  const functions: Record<string, string> = {
    packages: `exports = () => {
      const greet = require("greeter");
      const { shout } = require("greeter/loud");
      const data = require("greeter/data.json");
      const scoped = require("@acme/tools");
      const cycle = require("cyclic");
      // Subpath patterns of "exports", their conditions in the package's own order (as openai's).
      const shims = [require("shims/auto/runtime"), require("shims/auto/special"), require("shims/deep/a/b")];
      return { greeting: greet("Ada"), loud: shout("hi"), version: data.version, scoped: scoped.double(21), cycle, shims };
    };`,
    builtins: `exports = async () => {
      const { EventEmitter } = require("events");
      const util = require("util");
      const path = require("path");
      const querystring = require("querystring");
      const { StringDecoder } = require("string_decoder");
      const { Readable } = require("stream");
      const heard = [];
      const emitter = new EventEmitter();
      emitter.on("ping", (n) => heard.push(n));
      emitter.emit("ping", 1);
      const chunks = [];
      await new Promise((resolve) => Readable.from(["a", "b"]).on("data", (c) => chunks.push(c)).on("end", resolve));
      return {
        heard,
        formatted: util.format("%s is %d", "x", 42),
        joined: path.join("/a", "b", "../c"),
        query: querystring.stringify({ a: 1, b: "two" }),
        decoded: new StringDecoder("utf8").write(Buffer.from("é")),
        punycode: require("punycode").toASCII("mañana.com"),
        chunks,
        uuid: require("uuid-ish")().length,
        gunzipped: require("zlib").gunzipSync(require("zlib").gzipSync(Buffer.from("squeeze"))).toString(),
        asserted: (() => { try { require("assert").strictEqual(1, 2); } catch (error) { return error.code; } })(),
        os: typeof require("os").platform(),
        url: require("url").parse("https://example.com:8443/a/b?x=1#h").pathname,
      };
    };`,
    missing: `exports = () => { try { require("left-pad"); } catch (error) { return [error.code, error.message]; } };`,
    escape: `exports = () => {
      const out = [];
      for (const request of ["../../realm_config.json", "/etc/passwd", "./secret.js", "greeter/../../../realm_config.json"]) {
        try { require(request); out.push("read " + request); } catch (error) { out.push(error.code || error.message); }
      }
      return out;
    };`,
    esm: `exports = () => { try { require("modern"); } catch (error) { return error.message; } };`,
    core: `exports = () => { try { require("child_process"); } catch (error) { return error.message; } };`,
  };
  write("functions/config.json", json(Object.keys(functions).map((name) => ({ name }))));
  for (const [name, source] of Object.entries(functions)) write(`functions/${name}.js`, source);
  write("functions/secret.js", "module.exports = 'the functions folder itself is not a module';");
  const modules = "functions/node_modules";
  write(`${modules}/greeter/package.json`, json({ name: "greeter", main: "lib/index.js", version: "1.2.3" }));
  write(
    `${modules}/greeter/lib/index.js`,
    `const { suffix } = require("./suffix"); module.exports = (name) => "Hello, " + name + suffix;`,
  );
  write(`${modules}/greeter/lib/suffix.js`, `exports.suffix = "!";`);
  write(`${modules}/greeter/loud.js`, `exports.shout = (s) => s.toUpperCase();`);
  write(`${modules}/greeter/data.json`, json({ version: "1.2.3" }));
  write(
    `${modules}/@acme/tools/package.json`,
    json({ name: "@acme/tools", exports: { ".": { import: "./esm.mjs", require: "./cjs.js" } } }),
  );
  write(`${modules}/@acme/tools/cjs.js`, `exports.double = (n) => n * 2;`);
  write(
    `${modules}/shims/package.json`,
    json({
      name: "shims",
      exports: {
        "./auto/*": {
          browser: "./auto/*-browser.js",
          node: { import: "./auto/*-node.mjs", require: "./auto/*-node.js" },
          require: "./auto/*.js",
        },
        "./auto/special": "./special.js",
        "./deep/*": "./deep/*.js",
      },
    }),
  );
  write(`${modules}/shims/auto/runtime-node.js`, `module.exports = "node runtime";`);
  write(`${modules}/shims/auto/runtime.js`, `module.exports = "generic runtime";`);
  write(`${modules}/shims/special.js`, `module.exports = "special";`);
  write(`${modules}/shims/deep/a/b.js`, `module.exports = "deep";`);
  write(
    `${modules}/cyclic/index.js`,
    `exports.a = 1; const b = require("./b"); exports.b = b.b; exports.seen = b.sawA;`,
  );
  write(`${modules}/cyclic/b.js`, `const a = require("./index"); exports.b = 2; exports.sawA = a.a;`);
  write(
    `${modules}/uuid-ish/index.js`,
    `const crypto = require("crypto"); module.exports = () => crypto.randomBytes(16).toString("hex");`,
  );
  write(`${modules}/modern/package.json`, json({ name: "modern", main: "index.js", type: "module" }));
  write(`${modules}/modern/index.js`, `export const x = 1;`);
  return dir;
}

beforeAll(async () => {
  app = await testApp({ appDirs: [exportedApp()], allowFunctionSource: true });
  token = (await anonymousLogin(app, appId)).access_token;
});
afterAll(() => app.close());

const run = (name: string) => functionResult(app, appId, token, name, []);

describe("require() of modules", () => {
  it("loads the app's packages: main, subpaths, JSON, exports' conditions and patterns, scopes, cycles", async () => {
    expect(await run("packages")).toEqual({
      greeting: "Hello, Ada!",
      loud: "HI",
      version: "1.2.3",
      scoped: { $numberInt: "42" },
      cycle: { a: { $numberInt: "1" }, b: { $numberInt: "2" }, seen: { $numberInt: "1" } },
      shims: ["node runtime", "special", "deep"],
    });
  });

  it("gives the built-in modules offered as packages (events, util, path, querystring, string_decoder, punycode, stream, zlib, assert, os, url)", async () => {
    expect(await run("builtins")).toEqual({
      heard: [{ $numberInt: "1" }],
      formatted: "x is 42",
      joined: "/a/c",
      query: "a=1&b=two",
      decoded: "é",
      punycode: "xn--maana-pta.com",
      chunks: ["a", "b"],
      uuid: { $numberInt: "32" },
      gunzipped: "squeeze",
      asserted: "ERR_ASSERTION",
      os: "string",
      url: "/a/b",
    });
  });

  it("finds nothing outside the app's node_modules and the built-ins' packages", async () => {
    expect(await run("missing")).toEqual(["MODULE_NOT_FOUND", "Cannot find module 'left-pad'"]);
    expect(await run("escape")).toEqual([
      "MODULE_NOT_FOUND",
      "MODULE_NOT_FOUND",
      "MODULE_NOT_FOUND",
      "MODULE_NOT_FOUND",
    ]);
    expect(await run("core")).toMatch(/^require\("child_process"\) is not supported by this server/);
  });

  it("says an ES module cannot be required", async () => {
    expect(await run("esm")).toBe("Unexpected token 'export'");
  });
});

describe("an app without node_modules", () => {
  it("still has the built-in modules, and finds no package", async () => {
    const other = await newApp(app, {
      functions: {
        format: { source: `exports = () => require("util").format("%d items", 7);` },
        lodash: { source: `exports = () => { try { require("greeter"); } catch (error) { return error.message; } };` },
      },
    });
    const user = (await anonymousLogin(app, other)).access_token;
    expect(await functionResult(app, other, user, "format", [])).toBe("7 items");
    expect(await functionResult(app, other, user, "lodash", [])).toBe("Cannot find module 'greeter'");
  });
});
