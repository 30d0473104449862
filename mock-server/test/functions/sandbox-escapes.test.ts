/**
 * Function code must never reach the host: every known way out of a `node:vm` context is tried
 * here by a function, which reports what it got; each test checks it got nothing (no `process`, no
 * `require`, not the worker's `globalThis`) and that the emulator still answers. Function source
 * reaches the emulator through the control API (allowed here with `allowFunctionSource`), state
 * imports and app folders: it is untrusted code running on the host (docs/decisions/0010).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, base, bearer, call, newOpenApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
});
afterAll(() => app.close());

/**
 * Put at the top of a probing function: `reach(label, value)` reports (in `found`, which the
 * function returns) a value of another realm — its prototype chain ends in an `Object.prototype`
 * that is not the context's — and what it leads to: with whatever `Function` constructor it finds,
 * it tries to get `process`, `require` or the global object. The context's own `Function` cannot
 * compile strings, and neither can the function process's own realm (the second wall), so a leak
 * of that realm shows as "another realm" rather than as `process`.
 */
const probe = `
const found = [];
const ownObjectPrototype = Object.prototype;
const reach = (label, value) => {
  const constructors = [];
  try {
    if (value === null || (typeof value !== "object" && typeof value !== "function")) return;
    for (let o = value, depth = 0; o !== null && depth < 50; o = Object.getPrototypeOf(o), depth++) {
      if (Object.getPrototypeOf(o) === null && o !== ownObjectPrototype && Object.getOwnPropertyDescriptor(o, "isPrototypeOf")) {
        found.push(label + " -> another realm");
      }
    }
    if (typeof value === "function") constructors.push(value.constructor);
    for (let o = value, depth = 0; o !== null && depth < 6; o = Object.getPrototypeOf(o), depth++) {
      const c = Object.getOwnPropertyDescriptor(o, "constructor");
      if (c && typeof c.value === "function") constructors.push(c.value, c.value.constructor);
    }
  } catch (error) {}
  for (const F of constructors) {
    if (typeof F !== "function") continue;
    for (const body of ["return process", "return require", "return globalThis"]) {
      let got;
      try { got = F(body)(); } catch (error) { continue; }
      if (got && (typeof got.pid === "number" || typeof got.process === "object" || typeof got.resolve === "function")) {
        found.push(label + " -> " + body.slice(7));
      }
    }
  }
};
`;

async function appWith(functions: Record<string, string>, extra: Record<string, unknown> = {}) {
  const entries = Object.entries(functions).map(([name, source]) => [name, { source }]);
  const appId = await newOpenApp(app, { functions: Object.fromEntries(entries), functionTimeoutMs: 5000, ...extra });
  const { access_token } = await anonymousLogin(app, appId);
  const run = (name: string, args: unknown[] = []) =>
    call(app, "callFunction", {
      method: "POST",
      url: `${base}/app/${appId}/functions/call`,
      headers: bearer(access_token),
      payload: { name, arguments: args },
    });
  return { appId, run };
}

/** The emulator and the app's functions still work. */
async function stillAnswers(run: (name: string, args?: unknown[]) => ReturnType<typeof call>) {
  await expect
    .poll(async () => (await run("sum", [{ $numberInt: "2" }, { $numberInt: "3" }])).body, {
      timeout: 5000,
      interval: 20,
    })
    .toEqual({ $numberInt: "5" });
  expect((await call(app, "getHealth", { method: "GET", url: "/_mock/v1/health" })).response.statusCode).toBe(200);
}

/** Collects everything captured into `globalThis.seen` by earlier calls. */
const harvest = `exports = () => {
  ${probe}
  for (const [i, value] of (globalThis.seen || []).entries()) reach("seen[" + i + "]", value);
  return found;
};`;

