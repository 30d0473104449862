/** Server functions: App Services' context, errors, the time limit, isolation, and reloading. */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { slicedFrom } from "../../src/http/json-body.ts";
import {
  anonymousLogin,
  base,
  bearer,
  call,
  emailUser,
  mongoAction,
  newApp,
  openData,
  testApp,
} from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  // The tests define functions through the control API (function source runs on the host: decision 0010).
  app = await testApp({ allowFunctionSource: true });
});
afterAll(() => app.close());

async function callFn(appId: string, token: string, name: string, args: unknown[] = []) {
  return call(app, "callFunction", {
    method: "POST",
    url: `${base}/app/${appId}/functions/call`,
    headers: bearer(token),
    payload: { name, arguments: args },
  });
}

async function appWith(
  functions: Record<
    string,
    string | { source: string; private?: boolean; runAsSystem?: boolean; canEvaluate?: unknown }
  >,
  extra: Record<string, unknown> = {},
) {
  const entries = Object.entries(functions).map(([name, f]) => [name, typeof f === "string" ? { source: f } : f]);
  const appId = await newApp(app, { functions: Object.fromEntries(entries), ...extra });
  const session = await anonymousLogin(app, appId);
  return { appId, token: session.access_token, userId: session.user_id };
}

describe("callFunction", () => {
  it("runs sum with canonical Extended JSON in and out", async () => {
    const appId = await newApp(app);
    const { access_token } = await anonymousLogin(app, appId);
    const { response, body } = await callFn(appId, access_token, "sum", [
      { $numberInt: "1" },
      { $numberDouble: "2.5" },
      { $numberLong: "3" },
    ]);
    expect(response.headers["content-type"]).toBe("application/json");
    expect(body).toEqual({ $numberDouble: "6.5" });
    expect((await callFn(appId, access_token, "sum", [{ $numberInt: "2" }, { $numberInt: "3" }])).body).toEqual({
      $numberInt: "5",
    });
  });

  it("returns strings bare, undefined as $undefined, null, documents with BSON types", async () => {
    const { appId, token } = await appWith({
      str: "exports = () => 'bonjour';",
      undef: "exports = function () {};",
      nul: "exports = async () => null;",
      doc: "exports = () => ({ id: new BSON.ObjectId('65a1b2c3d4e5f60718293a4b'), at: new Date(0), n: 1, big: BSON.Long.fromString('9007199254740993') });",
      thenable: "exports = () => ({ then(ok) { ok('later'); } });",
      falsy: "exports = () => false;",
    });
    expect((await callFn(appId, token, "str")).body).toBe("bonjour");
    expect((await callFn(appId, token, "thenable")).body).toBe("later");
    expect((await callFn(appId, token, "falsy")).body).toBe(false);
    expect((await callFn(appId, token, "undef")).body).toEqual({ $undefined: true });
    expect((await callFn(appId, token, "nul")).body).toBeNull();
    expect((await callFn(appId, token, "doc")).body).toEqual({
      id: { $oid: "65a1b2c3d4e5f60718293a4b" },
      at: { $date: { $numberLong: "0" } },
      n: { $numberInt: "1" },
      big: { $numberLong: "9007199254740993" },
    });
  });

  it("gives functions App Services' context: user, values, environment, functions.execute, services", async () => {
    const { appId, token, userId } = await appWith({
      whoami: `exports = async function (greeting) {
          const helper = await context.functions.execute("double", 21);
          return { greeting, id: context.user.id, type: context.user.type, value: context.values.get("appName"),
                   missing: context.values.get("nope") === undefined, env: context.environment.tag,
                   support: context.environment.values.supportEmail, helper, app: context.app.clientAppId };
        };`,
      double: { source: "exports = (n) => n * 2;", private: true },
    });
    const { body } = await callFn(appId, token, "whoami", ["hi"]);
    expect(body).toEqual({
      greeting: "hi",
      id: userId,
      type: "normal",
      value: "Notes",
      missing: true,
      env: "development",
      support: "support@notes.example",
      helper: { $numberInt: "42" },
      app: appId,
    });
  });

  it("stores what a function writes as the database would: an Int64 past 2^53 exact", async () => {
    const { appId, token } = await appWith(
      {
        put: {
          source: `exports = async () => {
              const notes = context.services.get("mongodb-atlas").db("d").collection("c");
              await notes.insertOne({ _id: 1, big: BSON.Long.fromString("9007199254740993") });
              await notes.updateOne({ _id: 1 }, { $set: { bigger: BSON.Long.fromString("-9007199254740995") } });
              return "done";
            };`,
          runAsSystem: true,
        },
      },
      openData,
    );
    expect((await callFn(appId, token, "put")).body).toBe("done");
    const { body } = await mongoAction(app, appId, token, "find", { database: "d", collection: "c", query: {} });
    expect(body).toEqual([
      {
        _id: { $numberInt: "1" },
        big: { $numberLong: "9007199254740993" },
        bigger: { $numberLong: "-9007199254740995" },
      },
    ]);
  });

  it("gives a function an Int64 past 2^53 exact: an argument, a document it reads, what it writes back", async () => {
    const { appId, token } = await appWith(
      {
        // (typeof: a Long stays a Long past 2^53; within it, a number, as the library's relaxed reading.)
        kinds: "exports = (...args) => args.map((a) => [typeof a, String(a)]);",
        copy: `exports = async (n) => {
            const notes = context.services.get("mongodb-atlas").db("d").collection("c");
            await notes.insertOne({ _id: 1, n, nested: [{ n }] });
            const read = await notes.findOne({ _id: 1 });
            await notes.insertOne({ _id: 2, n: read.n, nested: read.nested });
            return [read.n, read.nested[0].n, (await notes.find({ _id: 2 }).toArray())[0].n];
          };`,
      },
      openData,
    );
    const big = { $numberLong: "9007199254740993" };
    const negative = { $numberLong: "-9223372036854775808" };
    expect((await callFn(appId, token, "kinds", [big, negative, { $numberLong: "5" }, [big]])).body).toEqual([
      ["object", "9007199254740993"],
      ["object", "-9223372036854775808"],
      ["number", "5"],
      ["object", "9007199254740993"],
    ]);
    // (The text's other Extended JSON types send it the library's way; so does a key's escape.)
    const withDate = [big, { $date: { $numberLong: "0" } }];
    expect((await callFn(appId, token, "kinds", withDate)).body[0]).toEqual(["object", "9007199254740993"]);
    expect((await callFn(appId, token, "copy", [big])).body).toEqual([big, big, big]);
    const { body } = await mongoAction(app, appId, token, "find", { database: "d", collection: "c", query: {} });
    expect(body).toEqual([
      { _id: { $numberInt: "1" }, n: big, nested: [{ n: big }] },
      { _id: { $numberInt: "2" }, n: big, nested: [{ n: big }] },
    ]);
  });

  it("answers FunctionNotFound for unknown and private functions", async () => {
    const { appId, token } = await appWith({ secret: { source: "exports = () => 1;", private: true } });
    for (const name of ["nope", "secret", "constructor", "__proto__"]) {
      const { response, body } = await callFn(appId, token, name);
      expect(response.statusCode).toBe(404);
      expect(body).toMatchObject({ error: `function not found: '${name}'`, error_code: "FunctionNotFound" });
    }
  });

  it("answers FunctionExecutionError with the error's text when a function throws or fails to compile", async () => {
    const { appId, token } = await appWith({
      boom: "exports = () => { throw new Error('boom'); };",
      rejects: "exports = async () => { await null; throw new TypeError('bad type'); };",
      undefinedName: "exports = () => unknownThing;",
      syntax: "exports = function ( {",
      notAFunction: "exports = 42;",
      evil: "exports = () => eval('1 + 1');",
      badThenable: "exports = () => ({ get then() { throw new RangeError('no then'); } });",
      rejectingThenable: "exports = () => ({ then(ok, fail) { fail(new Error('refused')); } });",
    });
    const expectations: Record<string, RegExp> = {
      badThenable: /^RangeError: no then$/,
      rejectingThenable: /^Error: refused$/,
      boom: /^Error: boom$/,
      rejects: /^TypeError: bad type$/,
      // The service's engine quotes the name [live: realm-kotlin's "ReferenceError: 'unknown' is not defined"].
      undefinedName: /^ReferenceError: 'unknownThing' is not defined$/,
      syntax: /^SyntaxError/,
      notAFunction: /does not export a function/,
      evil: /EvalError/,
    };
    for (const [name, message] of Object.entries(expectations)) {
      const { response, body } = await callFn(appId, token, name);
      expect(response.statusCode, name).toBe(400);
      expect(body.error_code, name).toBe("FunctionExecutionError");
      expect(body.error, name).toMatch(message);
    }
  });

  it("refuses broken Extended JSON in a function's arguments with 400 BadRequest, before the function loads", async () => {
    // The module's own code counts its loads: a refused call must not have run any of it.
    const { appId, token } = await appWith({
      loads: "globalThis.loaded = (globalThis.loaded || 0) + 1; exports = () => globalThis.loaded;",
    });
    const broken: [unknown, RegExp][] = [
      [{ $oid: "not-hex" }, /input must be a 24 character hex string/],
      [{ $numberInt: "abc" }, /strconv\.ParseInt: parsing "abc": invalid syntax/],
      [{ n: { $numberLong: "1e3" } }, /strconv\.ParseInt: parsing "1e3": invalid syntax/],
      // (What the library writes for -2^63, which it would read back as 9223372036854775616.)
      [
        { n: { $numberLong: "-9223372036854776000" } },
        /strconv\.ParseInt: parsing "-9223372036854776000": value out of range/,
      ],
      [[{ $numberInt: "2147483648" }], /\$numberInt value should be int32 but instead is int64: 2147483648/],
      [{ at: { $date: "soon" } }, /invalid \$date value string: soon/],
      [{ at: { $date: { $numberLong: "9223372036854775807" } } }, /\$date is not a valid date/],
      [{ raw: { $binary: { base64: "A-_", subType: "00" } } }, /invalid \$binary base64 string: A-_/],
      [{ $binary: "x" }, /invalid JSON input; expected \{/],
      [{ deep: [{ id: { $uuid: "nope" } }] }, /UUID string representation/],
      [{ "a\u0000b": 1 }, /field names cannot contain null bytes/],
      [{ $regularExpression: { pattern: "a", options: "zz" } }, /regular expression option \[z\] is not supported/],
    ];
    // In a request small enough to be read at once, and in one large enough to be read in slices
    // (whose body the function's process reads).
    const padding = [[], ["x".repeat(slicedFrom)]];
    for (const [argument, message] of broken) {
      for (const pad of padding) {
        const { response, body } = await callFn(appId, token, "loads", [{ $numberInt: "1" }, argument, ...pad]);
        expect(response.statusCode, JSON.stringify(argument)).toBe(400);
        expect(body.error_code, JSON.stringify(argument)).toBe("BadRequest");
        expect(body.error, JSON.stringify(argument)).toMatch(/^invalid Extended JSON in arguments: /);
        expect(body.error, JSON.stringify(argument)).toMatch(message);
      }
    }
    // The module loaded only for these two calls.
    for (const [loads, pad] of padding.entries())
      expect((await callFn(appId, token, "loads", [{ $numberInt: "1" }, ...pad])).body).toEqual({
        $numberInt: String(loads + 1),
      });
  });

  it("gives a large request's arguments to the function as a small request's", async () => {
    const { appId, token } = await appWith({
      shape: `exports = (notes, more) => ({ count: notes.length, last: notes[notes.length - 1], more,
        kinds: [typeof notes[0].n, notes[0].at instanceof Date, notes[0].id.toHexString()] });`,
    });
    const notes = Array.from({ length: 4_000 }, (_, n) => ({
      n: { $numberInt: String(n) },
      title: `Note ${n} "é" 😀`,
      at: { $date: { $numberLong: String(1_700_000_000_000 + n) } },
      id: { $oid: n.toString(16).padStart(24, "0") },
    }));
    const request = JSON.stringify({ name: "shape", arguments: [notes, { $numberLong: "12" }] });
    expect(request.length).toBeGreaterThan(slicedFrom);
    const { response, body } = await callFn(appId, token, "shape", [notes, { $numberLong: "12" }]);
    expect(response.statusCode).toBe(200);
    expect(body).toEqual({
      count: { $numberInt: "4000" },
      last: {
        n: { $numberInt: "3999" },
        title: 'Note 3999 "é" 😀',
        at: { $date: { $numberLong: "1700000003999" } },
        id: { $oid: "000000000000000000000f9f" },
      },
      more: { $numberInt: "12" },
      kinds: ["number", true, "000000000000000000000000"],
    });
  });

  it("reads arguments without Extended JSON types (relaxed numbers, text) as the library does", async () => {
    const { appId, token } = await appWith({
      probe: `exports = (a, b) => ({ keys: Object.keys(a), plain: Object.getPrototypeOf(a) === Object.prototype,
        types: a.n.map((v) => typeof v), b });`,
    });
    const args = [
      { k: "v", n: [1, 2.5, null, true, "x"] },
      { s: "café ✓", nested: [[{}]] },
    ];
    const { body } = await callFn(appId, token, "probe", args);
    expect(body).toEqual({
      keys: ["k", "n"],
      plain: true,
      types: ["number", "number", "object", "boolean", "string"],
      b: { s: "café ✓", nested: [[{}]] },
    });
  });

  it("gives each call its own caller's context.user, with the custom data of the moment", async () => {
    const {
      appId,
      token: ada,
      userId: adaId,
    } = await appWith({
      me: "exports = () => ({ id: context.user.id, colour: context.user.custom_data.colour ?? null, frozen: Object.isFrozen(context.user.custom_data) });",
    });
    const { access_token: bob, user_id: bobId } = await anonymousLogin(app, appId);
    const me = async (token: string) => (await callFn(appId, token, "me")).body;
    const profile = async (userId: string, colour: string) =>
      call(app, "insertDocuments", {
        method: "POST",
        url: `/_mock/v1/apps/${appId}/data/notes-app/profiles`,
        payload: { documents: [{ user_id: userId, colour }] },
      });
    expect(await me(ada)).toEqual({ id: adaId, colour: null, frozen: true });
    expect(await me(bob)).toEqual({ id: bobId, colour: null, frozen: true });
    await profile(adaId, "teal");
    expect(await me(ada)).toEqual({ id: adaId, colour: "teal", frozen: true });
    expect(await me(bob)).toEqual({ id: bobId, colour: null, frozen: true });
    await profile(bobId, "plum");
    expect(await me(bob)).toEqual({ id: bobId, colour: "plum", frozen: true });
    expect(await me(ada)).toEqual({ id: adaId, colour: "teal", frozen: true });
    // A change and a removal of the custom data document are seen by the next call.
    await call(app, "replaceDocument", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/notes-app/profiles/replace-one`,
      payload: { filter: { user_id: adaId }, replacement: { user_id: adaId, colour: "rust" } },
    });
    expect(await me(ada)).toEqual({ id: adaId, colour: "rust", frozen: true });
    await call(app, "deleteDocument", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/notes-app/profiles/delete-one`,
      payload: { filter: { user_id: adaId } },
    });
    expect(await me(ada)).toEqual({ id: adaId, colour: null, frozen: true });
    expect(await me(bob)).toEqual({ id: bobId, colour: "plum", frozen: true });
  });

  it("reads the custom data only for a function that can see it, and for one it calls that does", async () => {
    const { appId, token, userId } = await appWith({
      plain: "exports = (a, b) => a + b;",
      me: "exports = () => context.user.custom_data.colour ?? null;",
      callsMe: "exports = () => context.functions.execute('me');",
      // No member named: `context` handed on whole may show it.
      whole:
        "exports = () => { const c = context; const k = ['cus', 'tom_data'].join(''); return Object.values(c).filter((v) => v && typeof v === 'object' && k in v).map((v) => v[k].colour); };",
      // Its name written with a Unicode escape.
      escaped:
        "exports = () => { const k = ['cus', 'tom_data'].join(''); return Object.values(\\u0063ontext).filter((v) => v && typeof v === 'object' && k in v).map((v) => v[k].colour); };",
    });
    await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/notes-app/profiles`,
      payload: { documents: [{ user_id: userId, colour: "teal" }] },
    });
    const runtime = (await app.emulator.apps.get(appId))!;
    const reads = vi.spyOn(runtime, "customUserDataText");
    try {
      expect((await callFn(appId, token, "plain", [{ $numberInt: "1" }, { $numberInt: "2" }])).body).toEqual({
        $numberInt: "3",
      });
      expect(reads).not.toHaveBeenCalled();
      expect((await callFn(appId, token, "callsMe")).body).toBe("teal");
      expect(reads).toHaveBeenCalledTimes(1);
      expect((await callFn(appId, token, "whole")).body).toEqual(["teal"]);
      expect((await callFn(appId, token, "escaped")).body).toEqual(["teal"]);
      expect((await callFn(appId, token, "me")).body).toBe("teal");
      expect(reads).toHaveBeenCalledTimes(4);
    } finally {
      reads.mockRestore();
    }
  });

  it("gives context.user the caller's identities and data as they are now, after a link", async () => {
    const { appId, token, userId } = await appWith(
      {
        me: "exports = () => ({ id: context.user.id, providers: context.user.identities.map((i) => i.provider_type), email: context.user.data.email ?? null });",
      },
      { providers: { "local-userpass": { autoConfirm: true } } },
    );
    expect((await callFn(appId, token, "me")).body).toEqual({ id: userId, providers: ["anon-user"], email: null });
    await call(app, "registerUser", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/register`,
      payload: { email: "linked@example.com", password: "secret-1" },
    });
    const linked = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/login?link=true`,
      headers: bearer(token),
      payload: { username: "linked@example.com", password: "secret-1" },
    });
    expect((await callFn(appId, linked.body.access_token, "me")).body).toEqual({
      id: userId,
      providers: ["anon-user", "local-userpass"],
      email: "linked@example.com",
    });
  });

  it("stops a function past the time limit without blocking the server, busy or waiting", async () => {
    const { appId, token } = await appWith(
      {
        spin: "exports = () => { for (;;) {} };",
        microtasks: "exports = async () => { for (;;) { await null; } };",
        hang: "exports = () => new Promise(() => {});",
      },
      // Long enough for a fresh function process to start within it on a loaded machine (the start
      // counts against a call's limit), short enough for three calls to run into it.
      { functionTimeoutMs: 1000 },
    );
    for (const name of ["spin", "microtasks", "hang"]) {
      const started = Date.now();
      const { response, body } = await callFn(appId, token, name);
      expect(response.statusCode, name).toBe(400);
      expect(body, name).toMatchObject({ error_code: "ExecutionTimeLimitExceeded" });
      expect(Date.now() - started, name).toBeLessThan(5000);
      // The app's functions still work afterwards: the next call starts a fresh worker (polled: on
      // a very loaded machine its start alone may pass the limit; functions that never work again
      // still fail it).
      await expect
        .poll(async () => (await callFn(appId, token, "sum", [1, 2])).body, { timeout: 5000, interval: 20 })
        .toEqual({ $numberInt: "3" });
    }
  });

  it("keeps functions away from the emulator and the host (no process, fs or host objects; a require() that refuses)", async () => {
    const { appId, token } = await appWith({
      probe: `exports = async function (arg) {
        const tries = {
          // (process is App Services' part of Node's, the context's own; fs reads no file.)
          process: () => typeof process,
          processBinding: () => typeof process.binding + " " + typeof process.dlopen + " " + typeof process.kill,
          require: () => require("fs").readFileSync("/etc/passwd", "utf8"),
          requireCp: () => require("child_process"),
          globalProcess: () => typeof globalThis.process,
          ctorEscape: () => this.constructor.constructor("return process")(),
          argEscape: () => arg.constructor.constructor("return process")(),
          contextEscape: () => context.constructor.constructor("return process")(),
          servicesEscape: () => context.services.get.constructor("return process")(),
          valuesEscape: () => context.values.get.constructor.constructor("return this")(),
          importFs: () => import("node:fs"),
        };
        const out = {};
        for (const [name, attempt] of Object.entries(tries)) {
          try {
            const value = await attempt();
            out[name] = typeof value === "string" ? value : (value && typeof value.cwd === "function" ? "ESCAPED" : typeof value);
          } catch (error) {
            out[name] = "refused";
          }
        }
        return out;
      };`,
    });
    const { body } = await callFn(appId, token, "probe", [{ a: 1 }]);
    expect(body).toEqual({
      process: "object",
      processBinding: "undefined undefined undefined",
      require: "refused",
      requireCp: "refused",
      globalProcess: "object",
      ctorEscape: "refused",
      argEscape: "refused",
      contextEscape: "refused",
      servicesEscape: "refused",
      valuesEscape: "refused",
      importFs: "refused",
    });
  });

  it("refuses a client's call its can_evaluate does not let through; calls from functions are not checked", async () => {
    // realm-kotlin's test app: only one address may call `authorizedOnly`.
    const canEvaluate = { "%%user.data.email": { "%in": ["allowed@example.com"] } };
    const appId = await newApp(app, {
      functions: {
        authorizedOnly: { source: "exports = (n) => ({ n, caller: context.user.data.email });", canEvaluate },
        viaAnother: { source: "exports = () => context.functions.execute('authorizedOnly', 1);" },
        open: { source: "exports = () => 'open';", canEvaluate: {} },
        unsure: { source: "exports = () => 'ran';", canEvaluate: { "%%user.id": { "%regex": "^6" } } },
      },
    });
    const other = await emailUser(app, appId, "other@example.com", "secret-1");
    const refused = await callFn(appId, other.access_token, "authorizedOnly", [{ $numberInt: "1" }]);
    expect(refused.response.statusCode).toBe(400);
    expect(refused.body).toMatchObject({
      error: 'rule not matched for function "authorizedOnly"',
      error_code: "FunctionExecutionError",
    });
    const allowed = await emailUser(app, appId, "allowed@example.com", "secret-1");
    expect((await callFn(appId, allowed.access_token, "authorizedOnly", [{ $numberInt: "1" }])).body).toEqual({
      n: { $numberInt: "1" },
      caller: "allowed@example.com",
    });
    expect((await callFn(appId, other.access_token, "viaAnother")).response.statusCode).toBe(200);
    expect((await callFn(appId, other.access_token, "open")).body).toBe("open");
    // An expression this server cannot evaluate refuses the call (it never runs unchecked).
    const unsure = await callFn(appId, other.access_token, "unsure");
    expect(unsure.response.statusCode).toBe(400);
    expect(unsure.body.error).toMatch(/^cannot evaluate the can_evaluate of function "unsure": the operator %regex/);
  });

  it("calls a can_evaluate's %function first, as the caller, with the call's arguments", async () => {
    const appId = await newApp(app, {
      functions: {
        // Private: a rule expression may call it, a client may not.
        mayCall: {
          source: "exports = (n, email) => n < 10 && email === context.user.data.email && email.startsWith('ok');",
          private: true,
        },
        guarded: {
          source: "exports = (n) => n;",
          canEvaluate: {
            "%%true": { "%function": { name: "mayCall", arguments: ["%%args.0", "%%user.data.email"] } },
          },
        },
        throwing: { source: "exports = () => { throw new Error('directory unavailable'); };", private: true },
        failing: {
          source: "exports = () => 'ran';",
          canEvaluate: { "%%true": { "%function": { name: "throwing" } } },
        },
        missing: { source: "exports = () => 'ran';", canEvaluate: { "%%true": { "%function": { name: "nowhere" } } } },
      },
    });
    const ok = await emailUser(app, appId, "ok@example.com", "secret-1");
    const other = await emailUser(app, appId, "other@example.com", "secret-1");
    expect((await callFn(appId, ok.access_token, "guarded", [{ $numberInt: "3" }])).body).toEqual({ $numberInt: "3" });
    for (const [who, n] of [
      [ok, "30"],
      [other, "3"],
    ] as const) {
      const refused = await callFn(appId, who.access_token, "guarded", [{ $numberInt: n }]);
      expect(refused.response.statusCode).toBe(400);
      expect(refused.body).toMatchObject({
        error: 'rule not matched for function "guarded"',
        error_code: "FunctionExecutionError",
      });
    }
    expect((await callFn(appId, ok.access_token, "mayCall", [1, "ok@example.com"])).response.statusCode).toBe(404);
    // What the expression's function throws is the call's error; the function called does not run.
    const failing = await callFn(appId, ok.access_token, "failing");
    expect(failing.response.statusCode).toBe(400);
    expect(failing.body).toMatchObject({ error_code: "FunctionExecutionError" });
    expect(failing.body.error).toMatch(/directory unavailable/);
    const missing = await callFn(appId, ok.access_token, "missing");
    expect(missing.response.statusCode).toBe(404);
    expect(missing.body).toMatchObject({ error: "function not found: 'nowhere'", error_code: "FunctionNotFound" });
  });

  it("checks can_evaluate against the call's arguments, values and request", async () => {
    const appId = await newApp(app, {
      values: { limit: 10 },
      functions: {
        bounded: {
          source: "exports = (n) => n;",
          canEvaluate: { "%%args.0": { $lte: "%%values.limit" }, "%%request.httpMethod": "POST" },
        },
      },
    });
    const { access_token } = await anonymousLogin(app, appId);
    expect((await callFn(appId, access_token, "bounded", [{ $numberInt: "3" }])).body).toEqual({ $numberInt: "3" });
    const over = await callFn(appId, access_token, "bounded", [{ $numberInt: "11" }]);
    expect(over.body.error).toBe('rule not matched for function "bounded"');
  });

  it("runs as the calling user (rules apply) or as system when configured", async () => {
    const { appId, token, userId } = await appWith({
      mine: "exports = () => context.services.get('mongodb-atlas').db('notes-app').collection('notes').find({}).toArray();",
      all: {
        source: "exports = () => context.services.get('mongodb-atlas').db('notes-app').collection('notes').count({});",
        runAsSystem: true,
      },
    });
    await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/notes-app/notes`,
      payload: {
        documents: [
          { owner_id: userId, title: "mine" },
          { owner_id: "someone-else", title: "theirs" },
        ],
      },
    });
    const mine = (await callFn(appId, token, "mine")).body as { title: string }[];
    expect(mine.map((n) => n.title)).toEqual(["mine"]);
    expect((await callFn(appId, token, "all")).body).toEqual({ $numberInt: "2" });
  });

  it("noteStats returns figures over the caller's notes", async () => {
    const appId = await newApp(app);
    const session = await emailUser(app, appId, "stats@example.com", "secret-1");
    await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/notes-app/notes`,
      payload: {
        documents: [
          {
            owner_id: session.user_id,
            title: "a",
            body: "one two three",
            updatedAt: { $date: "2026-01-01T00:00:00Z" },
          },
          { owner_id: session.user_id, title: "b", body: " four ", updatedAt: { $date: "2026-02-01T00:00:00Z" } },
          // Words are runs of non-space: an empty body has none, and line breaks and runs of spaces separate.
          { owner_id: session.user_id, title: "c", body: "", updatedAt: { $date: "2026-01-15T00:00:00Z" } },
          {
            owner_id: session.user_id,
            title: "d",
            body: "five\n\nsix  \tseven",
            updatedAt: { $date: "2026-01-20T00:00:00Z" },
          },
          { owner_id: session.user_id, title: "e", updatedAt: { $date: "2026-01-21T00:00:00Z" } },
          { owner_id: "other", title: "x", body: "not counted at all" },
        ],
      },
    });
    const { body } = await callFn(appId, session.access_token, "noteStats");
    expect(body).toEqual({
      count: { $numberInt: "5" },
      words: { $numberInt: "7" },
      lastUpdated: { $date: { $numberLong: String(Date.parse("2026-02-01T00:00:00Z")) } },
    });
  });

  it("reloads a function when its file changes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "app-folder-"));
    try {
      cpSync(join(import.meta.dirname, "../../apps/local-app"), dir, { recursive: true });
      const watching = await testApp({ defaultAppDir: dir, watchFunctions: true });
      try {
        const { access_token } = await anonymousLogin(watching, "local-app");
        const run = () =>
          call(watching, "callFunction", {
            method: "POST",
            url: `${base}/app/local-app/functions/call`,
            headers: bearer(access_token),
            payload: { name: "sum", arguments: [{ $numberInt: "2" }, { $numberInt: "3" }] },
          });
        expect((await run()).body).toEqual({ $numberInt: "5" });
        const file = join(dir, "functions", "sum.js");
        writeFileSync(file, readFileSync(file, "utf8").replace("return total + n;", "return total + n * 10;"));
        await expect
          .poll(async () => (await run()).body, { timeout: 5000, interval: 25 })
          .toEqual({ $numberInt: "50" });
      } finally {
        await watching.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reads can_evaluate from an app folder's functions/config.json", async () => {
    const dir = mkdtempSync(join(tmpdir(), "app-folder-"));
    try {
      cpSync(join(import.meta.dirname, "../../apps/local-app"), dir, { recursive: true });
      const config = join(dir, "functions", "config.json");
      const entries = JSON.parse(readFileSync(config, "utf8")) as { name: string; can_evaluate?: unknown }[];
      for (const entry of entries) if (entry.name === "sum") entry.can_evaluate = { "%%user.type": "server" };
      writeFileSync(config, JSON.stringify(entries));
      const folderApp = await testApp({ defaultAppDir: dir });
      try {
        const { access_token } = await anonymousLogin(folderApp, "local-app");
        const { body } = await call(folderApp, "callFunction", {
          method: "POST",
          url: `${base}/app/local-app/functions/call`,
          headers: bearer(access_token),
          payload: { name: "sum", arguments: [] },
        });
        expect(body).toMatchObject({
          error: 'rule not matched for function "sum"',
          error_code: "FunctionExecutionError",
        });
      } finally {
        await folderApp.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("needs an access token", async () => {
    const { response } = await call(app, "callFunction", {
      method: "POST",
      url: `${base}/app/local-app/functions/call`,
      payload: { name: "sum", arguments: [] },
    });
    expect(response.statusCode).toBe(401);
  });
});
