/**
 * The code that runs inside each app's function context, after the BSON library. It is the only
 * bridge between user functions and the emulator: everything crosses it as text (JSON or Extended
 * JSON), so no object of the outer realm (whose constructors would lead to `process`) is ever
 * reachable from a function. `hostCall` stays in this closure, invisible to user code; the bridge
 * (`define`, `dispatch`) is returned to the worker, not put in the context's globals.
 */
export const bootstrapSource = `(function (hostCall, appText) {
  "use strict";
  const EJSON = BSON.EJSON;
  const app = JSON.parse(appText);
  const freeze = (value) => {
    if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
      Object.freeze(value);
      for (const key of Object.keys(value)) freeze(value[key]);
    }
    return value;
  };
  freeze(app);
  const factories = new Map();
  const pending = new Map();
  let nextPending = 1;

  const toText = (value) => EJSON.stringify(value === undefined ? null : value, { relaxed: false });

  function request(callId, kind, payload) {
    return new Promise((resolve, reject) => {
      const id = nextPending++;
      pending.set(id, { resolve, reject });
      let text;
      try {
        text = toText(payload);
      } catch (error) {
        pending.delete(id);
        reject(error);
        return;
      }
      hostCall(kind, callId, id, text);
    });
  }

  const clean = (object) => {
    const out = {};
    for (const key of Object.keys(object)) if (object[key] !== undefined) out[key] = object[key];
    return out;
  };
  const opt = (options, key) => (options !== null && typeof options === "object" ? options[key] : undefined);

  function collection(callId, database, name) {
    const action = (act, args) => request(callId, "mongo", { action: act, args: Object.assign({ database, collection: name }, clean(args)) });
    function cursor(run) {
      const state = { sort: undefined, limit: undefined, skip: 0 };
      const self = {
        sort(sort) { state.sort = sort; return self; },
        limit(limit) { state.limit = limit; return self; },
        skip(skip) { state.skip = skip; return self; },
        toArray() {
          return run(state).then((docs) => (state.skip > 0 ? docs.slice(state.skip) : docs));
        },
        then(onFulfilled, onRejected) { return self.toArray().then(onFulfilled, onRejected); },
      };
      return self;
    }
    return Object.freeze({
      find: (query, projection, options) =>
        cursor((state) => {
          const limit = state.limit === undefined ? opt(options, "limit") : state.limit;
          return action("find", {
            query, project: projection, sort: state.sort === undefined ? opt(options, "sort") : state.sort,
            limit: limit === undefined ? undefined : limit + state.skip,
          });
        }),
      findOne: (query, projection, options) => action("findOne", { query, project: projection, sort: opt(options, "sort") }),
      count: (query, options) => action("count", { query, limit: opt(options, "limit") }),
      countDocuments: (query, options) => action("count", { query, limit: opt(options, "limit") }),
      aggregate: (pipeline) => cursor(() => action("aggregate", { pipeline })),
      insertOne: (document) => action("insertOne", { document }),
      insertMany: (documents) => action("insertMany", { documents }),
      updateOne: (query, update, options) =>
        action("updateOne", { query, update, upsert: opt(options, "upsert"), arrayFilters: opt(options, "arrayFilters") }),
      updateMany: (query, update, options) =>
        action("updateMany", { query, update, upsert: opt(options, "upsert"), arrayFilters: opt(options, "arrayFilters") }),
      deleteOne: (query) => action("deleteOne", { query }),
      deleteMany: (query) => action("deleteMany", { query }),
      findOneAndUpdate: (filter, update, options) =>
        action("findOneAndUpdate", {
          filter, update, projection: opt(options, "projection"), sort: opt(options, "sort"),
          upsert: opt(options, "upsert"), returnNewDocument: opt(options, "returnNewDocument"),
        }),
      findOneAndReplace: (filter, replacement, options) =>
        action("findOneAndReplace", {
          filter, update: replacement, projection: opt(options, "projection"), sort: opt(options, "sort"),
          upsert: opt(options, "upsert"), returnNewDocument: opt(options, "returnNewDocument"),
        }),
      findOneAndDelete: (filter, options) =>
        action("findOneAndDelete", { filter, projection: opt(options, "projection"), sort: opt(options, "sort") }),
    });
  }

  function makeContext(callId, call) {
    const services = Object.freeze({
      get(name) {
        if (name !== "mongodb-atlas") throw new Error("service not found: '" + name + "'");
        return Object.freeze({
          db: (database) => Object.freeze({ collection: (name_) => collection(callId, database, name_) }),
        });
      },
    });
    return Object.freeze({
      app: app.app,
      user: freeze(call.user),
      request: freeze(call.request),
      environment: app.environment,
      values: Object.freeze({
        get: (name) => (Object.prototype.hasOwnProperty.call(app.values, name) ? app.values[name] : undefined),
      }),
      services,
      functions: Object.freeze({ execute: (name, ...args) => request(callId, "execute", { name, args }) }),
    });
  }

  function format(args) {
    return args
      .map((a) => {
        if (typeof a === "string") return a;
        try { return EJSON.stringify(a, { relaxed: true }); } catch (error) { return String(a); }
      })
      .join(" ");
  }
  const consoleFor = (callId) => {
    const log = (level) => (...args) => hostCall("log", callId, 0, level + " " + format(args));
    return Object.freeze({ log: log("log"), info: log("info"), warn: log("warn"), error: log("error"), debug: log("debug") });
  };

  function errorText(error) {
    if (error !== null && typeof error === "object" && typeof error.message === "string") {
      return (typeof error.name === "string" && error.name !== "" ? error.name + ": " : "") + error.message;
    }
    try { return String(error); } catch (ignored) { return "error"; }
  }

  function fail(callId, error) {
    hostCall("error", callId, 0, errorText(error));
  }

  function finish(callId, result) {
    let text;
    try {
      text = result === undefined ? '{"$undefined":true}' : EJSON.stringify(result, { relaxed: false });
    } catch (error) {
      fail(callId, error);
      return;
    }
    hostCall("done", callId, 0, text);
  }

  function dispatch(text) {
    const message = JSON.parse(text);
    if (message.type === "deliver") {
      const waiter = pending.get(message.id);
      if (!waiter) return;
      pending.delete(message.id);
      if (!message.ok) {
        waiter.reject(new Error(message.text));
        return;
      }
      try {
        waiter.resolve(EJSON.parse(message.text, { relaxed: true }));
      } catch (error) {
        waiter.reject(error);
      }
      return;
    }
    if (message.type === "run") {
      const factory = factories.get(message.key);
      let fn;
      try {
        const module = { exports: undefined };
        fn = factory(undefined, module, makeContext(message.callId, EJSON.parse(message.call, { relaxed: true })), consoleFor(message.callId));
      } catch (error) {
        fail(message.callId, error);
        return;
      }
      if (typeof fn !== "function") {
        fail(message.callId, new Error("function '" + message.name + "' does not export a function (use exports = function () {…})"));
        return;
      }
      let args;
      try {
        args = EJSON.parse(message.args, { relaxed: true });
      } catch (error) {
        fail(message.callId, error);
        return;
      }
      Promise.resolve()
        .then(() => fn.apply(undefined, args))
        .then((result) => finish(message.callId, result), (error) => fail(message.callId, error));
    }
  }

  // EJSON is a global of App Services functions; BSON already is (the library's own global).
  Object.defineProperty(globalThis, "EJSON", { value: EJSON, writable: false, configurable: false, enumerable: false });
  return Object.freeze({
    define(key, factory) {
      factories.set(key, factory);
    },
    dispatch,
  });
})`;

/**
 * Wraps a function's source (`exports = function (…) {…}`) into a per-call factory: evaluated in
 * the context, the script's value is the factory.
 */
export function definitionSource(source: string): string {
  return `(function (exports, module, context, console) {\n${source}\n;\nreturn module.exports !== undefined ? module.exports : exports;\n})`;
}