describe("function code cannot reach the host", () => {
  it("gets no factory of the worker's realm by patching Map.prototype.set (a function that fails to compile)", async () => {
    const { run } = await appWith({
      patch: `exports = () => {
        const set = Map.prototype.set;
        try {
          Map.prototype.set = function (key, value) { (globalThis.seen = globalThis.seen || []).push(value); return set.call(this, key, value); };
        } catch (error) {}
        return Map.prototype.set === set ? "unchanged" : "patched";
      };`,
      broken: "exports = function ( {",
      harvest,
    });
    const patched = (await run("patch")).body;
    const broken = await run("broken");
    expect(broken.response.statusCode).toBe(400);
    expect(broken.body.error).toMatch(/^SyntaxError/);
    expect({ harvest: (await run("harvest")).body, patched }).toEqual({ harvest: [], patched: "unchanged" });
    await stillAnswers(run);
  });

  it("finds only the context's harmless constructors on everything it is given", async () => {
    const { run } = await appWith({
      helper: "exports = (n) => n * 2;",
      everything: `exports = async function (arg) {
        ${probe}
        const db = context.services.get("mongodb-atlas").db("t").collection("c");
        await db.insertOne({ _id: 1, n: 1 });
        const candidates = {
          this: this, arg, arguments, context, user: context.user, services: context.services, db,
          execute: context.functions.execute, executed: await context.functions.execute("helper", 1),
          pending: context.functions.execute("helper", 2), values: context.values,
          value: context.values.get("appName"), environment: context.environment, log: console.log, console,
          BSON, EJSON, objectId: new BSON.ObjectId(), long: BSON.Long.fromNumber(1), doc: await db.findOne({ _id: 1 }),
          docs: await db.find({}).toArray(), cursor: db.find({}), literal: {}, array: [], arrow: () => 1,
          global: globalThis,
        };
        const failing = [
          () => context.services.get("nope"),
          () => context.functions.execute("missing"),
          () => db.insertOne({ _id: 1 }),
          () => db.find({ $bad: 1 }).toArray(),
          () => null.x,
        ];
        for (const [i, attempt] of failing.entries()) {
          try { await attempt(); } catch (error) { candidates["error" + i] = error; }
        }
        // require() is the context's own (its modules too), which refuses the rest; the timers are the call's own.
        candidates.require = require;
        candidates.crypto = require("crypto");
        candidates.hash = require("crypto").createHash("sha256");
        candidates.random = require("crypto").randomBytes(4);
        candidates.buffer = require("buffer");
        candidates.events = require("events");
        candidates.util = require("util");
        candidates.stream = require("stream");
        candidates.timers = require("timers");
        candidates.url = require("url");
        candidates.URL = URL;
        candidates.aUrl = new URL("https://example.com/?a=1");
        candidates.params = new URL("https://example.com/?a=1").searchParams;
        candidates.paramsIterator = new URLSearchParams("a=1").entries();
        try { new URL("nope"); } catch (error) { candidates.urlError = error; }
        candidates.setTimeout = setTimeout;
        candidates.clearTimeout = clearTimeout;
        candidates.timer = setTimeout(() => {}, 100000);
        candidates.immediate = setImmediate(() => {});
        candidates.secretKey = require("crypto").createSecretKey(Buffer.from("k"));
        candidates.keyPair = require("crypto").generateKeyPairSync("ec", { namedCurve: "P-256" });
        candidates.signer = require("crypto").createSign("SHA256");
        candidates.cipher = require("crypto").createCipheriv("aes-128-gcm", Buffer.alloc(16), Buffer.alloc(12));
        candidates.derived = require("crypto").hkdfSync("sha256", "k", "s", "i", 8);
        try { require("crypto").createPrivateKey("not a key"); } catch (error) { candidates.keyError = error; }
        candidates.fs = require("fs");
        try { require("fs").readFileSync("/etc/passwd"); } catch (error) { candidates.fsError = error; }
        candidates.http = require("http");
        candidates.httpRequest = require("http").request("http://127.0.0.1:9/");
        candidates.httpRequest.on("error", () => {});
        candidates.agent = require("https").globalAgent;
        try { found.push("require gave " + typeof require("child_process")); } catch (error) { candidates.requireError = error; }
        for (const [label, value] of Object.entries(candidates)) reach(label, value);
        const classic = {
          thisConstructor: () => this.constructor.constructor("return process")(),
          literalConstructor: () => ({}).constructor.constructor("return process")(),
          argConstructor: () => arg.constructor.constructor("return process")(),
          contextConstructor: () => context.constructor.constructor("return globalThis")(),
        };
        for (const [label, attempt] of Object.entries(classic)) {
          try { const got = attempt(); if (got) found.push(label + " -> " + typeof got); } catch (error) {}
        }
        // (process is the context's own: nothing of the host's.)
        reach("process", process);
        for (const name of ["binding", "dlopen", "mainModule", "kill", "exit", "_linkedBinding"]) {
          if (process[name] !== undefined) found.push("process." + name + " is defined");
        }
        return found;
      };`,
    });
    const { response, body } = await run("everything", [{ a: 1 }]);
    expect(response.statusCode).toBe(200);
    expect(body).toEqual([]);
    await stillAnswers(run);
  });

  it("gets no host frames from Error.prepareStackTrace (structured stack frames)", async () => {
    const { run } = await appWith({
      install: `exports = () => {
        const grab = (error, frames) => { (globalThis.seen = globalThis.seen || []).push(frames); for (const f of frames) { globalThis.seen.push(f); try { globalThis.seen.push(f.getThis(), f.getFunction()); } catch (e) {} } return "grabbed"; };
        const OriginalError = Error;
        globalThis.OriginalError = OriginalError;
        try { Error.prepareStackTrace = grab; } catch (e) {}
        try { Object.defineProperty(Error, "prepareStackTrace", { value: grab, configurable: true, writable: true }); } catch (e) {}
        try { globalThis.Error = { prepareStackTrace: grab }; } catch (e) {}
        try { Object.defineProperty(globalThis, "Error", { value: { prepareStackTrace: grab }, configurable: true, writable: true }); } catch (e) {}
        return typeof new OriginalError("x").stack;
      };`,
      stacks: `void new TypeError("at the factory's top level").stack;
        try { null.x; } catch (error) { void error.stack; }
        exports = async function () {
          void new RangeError("in the function").stack;
          await null;
          void new RangeError("after an await").stack;
          const thrown = { get message() { return new TypeError("in a getter the bridge reads").stack; }, get name() { void new TypeError().stack; return "Evil"; } };
          if (arguments.length > 0) throw thrown;
          return { get value() { return new TypeError("in a getter of the result").stack; }, toJSON() { void new TypeError().stack; return { ok: 1 }; } };
        };`,
      harvest,
    });
    expect((await run("install")).response.statusCode).toBe(200);
    expect((await run("stacks")).response.statusCode).toBe(200);
    expect((await run("stacks", [1])).response.statusCode).toBe(400);
    expect((await run("harvest")).body).toEqual([]);
    await stillAnswers(run);
  });

  it("runs nothing of its own in the worker's realm: getters and proxies on results and thrown values", async () => {
    const record = `function record(self, args) {
      const seen = (globalThis.seen = globalThis.seen || []);
      seen.push(self);
      for (const a of args) seen.push(a);
      let f;
      try { f = record.caller; } catch (error) {}
      for (let depth = 0; f && depth < 20; depth++) {
        seen.push(f);
        try { f = f.caller; } catch (error) { f = null; }
      }
      try { void new Error().stack; } catch (error) {}
    }`;
    const { run } = await appWith({
      throwsGetters: `${record}
        exports = function () {
          throw {
            get name() { record(this, arguments); return "Evil"; },
            get message() { record(this, arguments); return "boom"; },
            toString() { record(this, arguments); return "Evil: boom"; },
          };
        };`,
      throwsChangingGetter: `${record}
        exports = function () {
          let reads = 0;
          throw { get message() { record(this, arguments); reads++; return reads === 1 ? "text" : { toString() { record(this, arguments); return "object"; } }; }, get name() { return reads > 0 ? {} : "Name"; } };
        };`,
      throwsProxy: `${record}
        exports = function () {
          throw new Proxy(new Error("proxied"), {
            get(target, key, receiver) { record(this, arguments); return Reflect.get(target, key); },
            has(target, key) { record(this, arguments); return key in target; },
            getPrototypeOf(target) { record(this, arguments); return Object.getPrototypeOf(target); },
          });
        };`,
      returnsProxy: `${record}
        exports = function () {
          const traps = {};
          for (const trap of ["get", "has", "ownKeys", "getOwnPropertyDescriptor", "getPrototypeOf", "apply"]) {
            traps[trap] = function (...args) { record(this, args); return Reflect[trap](...args); };
          }
          return new Proxy({ a: 1, nested: { b: 2 } }, traps);
        };`,
      returnsGetters: `${record}
        exports = function () {
          return { get a() { record(this, arguments); return 1; }, nested: { toJSON() { record(this, arguments); return { b: 2 }; } } };
        };`,
      rejectsWithGetters: `${record}
        exports = async function () {
          await null;
          throw Object.create({ get message() { record(this, arguments); return "later"; } });
        };`,
      logsGetters: `${record}
        exports = function () {
          console.log({ get a() { record(this, arguments); return 1; } }, { toJSON() { record(this, arguments); return 2; } });
          return 1;
        };`,
      harvest,
    });
    const outcomes: Record<string, number> = {};
    for (const name of [
      "throwsGetters",
      "throwsChangingGetter",
      "throwsProxy",
      "returnsProxy",
      "returnsGetters",
      "rejectsWithGetters",
      "logsGetters",
    ]) {
      outcomes[name] = (await run(name)).response.statusCode;
    }
    expect(outcomes).toEqual({
      throwsGetters: 400,
      throwsChangingGetter: 400,
      throwsProxy: 400,
      returnsProxy: 200,
      returnsGetters: 200,
      rejectsWithGetters: 400,
      logsGetters: 200,
    });
    expect((await run("throwsGetters")).body.error).toBe("Evil: boom");
    expect((await run("harvest")).body).toEqual([]);
    await stillAnswers(run);
  });

  it("walks arguments.callee.caller to nothing of the host", async () => {
    const { run } = await appWith({
      walk: `const walked = [];
        function walk(from) {
          let f;
          try { f = from.caller; } catch (error) {}
          for (let depth = 0; f && depth < 20; depth++) {
            walked.push(f);
            try { f = f.caller; } catch (error) { f = null; }
          }
        }
        walk(arguments.callee);
        exports = async function probeCallers() {
          ${probe}
          walk(probeCallers);
          walk(arguments.callee);
          await new Promise(function (resolve) { walk(arguments.callee); resolve(); });
          await null;
          walk(probeCallers);
          const result = { nested: { get value() { walk(Object.getOwnPropertyDescriptor(result.nested, "value").get); return 1; } } };
          console.log({ toJSON: function logged() { walk(logged); return 2; } });
          await context.functions.execute("echo", { toJSON: function argument() { walk(argument); return 3; } });
          for (const [i, f] of walked.entries()) reach("caller " + i, f);
          (globalThis.seen = globalThis.seen || []).push(...walked);
          return found.length > 0 ? found : result;
        };`,
      echo: "exports = (x) => x;",
      harvest,
    });
    expect((await run("walk")).body).toEqual({ nested: { value: { $numberInt: "1" } } });
    expect((await run("harvest")).body).toEqual([]);
    await stillAnswers(run);
  });

  it("captures nothing that crosses the bridge by patching built-ins", async () => {
    const { run } = await appWith({
      patch: `exports = () => {
        const seen = (globalThis.seen = globalThis.seen || []);
        // Everything this patcher needs, taken before it patches anything.
        const { apply } = Reflect;
        const { push } = Array.prototype;
        const { defineProperty, getOwnPropertyDescriptor } = Object;
        const fnToString = Function.prototype.toString;
        const { test } = RegExp.prototype;
        const native = (f) => apply(test, /native code/, [apply(fnToString, f, [])]);
        const note = (self, args) => { apply(push, seen, [self]); apply(push, seen, args); };
        const spy = () => function (...args) { note(this, args); return undefined; };
        const took = [];
        const patchMethod = (owner, ownerName, key) => {
          const before = owner[key];
          try { owner[key] = function (...args) { note(this, args); return apply(before, this, args); }; } catch (error) {}
          if (owner[key] !== before) apply(push, took, [ownerName + "." + String(key)]);
        };
        const methods = [
          [Array.prototype, "Array.prototype", ["push", "map", "join", "slice", "forEach", "reduce", "entries", Symbol.iterator]],
          [Promise.prototype, "Promise.prototype", ["then", "catch", "finally"]],
          [Promise, "Promise", ["resolve", "reject", "all"]],
          [JSON, "JSON", ["parse", "stringify"]],
          [Map.prototype, "Map.prototype", ["get", "set", "delete", "has"]],
          [Function.prototype, "Function.prototype", ["call", "apply", "bind", "toString"]],
          [Object, "Object", ["keys", "entries", "assign", "freeze", "defineProperty", "getPrototypeOf"]],
          [Reflect, "Reflect", ["apply", "get", "ownKeys"]],
          [Error, "Error", ["captureStackTrace"]],
          [Error.prototype, "Error.prototype", ["toString"]],
          [EJSON, "EJSON", ["stringify", "parse", "serialize", "deserialize"]],
          [BSON.ObjectId.prototype, "BSON.ObjectId.prototype", ["toHexString", "toJSON"]],
          [BSON.Long, "BSON.Long", ["fromString", "fromNumber"]],
        ];
        for (const [owner, ownerName, keys] of methods) for (const key of keys) patchMethod(owner, ownerName, key);
        for (const key of ["type", "text", "ok", "id", "resolve", "reject", "callId", "key", "then", "exports", "message", "name", "__proto__"]) {
          try { defineProperty(Object.prototype, key, { set: spy(), get: spy(), configurable: true }); } catch (error) {}
          try { Object.prototype.__defineSetter__(key, spy()); } catch (error) {}
          const d = getOwnPropertyDescriptor(Object.prototype, key);
          if (d && d.get && !native(d.get)) apply(push, took, ["Object.prototype." + key]);
          if (d && d.set && !native(d.set)) apply(push, took, ["Object.prototype." + key + " setter"]);
        }
        for (const name of ["JSON", "Promise", "Map", "Array", "Object", "Error", "EJSON", "BSON", "Reflect", "Function", "String"]) {
          const before = globalThis[name];
          try { globalThis[name] = { stringify: spy(), parse: spy() }; } catch (error) {}
          try { defineProperty(globalThis, name, { value: { stringify: spy() }, configurable: true, writable: true }); } catch (error) {}
          if (globalThis[name] !== before) {
            apply(push, took, ["globalThis." + name]);
            try { defineProperty(globalThis, name, { value: before, configurable: true, writable: true }); } catch (error) {}
          }
        }
        return took;
      };`,
      exercise: `exports = async (n) => {
        const db = context.services.get("mongodb-atlas").db("t").collection("c");
        await db.insertOne({ n, at: new Date(0), id: new BSON.ObjectId() });
        console.log("logged", { n });
        const docs = await db.find({ n }).toArray();
        const twice = await context.functions.execute("helper", n);
        try { await context.functions.execute("missing"); } catch (error) {}
        return { count: docs.length, twice };
      };`,
      helper: "exports = (n) => n * 2;",
      broken: "exports = function ( {",
      harvest,
    });
    expect((await run("patch")).body).toEqual([]);
    expect((await run("exercise", [{ $numberInt: "4" }])).body).toEqual({
      count: { $numberInt: "1" },
      twice: { $numberInt: "8" },
    });
    expect((await run("broken")).response.statusCode).toBe(400);
    expect((await run("harvest")).body).toEqual([]);
    await stillAnswers(run);
  });

  it("gets nothing from import() (no module, no error of the host's realm)", async () => {
    const { run } = await appWith({
      imports: `exports = async () => {
        ${probe}
        for (const specifier of ["node:fs", "node:child_process", "fs", "data:text/javascript,export default globalThis", "./x.js"]) {
          try {
            const namespace = await import(specifier);
            found.push("imported " + specifier);
            reach("namespace of " + specifier, namespace);
          } catch (error) {
            reach("import(" + specifier + ") failure", error);
          }
        }
        return found;
      };`,
    });
    expect((await run("imports")).body).toEqual([]);
    await stillAnswers(run);
  });

  it("gets nothing from WebAssembly, SharedArrayBuffer or Atomics, and a thread blocked in Atomics.wait is stopped", async () => {
    // (The probe runs under the usual time limit: a loaded machine may take a while over it.)
    const { run } = await appWith({
      wasm: `exports = async () => {
          ${probe}
          const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]);
          const tries = {
            compile: () => WebAssembly.compile(bytes),
            instantiate: () => WebAssembly.instantiate(bytes),
            module: () => new WebAssembly.Module(bytes),
            memory: () => new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true }),
            sharedBuffer: () => new SharedArrayBuffer(8),
            notify: () => Atomics.notify(new Int32Array(new SharedArrayBuffer(8)), 0),
          };
          for (const [label, attempt] of Object.entries(tries)) {
            try { reach(label, await attempt()); } catch (error) { reach(label + " failure", error); }
          }
          return found;
        };`,
    });
    expect((await run("wasm")).body).toEqual([]);
    const blocking = await appWith(
      { block: "exports = () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);" },
      { functionTimeoutMs: 300 },
    );
    const blocked = await blocking.run("block");
    expect(blocked.response.statusCode).toBe(400);
    expect(blocked.body).toMatchObject({ error_code: "ExecutionTimeLimitExceeded" });
    await stillAnswers(blocking.run);
  });

  it("gets no error of the worker's realm by overflowing the stack at the bridge's doorstep", async () => {
    const { run } = await appWith({
      helper: "exports = (n) => n;",
      overflow: `exports = async () => {
        ${probe}
        const db = context.services.get("mongodb-atlas").db("t").collection("c");
        const attempts = {
          log: () => console.log("deep"),
          logNothing: () => console.log(),
          execute: () => context.functions.execute("helper", 1),
          mongo: () => db.findOne({}),
          setGlobal: () => { globalThis.deepValue = 1; },
          defineGlobal: () => Object.defineProperty(globalThis, "deepDefined", { value: 1, configurable: true }),
          deleteGlobal: () => delete globalThis.deepValue,
          readGlobal: () => globalThis.notThere,
          ejson: () => EJSON.stringify({ a: new BSON.ObjectId() }),
        };
        const pending = [];
        for (const [label, attempt] of Object.entries(attempts)) {
          const errors = [];
          let deepest = 0;
          const dive = (n) => {
            try { dive(n + 1); } catch (error) { if (deepest === 0) deepest = n; }
            if (n > deepest - 150) {
              try {
                const r = attempt();
                if (r && typeof r.then === "function") pending.push(r.then(null, (error) => errors.push(error)));
              } catch (error) { errors.push(error); }
            }
          };
          dive(0);
          await Promise.all(pending);
          for (const error of errors) reach(label, error);
        }
        return found;
      };`,
    });
    expect((await run("overflow")).body).toEqual([]);
    await stillAnswers(run);
  });

  it("is not inspected by Node when it leaves a rejection unhandled (a custom inspect function would get the host's util.inspect)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sandbox-escape-"));
    try {
      const marker = join(dir, "written-by-a-function");
      const { run } = await appWith({
        stray: `exports = (path) => {
          const custom = {
            stack: "looks like an error",
            [Symbol.for("nodejs.util.inspect.custom")](depth, options, inspect) {
              const host = inspect.constructor("return process")();
              host.getBuiltinModule("fs").writeFileSync(path, "escaped from process " + host.pid);
              return "inspected";
            },
          };
          Promise.reject(custom);
          Promise.reject(new Proxy(new Error("proxied"), {}));
          return "returned";
        };`,
      });
      const { response, body } = await run("stray", [marker]);
      expect({ status: response.statusCode, body, written: existsSync(marker) }).toEqual({
        status: 200,
        body: "returned",
        written: false,
      });
      await stillAnswers(run);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
