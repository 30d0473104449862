/**
 * The function context's built-ins are frozen before any function runs (docs/decisions/0010);
 * ordinary function code must not notice: assigning `name` to an error, old-style classes, the
 * BSON types (ObjectId counts in static properties), globals kept between calls.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, base, bearer, call, newApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
});
afterAll(() => app.close());

async function appWith(functions: Record<string, string>) {
  const entries = Object.entries(functions).map(([name, source]) => [name, { source }]);
  const appId = await newApp(app, { functions: Object.fromEntries(entries) });
  const { access_token } = await anonymousLogin(app, appId);
  return (name: string, args: unknown[] = []) =>
    call(app, "callFunction", {
      method: "POST",
      url: `${base}/app/${appId}/functions/call`,
      headers: bearer(access_token),
      payload: { name, arguments: args },
    });
}

describe("the hardened function context", () => {
  it("has frozen built-ins and read-only standard globals", async () => {
    const run = await appWith({
      frozen: `exports = () => {
        const objects = {
          "Object.prototype": Object.prototype, "Function.prototype": Function.prototype, "Array.prototype": Array.prototype,
          "Map.prototype": Map.prototype, "Promise.prototype": Promise.prototype, Promise, JSON, "Error.prototype": Error.prototype,
          "TypeError.prototype": TypeError.prototype, Reflect, Object, "generator prototype": Object.getPrototypeOf(function* () {}),
          "async function prototype": Object.getPrototypeOf(async () => {}), "iterator prototype": Object.getPrototypeOf(Object.getPrototypeOf([].values())),
          BSON, EJSON, "BSON.ObjectId": BSON.ObjectId, "BSON.ObjectId.prototype": BSON.ObjectId.prototype, "BSON.Long": BSON.Long,
        };
        const notFrozen = Object.entries(objects).filter(([, o]) => !Object.isFrozen(o)).map(([name]) => name);
        Error.prepareStackTrace = () => "replaced";
        JSON = null;
        globalThis.Promise = null;
        // (Error is sealed, its stackTraceLimit alone writable: libraries set it while they make an error.)
        const errorWritable = Object.getOwnPropertyNames(Error).filter((k) => Object.getOwnPropertyDescriptor(Error, k).writable);
        return { notFrozen, errorSealed: Object.isSealed(Error), errorWritable, stack: typeof new Error("x").stack, json: typeof JSON, promise: typeof Promise, prepare: typeof Error.prepareStackTrace };
      };`,
    });
    expect((await run("frozen")).body).toEqual({
      notFrozen: [],
      errorSealed: true,
      errorWritable: ["stackTraceLimit"],
      stack: "string",
      json: "object",
      promise: "function",
      prepare: "undefined",
    });
  });

  it("runs ordinary code: error names, old-style classes, overrides, globals between calls", async () => {
    const run = await appWith({
      named: `exports = () => { const e = new Error("no such note"); e.name = "NotFound"; throw e; };`,
      subclass: `class ValidationError extends Error { constructor(m) { super(m); this.name = "ValidationError"; } }
        exports = () => { throw new ValidationError("title is required"); };`,
      legacy: `function LegacyError(message) { this.message = message; }
        LegacyError.prototype = Object.create(Error.prototype);
        LegacyError.prototype.constructor = LegacyError;
        LegacyError.prototype.name = "LegacyError";
        function Point(x) { this.x = x; }
        Point.prototype.toString = function () { return "Point(" + this.x + ")"; };
        Point.prototype.valueOf = function () { return this.x; };
        exports = (fail) => {
          if (fail) throw new LegacyError("old style");
          const o = {};
          o.toString = () => "own";
          o.hasOwnProperty = () => "shadowed";
          const f = function () {};
          f.toString = () => "function text";
          const typeError = new TypeError("t");
          typeError.message = "changed";
          return [String(new Point(2)), new Point(3) + 1, String(o), o.hasOwnProperty("x"), String(f), typeError.message,
                  new LegacyError("x") instanceof Error, Object.prototype.toString.call([])];
        };`,
      counter: `exports = () => { globalThis.calls = (globalThis.calls || 0) + 1; return globalThis.calls; };`,
      zone: "exports = () => new Date(Date.UTC(2026, 6, 1)).getTimezoneOffset();",
    });
    expect((await run("named")).body.error).toBe("NotFound: no such note");
    expect((await run("subclass")).body.error).toBe("ValidationError: title is required");
    expect((await run("legacy", [true])).body.error).toBe("LegacyError: old style");
    expect((await run("legacy", [false])).body).toEqual([
      "Point(2)",
      { $numberInt: "4" },
      "own",
      "shadowed",
      "function text",
      "changed",
      true,
      "[object Array]",
    ]);
    expect((await run("counter")).body).toEqual({ $numberInt: "1" });
    expect((await run("counter")).body).toEqual({ $numberInt: "2" });
    // The emulator's time zone (the function process gets its TZ, none of its other settings).
    expect((await run("zone")).body).toEqual({
      $numberInt: String(new Date(Date.UTC(2026, 6, 1)).getTimezoneOffset()),
    });
  });

  it("keeps BSON, EJSON and the language's library working", async () => {
    const run = await appWith({
      library: `exports = async () => {
        const ids = [new BSON.ObjectId(), new BSON.ObjectId(), BSON.ObjectId.createFromTime(0)].map((id) => id.toHexString());
        BSON.ObjectId.cacheHexString = true;
        const cached = new BSON.ObjectId();
        const sameTwice = cached.toHexString() === cached.toHexString();
        BSON.ObjectId.cacheHexString = false;
        const long = BSON.Long.fromString("9007199254740993").add(BSON.Long.ONE).toString();
        const decimal = BSON.Decimal128.fromString("1.50").toString();
        const uuid = new BSON.UUID().toHexString().length;
        const ejson = EJSON.parse(EJSON.stringify({ id: new BSON.ObjectId("65a1b2c3d4e5f60718293a4b"), at: new Date(0) }, { relaxed: false }));
        class Stack extends Array {}
        const stack = Stack.from([3, 1, 2]).sort().map((n) => n * 2);
        async function* count() { yield 1; yield 2; }
        const counted = [];
        for await (const n of count()) counted.push(n);
        const settled = await Promise.allSettled([Promise.resolve(1), Promise.reject(new Error("no"))]);
        const named = /(?<year>\\d{4})-(?<month>\\d{2})/.exec("2026-11").groups;
        const proxied = new Proxy({}, { get: (target, key) => "proxied " + String(key) });
        const frozenOwn = Object.freeze({ a: 1 });
        return {
          distinct: new Set(ids).size, sameTwice, long, decimal, uuid,
          ejsonId: ejson.id.toHexString(), ejsonDate: ejson.at.getTime(),
          stack: [stack instanceof Stack, Array.from(stack)], counted, settled: settled.map((s) => s.status),
          named: { ...named }, proxied: proxied.x, frozenOwn: Object.isFrozen(frozenOwn),
          map: [...new Map([["k", 1]]).entries()], json: JSON.parse(JSON.stringify({ a: [1, "b"] })),
          number: new Intl.NumberFormat("en-US").format(1234.5), date: new Date(Date.UTC(2026, 0, 2)).toISOString(),
        };
      };`,
    });
    const { response, body } = await run("library");
    expect(response.statusCode).toBe(200);
    expect(body).toEqual({
      distinct: { $numberInt: "3" },
      sameTwice: true,
      long: "9007199254740994",
      decimal: "1.50",
      uuid: { $numberInt: "36" },
      ejsonId: "65a1b2c3d4e5f60718293a4b",
      ejsonDate: { $numberInt: "0" },
      stack: [true, [{ $numberInt: "2" }, { $numberInt: "4" }, { $numberInt: "6" }]],
      counted: [{ $numberInt: "1" }, { $numberInt: "2" }],
      settled: ["fulfilled", "rejected"],
      named: { year: "2026", month: "11" },
      proxied: "proxied x",
      frozenOwn: true,
      map: [["k", { $numberInt: "1" }]],
      json: { a: [{ $numberInt: "1" }, "b"] },
      number: "1,234.5",
      date: "2026-01-02T00:00:00.000Z",
    });
  });
});
