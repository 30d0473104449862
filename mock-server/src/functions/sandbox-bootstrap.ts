/**
 * The code that runs inside each app's function context, after the BSON library and before any
 * function. It is the only bridge between user functions and the emulator, and it keeps the
 * worker's realm out of reach (docs/decisions/0010-function-code-on-the-host.md):
 * - It first takes every built-in it uses, then freezes the context's built-ins (every object
 *   reachable from the global's standard properties and the syntax-only intrinsics, the BSON
 *   library included) and makes the global's standard bindings read-only. Function code can no
 *   longer patch `Map.prototype.set`, `Promise.prototype.then`, `JSON.parse`, `Error.prepareStackTrace`
 *   or a setter on `Object.prototype` to catch what crosses the bridge.
 * - Everything crosses as text (JSON or Extended JSON) in both directions; results and thrown values
 *   are turned into text here, inside the context, so their getters and proxies run only here.
 * - Every function, factory and error a function can meet is made here, in the context's realm: a
 *   function whose source does not compile gets a factory made by `defineFailed`, from strings.
 * - `hostCall`, the one function of the worker's realm in here, stays in this closure; each call to
 *   it is wrapped, so nothing it throws (a stack overflow inside it) reaches function code.
 * The bridge (`define`, `defineFailed`, `dispatch`) is returned to the worker, never put in the
 * context's globals.
 */
import { constants as cryptoConstants } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import { METHODS, STATUS_CODES } from "node:http";
import { offeredModules, packagedModules } from "../config/function-modules.ts";
import { badNumberString } from "../data/documents.ts";

export const bootstrapSource = `(function (hostCall, appText, hostCrypto, hostTimer, hostModule) {
  "use strict";
  // --- What the bridge uses, taken before anything can change it.
  const { apply, ownKeys, getPrototypeOf, defineProperty, getOwnPropertyDescriptor } = Reflect;
  const { freeze, isFrozen, keys, hasOwn, create, preventExtensions } = Object;
  const ObjectPrototype = Object.prototype;
  const SafeMap = Map;
  const SafeSet = Set;
  const SafeWeakMap = WeakMap;
  const SafePromise = Promise;
  const SafeError = Error;
  const SafeTypeError = TypeError;
  const SafeSyntaxError = SyntaxError;
  const SafeString = String;
  const parseJson = JSON.parse;
  const stringifyJson = JSON.stringify;
  const objectIs = Object.is;
  const isInteger = Number.isInteger;
  const isView = ArrayBuffer.isView;
  const isArray = Array.isArray;
  const toInt = parseInt;
  const floor = Math.floor;
  const toFloat = parseFloat;
  const EJSON = BSON.EJSON;
  const ejsonStringify = EJSON.stringify;
  const ejsonParse = EJSON.parse;
  const SafeBinary = BSON.Binary;
  const binaryToString = SafeBinary.prototype.toString;
  const binaryFromBase64 = SafeBinary.createFromBase64;
  const arraySlice = Array.prototype.slice;
  const fromCharCodes = String.fromCharCode;
  const call = (fn, self, ...args) => apply(fn, self, args);
  const mapGet = SafeMap.prototype.get;
  const mapSet = SafeMap.prototype.set;
  const mapDelete = SafeMap.prototype.delete;
  const mapClear = SafeMap.prototype.clear;
  const stringIndexOf = String.prototype.indexOf;
  const stringSlice = String.prototype.slice;
  const SafeNumber = Number;
  const weakMapGet = SafeWeakMap.prototype.get;
  const weakMapSet = SafeWeakMap.prototype.set;
  const arrayIncludes = Array.prototype.includes;
  const dateNow = Date.now;
  const setHas = SafeSet.prototype.has;
  const setDelete = SafeSet.prototype.delete;
  const setAdd = SafeSet.prototype.add;
  const promiseThen = SafePromise.prototype.then;
  const arrayMap = Array.prototype.map;
  const arrayJoin = Array.prototype.join;
  const arrayPush = Array.prototype.push;
  const arrayPop = Array.prototype.pop;
  const isObject = (value) => value !== null && (typeof value === "object" || typeof value === "function");
  const DatePrototype = Date.prototype;
  const dateGetTime = DatePrototype.getTime;
  const numberIsNaN = Number.isNaN;
  const regExpExec = RegExp.prototype.exec;
  const stringLastIndexOf = String.prototype.lastIndexOf;
  const stringTrim = String.prototype.trim;
  const stringToLowerCase = String.prototype.toLowerCase;
  const stringToUpperCase = String.prototype.toUpperCase;
  const badNumberString = new RegExp(${JSON.stringify(badNumberString.source)});

  // --- Freezing the context's built-ins.
  // ObjectId counts in static properties; they become accessors over this closure so that the class
  // can be frozen and still make ids.
  for (const key of ["index", "PROCESS_UNIQUE", "cacheHexString"]) {
    const own = getOwnPropertyDescriptor(BSON.ObjectId, key);
    if (!own || !hasOwn(own, "value")) continue;
    let stored = own.value;
    defineProperty(BSON.ObjectId, key, {
      get: function () { return stored; },
      set: function (value) { stored = value; },
      enumerable: own.enumerable,
      configurable: false,
    });
  }
  // Assigning to a property that a frozen prototype holds fails (the "override mistake"), which
  // would break ordinary code such as \`error.name = "NotFound"\` or \`F.prototype.toString = …\`:
  // these properties become accessors whose setter gives the object its own property instead.
  // (Not Array.prototype.constructor nor Promise.prototype.constructor: V8's fast paths for array
  // methods and promises depend on them staying plain.)
  const overridable = (object, names) => {
    for (const key of names) {
      const own = getOwnPropertyDescriptor(object, key);
      if (!own || !hasOwn(own, "value") || !own.writable) continue;
      const value = own.value;
      defineProperty(object, key, {
        get: function () { return value; },
        set: function (replacement) {
          if (!isObject(this)) return;
          if (this === object) throw new SafeTypeError("Cannot assign to read only property '" + SafeString(key) + "' of a built-in");
          defineProperty(this, key, { value: replacement, writable: true, enumerable: true, configurable: true });
        },
        enumerable: own.enumerable,
        configurable: false,
      });
    }
  };
  overridable(ObjectPrototype, ownKeys(ObjectPrototype));
  overridable(Function.prototype, ["toString", "constructor"]);
  overridable(Array.prototype, ["toString", "push", "concat", "join"]);
  for (const E of [Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError, AggregateError]) {
    overridable(E.prototype, ["constructor", "name", "message", "toString"]);
  }
  // Everything reachable from the global's own properties and from the intrinsics only syntax
  // reaches (generator, async and iterator prototypes), through properties, accessors and
  // prototypes, except the global object itself.
  const roots = [
    getPrototypeOf(function* () {}),
    getPrototypeOf(async function () {}),
    getPrototypeOf(async function* () {}),
    getPrototypeOf([][Symbol.iterator]()),
    getPrototypeOf(new SafeMap().entries()),
    getPrototypeOf(new SafeSet().values()),
    getPrototypeOf(""[Symbol.iterator]()),
    getPrototypeOf(/./[Symbol.matchAll]("")),
  ];
  if (typeof Intl === "object" && typeof Intl.Segmenter === "function") {
    const segments = new Intl.Segmenter().segment("");
    call(arrayPush, roots, getPrototypeOf(segments), getPrototypeOf(segments[Symbol.iterator]()));
  }
  for (const key of ownKeys(globalThis)) {
    const own = getOwnPropertyDescriptor(globalThis, key);
    if (own) call(arrayPush, roots, own.value, own.get, own.set);
  }
  const reached = new SafeSet();
  call(setAdd, reached, globalThis);
  const toFreeze = [];
  while (roots.length > 0) {
    const value = call(arrayPop, roots);
    if (!isObject(value) || call(setHas, reached, value)) continue;
    call(setAdd, reached, value);
    call(arrayPush, toFreeze, value);
    // A typed array's elements cannot be frozen (none of the built-ins holds one with elements).
    if (isView(value)) continue;
    call(arrayPush, roots, getPrototypeOf(value));
    for (const key of ownKeys(value)) {
      const own = getOwnPropertyDescriptor(value, key);
      if (own) call(arrayPush, roots, own.value, own.get, own.set);
    }
  }
  // Error.stackTraceLimit alone stays writable (libraries such as assert set it while they make an
  // error): it only bounds the frames a stack keeps; prepareStackTrace and the rest are frozen.
  const stackTraceLimit = getOwnPropertyDescriptor(Error, "stackTraceLimit");
  for (const value of toFreeze) {
    if (isView(value)) continue;
    if (value !== Error || !stackTraceLimit) {
      freeze(value);
      continue;
    }
    for (const key of ownKeys(value)) {
      if (key === "stackTraceLimit") continue;
      const own = getOwnPropertyDescriptor(value, key);
      if (own && own.configurable) {
        defineProperty(value, key, hasOwn(own, "value") ? { writable: false, configurable: false } : { configurable: false });
      }
    }
    defineProperty(value, "stackTraceLimit", { writable: true, enumerable: stackTraceLimit.enumerable, configurable: false });
    preventExtensions(value);
  }
  // EJSON is a global of App Services functions; BSON already is (the library's own global). The
  // global's standard bindings become read-only, so \`globalThis.JSON = …\` or a new \`Error\` with
  // a \`prepareStackTrace\` changes nothing. (The whole descriptor is given: the context's global
  // keeps a copy of each definition, and a partial one would lose the value.)
  defineProperty(globalThis, "EJSON", { value: EJSON, writable: false, enumerable: false, configurable: false });
  // The web's atob and btoa (forgiving base64), as Node has them: the BSON library reads and writes
  // the base64 of Binary and UUID values with them (it was loaded before the context had Buffer).
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const stringCharCodeAt = String.prototype.charCodeAt;
  const fromCharCode = String.fromCharCode;
  const sextets = [];
  for (let i = 0; i < 128; i++) sextets[i] = -1;
  for (let i = 0; i < 64; i++) sextets[call(stringCharCodeAt, alphabet, i)] = i;
  const invalidCharacter = (message) => {
    const error = new SafeError(message);
    error.name = "InvalidCharacterError";
    return error;
  };
  const atob = (data) => {
    const input = SafeString(data);
    let clean = "";
    for (let i = 0; i < input.length; i++) {
      const c = call(stringCharCodeAt, input, i);
      if (c !== 9 && c !== 10 && c !== 12 && c !== 13 && c !== 32) clean += input[i];
    }
    let end = clean.length;
    if (end % 4 === 0 && clean[end - 1] === "=") end -= clean[end - 2] === "=" ? 2 : 1;
    if (end % 4 === 1) throw invalidCharacter("The string to be decoded is not correctly encoded.");
    let out = "";
    let buffer = 0;
    let bits = 0;
    for (let i = 0; i < end; i++) {
      const c = call(stringCharCodeAt, clean, i);
      const value = c < 128 ? sextets[c] : -1;
      if (value < 0) throw invalidCharacter("The string to be decoded is not correctly encoded.");
      buffer = ((buffer << 6) | value) & 0xffffff;
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out += fromCharCode((buffer >> bits) & 255);
      }
    }
    return out;
  };
  const btoa = (data) => {
    const input = SafeString(data);
    const code = (i) => {
      const c = call(stringCharCodeAt, input, i);
      if (c > 255) throw invalidCharacter("Invalid character");
      return c;
    };
    let out = "";
    let i = 0;
    for (; i + 2 < input.length; i += 3) {
      const n = (code(i) << 16) | (code(i + 1) << 8) | code(i + 2);
      out += alphabet[(n >> 18) & 63] + alphabet[(n >> 12) & 63] + alphabet[(n >> 6) & 63] + alphabet[n & 63];
    }
    if (input.length - i === 1) {
      const n = code(i) << 16;
      out += alphabet[(n >> 18) & 63] + alphabet[(n >> 12) & 63] + "==";
    } else if (input.length - i === 2) {
      const n = (code(i) << 16) | (code(i + 1) << 8);
      out += alphabet[(n >> 18) & 63] + alphabet[(n >> 12) & 63] + alphabet[(n >> 6) & 63] + "=";
    }
    return out;
  };
  defineProperty(globalThis, "atob", { value: freeze(atob), writable: false, enumerable: false, configurable: false });
  defineProperty(globalThis, "btoa", { value: freeze(btoa), writable: false, enumerable: false, configurable: false });
  for (const key of ownKeys(globalThis)) {
    const own = getOwnPropertyDescriptor(globalThis, key);
    if (own && hasOwn(own, "value") && (own.writable || own.configurable)) {
      defineProperty(globalThis, key, { value: own.value, writable: false, enumerable: own.enumerable, configurable: false });
    }
  }

  // --- The bridge.
  /** Sends to the worker; nothing the worker's function throws (a stack overflow) gets out. */
  const send = (kind, callId, pendingId, text) => {
    try {
      hostCall(kind, callId, pendingId, text);
      return true;
    } catch (ignored) {
      return false;
    }
  };
  const deepFreeze = (value) => {
    if (isObject(value) && !isFrozen(value)) {
      freeze(value);
      for (const key of keys(value)) deepFreeze(value[key]);
    }
    return value;
  };
  const app = deepFreeze(parseJson(appText));
  const factories = new SafeMap();
  const pending = new SafeMap();
  let nextPending = 1;

  const toText = (value) => ejsonStringify(value === undefined ? null : value, { relaxed: false });

  function request(callId, kind, payload, onId) {
    return new SafePromise((resolve, reject) => {
      const id = nextPending++;
      if (onId !== undefined) onId(id);
      let text;
      try {
        text = toText(payload);
      } catch (error) {
        reject(error);
        return;
      }
      if (typeof text !== "string") text = "null";
      call(mapSet, pending, id, { resolve, reject });
      if (!send(kind, callId, id, text)) {
        call(mapDelete, pending, id);
        reject(new SafeError("the request could not be sent"));
      }
    });
  }

  const clean = (object) => {
    const out = {};
    for (const key of keys(object)) if (object[key] !== undefined) out[key] = object[key];
    return out;
  };
  const opt = (options, key) => (isObject(options) ? options[key] : undefined);

  function collection(callId, database, name) {
    const action = (act, args, options) => {
      const all = clean(args);
      all.database = database;
      all.collection = name;
      const session = opt(options, "session");
      if (session !== undefined) {
        const state = isObject(session) ? call(weakMapGet, sessions, session) : undefined;
        if (state === undefined || state.callId !== callId)
          return SafePromise.reject(new SafeTypeError("the session option must be a session of this call's client.startSession()"));
        if (state.ended) return SafePromise.reject(new SafeError("Cannot use a session that has ended"));
        if (state.phase === "starting" || state.phase === "in progress") {
          state.phase = "in progress";
          all.transaction = state.id + ":" + state.number;
        }
      }
      return request(callId, "mongo", { action: act, args: all });
    };
    // The cursor of find (next, toArray, skip, limit, sort) and aggregate (next, toArray, skip), as
    // the reference lists them: the query runs at the first next() or toArray(), after which the
    // cursor's options are fixed; toArray answers the documents next() has not.
    function cursor(run, options) {
      const state = { sort: undefined, limit: undefined, skip: 0, results: undefined, at: 0 };
      const open = () => {
        if (state.results !== undefined) throw new SafeError("Cursor is already initialized");
      };
      const results = () => {
        if (state.results === undefined) {
          state.results = call(promiseThen, run(state), (docs) => (state.skip > 0 ? call(arraySlice, docs, state.skip) : docs));
        }
        return state.results;
      };
      const self = {
        skip(skip) { open(); state.skip = skip; return self; },
        next() {
          return call(promiseThen, results(), (docs) => (state.at < docs.length ? docs[state.at++] : undefined));
        },
        toArray() {
          return call(promiseThen, results(), (docs) => {
            const rest = state.at === 0 ? docs : call(arraySlice, docs, state.at);
            state.at = docs.length;
            return rest;
          });
        },
        then(onFulfilled, onRejected) { return call(promiseThen, self.toArray(), onFulfilled, onRejected); },
      };
      if (options.sorts) {
        self.sort = (sort) => { open(); state.sort = sort; return self; };
        self.limit = (limit) => { open(); state.limit = limit; return self; };
      }
      return self;
    }
    return freeze({
      find: (query, projection, options) =>
        cursor((state) => {
          const limit = state.limit === undefined ? opt(options, "limit") : state.limit;
          return action("find", {
            query, project: projection, sort: state.sort === undefined ? opt(options, "sort") : state.sort,
            limit: limit === undefined ? undefined : limit + state.skip,
          }, options);
        }, { sorts: true }),
      findOne: (query, projection, options) => action("findOne", { query, project: projection, sort: opt(options, "sort") }, options),
      count: (query, options) => action("count", { query, limit: opt(options, "limit") }, options),
      countDocuments: (query, options) => action("count", { query, limit: opt(options, "limit") }, options),
      aggregate: (pipeline, options) => cursor(() => action("aggregate", { pipeline }, options), { sorts: false }),
      insertOne: (document, options) => action("insertOne", { document }, options),
      // Unordered (ordered: false): each document on its own, every one tried, then the first failure.
      insertMany: async (documents, options) => {
        if (opt(options, "ordered") !== false || !isArray(documents) || documents.length === 0)
          return action("insertMany", { documents }, options);
        const insertedIds = [];
        let failure;
        for (let i = 0; i < documents.length; i++) {
          try {
            call(arrayPush, insertedIds, (await action("insertOne", { document: documents[i] }, options)).insertedId);
          } catch (error) {
            if (failure === undefined) failure = error;
          }
        }
        if (failure !== undefined) throw failure;
        return { insertedIds };
      },
      updateOne: (query, update, options) =>
        action("updateOne", { query, update, upsert: opt(options, "upsert"), arrayFilters: opt(options, "arrayFilters") }, options),
      updateMany: (query, update, options) =>
        action("updateMany", { query, update, upsert: opt(options, "upsert"), arrayFilters: opt(options, "arrayFilters") }, options),
      deleteOne: (query, options) => action("deleteOne", { query }, options),
      deleteMany: (query, options) => action("deleteMany", { query }, options),
      findOneAndUpdate: (filter, update, options) =>
        action("findOneAndUpdate", {
          filter, update, projection: opt(options, "projection"), sort: opt(options, "sort"),
          upsert: opt(options, "upsert"), returnNewDocument: opt(options, "returnNewDocument"),
        }, options),
      findOneAndReplace: (filter, replacement, options) =>
        action("findOneAndReplace", {
          filter, update: replacement, projection: opt(options, "projection"), sort: opt(options, "sort"),
          upsert: opt(options, "upsert"), returnNewDocument: opt(options, "returnNewDocument"),
        }, options),
      findOneAndDelete: (filter, options) =>
        action("findOneAndDelete", { filter, projection: opt(options, "projection"), sort: opt(options, "sort") }, options),
      // MongoDB's distinct, as an aggregation under the same rules: each value of the field (an
      // array's elements one by one; null kept, a missing field or an empty array giving none), once.
      distinct: (field, query, options) => {
        if (typeof field !== "string" || field === "") return SafePromise.reject(new SafeError("distinct needs a field name"));
        const present = { v: { $exists: true } };
        const pipeline = [
          { $match: isObject(query) ? query : {} },
          { $project: { _id: 0, v: "$" + field } },
          { $match: present },
          { $unwind: { path: "$v", preserveNullAndEmptyArrays: true } },
          { $match: present },
          { $group: { _id: "$v" } },
          { $sort: { _id: 1 } },
        ];
        return call(promiseThen, action("aggregate", { pipeline }, options), (groups) => call(arrayMap, groups, (group) => group._id));
      },
      // One action after another; ordered (the default) stops at the first failure, unordered goes
      // on and then throws the first. Answers the driver's BulkWriteResult counts.
      bulkWrite: async (operations, options) => {
        if (!isArray(operations)) throw new SafeError("bulkWrite needs a list of operations");
        const ordered = opt(options, "ordered") !== false;
        // (The collection's schema is not checked: App Services' bulkWrite option.)
        const bypass = opt(options, "bypassDocumentValidation") === true;
        const result = { insertedCount: 0, matchedCount: 0, modifiedCount: 0, deletedCount: 0, upsertedCount: 0, insertedIds: {}, upsertedIds: {} };
        let failure;
        for (let i = 0; i < operations.length; i++) {
          try {
            await bulkStep((act, args) => action(act, bypass ? { ...args, bypassDocumentValidation: true } : args, options), operations[i], i, result);
          } catch (error) {
            if (ordered) throw error;
            if (failure === undefined) failure = error;
          }
        }
        if (failure !== undefined) throw failure;
        return result;
      },
    });
  }

  /** One operation of a bulkWrite, its counts added to the result. */
  async function bulkStep(action, operation, index, result) {
    const kinds = isObject(operation) ? keys(operation) : [];
    const kind = kinds.length === 1 ? kinds[0] : undefined;
    const spec = kind === undefined ? undefined : operation[kind];
    if (!isObject(spec)) throw new SafeError("bulkWrite operation " + index + " is not one of insertOne, updateOne, updateMany, replaceOne, deleteOne, deleteMany");
    const counted = (answer) => {
      result.matchedCount += SafeNumber(answer.matchedCount || 0);
      result.modifiedCount += SafeNumber(answer.modifiedCount || 0);
      if (answer.upsertedId !== undefined) {
        result.upsertedCount += 1;
        result.upsertedIds[index] = answer.upsertedId;
      }
    };
    if (kind === "insertOne") {
      const answer = await action("insertOne", { document: spec.document });
      result.insertedCount += 1;
      result.insertedIds[index] = answer.insertedId;
    } else if (kind === "updateOne" || kind === "updateMany") {
      counted(await action(kind, { query: spec.filter, update: spec.update, upsert: spec.upsert, arrayFilters: spec.arrayFilters }));
    } else if (kind === "replaceOne") {
      counted(await action("replaceOne", { query: spec.filter, update: spec.replacement, upsert: spec.upsert }));
    } else if (kind === "deleteOne" || kind === "deleteMany") {
      result.deletedCount += SafeNumber((await action(kind, { query: spec.filter })).deletedCount || 0);
    } else {
      throw new SafeError("bulkWrite operation " + index + " is not one of insertOne, updateOne, updateMany, replaceOne, deleteOne, deleteMany");
    }
  }

  // utils.crypto and utils.jwt (App Services globals): answered at once by the function's process
  // (function-worker.ts), strings in and out. Bytes go as base64 ("b") or as UTF-8 text ("s").
  const bytesArg = (value, what) => {
    if (typeof value === "string") return { s: value };
    if (value instanceof SafeBinary) return { b: call(binaryToString, value, "base64") };
    throw new SafeTypeError(what + " must be a string or a BSON.Binary");
  };
  const textArg = (value, what) => {
    if (typeof value !== "string") throw new SafeTypeError(what + " must be a string");
    return value;
  };
  const cryptoCall = (op, args) => {
    const answer = parseJson(hostCrypto(op, stringifyJson(args)));
    if (hasOwn(answer, "error")) {
      const error = new SafeError(answer.error);
      if (typeof answer.code === "string") error.code = answer.code;
      throw error;
    }
    return answer.ok;
  };
  const binaryOf = (base64) => call(binaryFromBase64, SafeBinary, base64, 0);
  const unsupported = (name) => () => {
    throw new SafeError("utils.crypto." + name + " is not supported by this server");
  };
  const utils = freeze({
    crypto: freeze({
      hash: (algorithm, input) => binaryOf(cryptoCall("hash", { algorithm, input: bytesArg(input, "the input") })),
      hmac: (input, secret, algorithm, format) =>
        cryptoCall("hmac", { input: bytesArg(input, "the input"), secret: bytesArg(secret, "the secret"), algorithm, format }),
      sign: (type, message, key, scheme) =>
        binaryOf(cryptoCall("sign", { type, input: bytesArg(message, "the message"), key: textArg(key, "the private key"), scheme })),
      verify: (type, message, key, signature, scheme) =>
        cryptoCall("verify", {
          type, input: bytesArg(message, "the message"), key: textArg(key, "the public key"),
          signature: bytesArg(signature, "the signature"), scheme,
        }),
      encrypt: unsupported("encrypt"),
      decrypt: unsupported("decrypt"),
    }),
    jwt: freeze({
      encode: (method, payload, key, header) =>
        cryptoCall("jwtEncode", {
          method, payload: stringifyJson(payload === undefined ? {} : payload), key: textArg(key, "the secret"),
          header: isObject(header) ? parseJson(stringifyJson(header)) : undefined,
        }),
      decode: (token, key, returnHeader) => {
        const decoded = cryptoCall("jwtDecode", { token: textArg(token, "the token"), key: textArg(key, "the key") });
        const payload = parseJson(decoded.payload);
        return returnHeader === true ? { header: parseJson(decoded.header), payload } : payload;
      },
    }),
  });

  defineProperty(globalThis, "utils", { value: utils, writable: false, enumerable: false, configurable: false });

  // context.http: the emulator makes the request (outbound-http.ts) and answers the service's
  // response document; its body, a Binary, gets the service's text().
  /** UTF-8 bytes as text, as TextDecoder reads them (this context has none): U+FFFD for what is not UTF-8. */
  function utf8Text(bytes, length) {
    const units = [];
    const more = (i, low, high) => i < length && bytes[i] >= low && bytes[i] <= high;
    let i = 0;
    while (i < length) {
      const b = bytes[i++];
      if (b < 0x80) {
        call(arrayPush, units, b);
      } else if (b >= 0xc2 && b <= 0xdf && more(i, 0x80, 0xbf)) {
        call(arrayPush, units, ((b & 0x1f) << 6) | (bytes[i++] & 0x3f));
      } else if (b >= 0xe0 && b <= 0xef && more(i, b === 0xe0 ? 0xa0 : 0x80, b === 0xed ? 0x9f : 0xbf)) {
        const b1 = bytes[i++];
        if (more(i, 0x80, 0xbf)) call(arrayPush, units, ((b & 0x0f) << 12) | ((b1 & 0x3f) << 6) | (bytes[i++] & 0x3f));
        else call(arrayPush, units, 0xfffd);
      } else if (b >= 0xf0 && b <= 0xf4 && more(i, b === 0xf0 ? 0x90 : 0x80, b === 0xf4 ? 0x8f : 0xbf)) {
        const b1 = bytes[i++];
        if (more(i, 0x80, 0xbf)) {
          const b2 = bytes[i++];
          if (more(i, 0x80, 0xbf)) {
            const point = (((b & 0x07) << 18) | ((b1 & 0x3f) << 12) | ((b2 & 0x3f) << 6) | (bytes[i++] & 0x3f)) - 0x10000;
            call(arrayPush, units, 0xd800 + (point >> 10), 0xdc00 + (point & 0x3ff));
          } else {
            call(arrayPush, units, 0xfffd);
          }
        } else {
          call(arrayPush, units, 0xfffd);
        }
      } else {
        call(arrayPush, units, 0xfffd);
      }
    }
    let text = "";
    for (let at = 0; at < units.length; at += 8192) {
      text += apply(fromCharCodes, null, call(arraySlice, units, at, at + 8192));
    }
    return text;
  }

  function httpClient(callId) {
    const action = (method) => (options) =>
      call(promiseThen, request(callId, "http", { method, options }), (response) => {
        const body = isObject(response) ? response.body : undefined;
        if (body instanceof SafeBinary) {
          const bytes = body.buffer;
          const length = body.position;
          defineProperty(body, "text", { value: () => utf8Text(bytes, length), enumerable: false });
        }
        return response;
      });
    return freeze({
      get: action("get"), post: action("post"), put: action("put"),
      patch: action("patch"), delete: action("delete"), head: action("head"),
    });
  }

  // Sessions and their multi-document transactions (data/transactions.ts, docs/decisions/0036):
  // a session numbers its transactions; an action given the session inside one carries its key,
  // and the server keeps the transaction's writes until commitTransaction writes them all.
  const sessions = new SafeWeakMap();
  let nextSession = 1;
  // How long withTransaction runs a transaction again after a transient error (as the driver's).
  const retryTransactionMs = 120000;

  /** A server's error: its message, code, code name and labels, as MongoDB's driver shows them. */
  function serverError(text) {
    const detail = parseJson(text);
    const error = new SafeError(detail.message);
    const labels = freeze(call(arraySlice, detail.errorLabels));
    error.code = detail.code;
    error.codeName = detail.codeName;
    defineProperty(error, "errorLabels", { value: labels, enumerable: false });
    defineProperty(error, "hasErrorLabel", { value: (label) => call(arrayIncludes, labels, label), enumerable: false });
    return error;
  }

  /** Whether a thrown value carries a label (reads it once, never throws). */
  function hasLabel(error, label) {
    try {
      const labels = isObject(error) ? error.errorLabels : undefined;
      return isArray(labels) && call(arrayIncludes, labels, label);
    } catch (ignored) {
      return false;
    }
  }

  function startSession(callId) {
    const state = { callId, id: nextSession++, number: 0, phase: "none", ended: false };
    const active = () => state.phase === "starting" || state.phase === "in progress";
    // (A transaction that ran no action has nothing on the server to commit or abort.)
    const end = (action) =>
      state.phase === "starting"
        ? SafePromise.resolve()
        : request(callId, "mongo", { action, args: { transaction: state.id + ":" + state.number } });
    const session = freeze({
      get hasEnded() {
        return state.ended;
      },
      inTransaction: () => active(),
      startTransaction() {
        if (state.ended) throw new SafeError("Cannot use a session that has ended");
        if (active()) throw new SafeError("Transaction already in progress");
        state.number++;
        state.phase = "starting";
      },
      async commitTransaction() {
        if (state.phase === "none") throw new SafeError("No transaction started");
        if (state.phase === "aborted") throw new SafeError("Cannot call commitTransaction after calling abortTransaction");
        if (state.phase === "committed") return;
        try {
          await end("commitTransaction");
          state.phase = "committed";
        } catch (error) {
          // The server ended the transaction: nothing of it was written.
          state.phase = "aborted";
          throw error;
        }
      },
      async abortTransaction() {
        if (state.phase === "committed") throw new SafeError("Cannot call abortTransaction after calling commitTransaction");
        // None open (never started, or ended by a failed commit or withTransaction): nothing to undo.
        if (!active()) return;
        const ending = end("abortTransaction");
        state.phase = "aborted";
        await ending;
      },
      async withTransaction(fn, options) {
        if (typeof fn !== "function") throw new SafeTypeError("withTransaction needs a function");
        const started = dateNow();
        const retry = (error) => hasLabel(error, "TransientTransactionError") && dateNow() - started < retryTransactionMs;
        for (;;) {
          session.startTransaction(options);
          let result;
          try {
            result = await fn(session);
          } catch (error) {
            if (active()) await session.abortTransaction();
            if (retry(error)) continue;
            throw error;
          }
          // (The callback committed or aborted it itself.)
          if (!active()) return result;
          try {
            await session.commitTransaction();
            return result;
          } catch (error) {
            if (retry(error)) continue;
            throw error;
          }
        }
      },
      async endSession() {
        if (state.ended) return;
        if (active()) await session.abortTransaction();
        state.ended = true;
      },
    });
    call(weakMapSet, sessions, session, state);
    return session;
  }

  // Node's crypto module, the part functions use: hashes and HMACs of any digest Node has, random
  // bytes and UUIDs, a constant-time comparison — run by the process's own crypto (hostCrypto).
  const SafeBuffer = Buffer;
  const bufferFrom = SafeBuffer.from;
  const bufferConcat = SafeBuffer.concat;
  const bufferToString = SafeBuffer.prototype.toString;
  const toBytes = (data, encoding, what) => {
    if (typeof data === "string") return call(bufferFrom, SafeBuffer, data, encoding === undefined ? "utf8" : encoding);
    if (isView(data)) return call(bufferFrom, SafeBuffer, data.buffer, data.byteOffset, data.byteLength);
    throw new SafeTypeError(
      'The "' + what + '" argument must be of type string or an instance of Buffer, TypedArray, or DataView.',
    );
  };
  const base64Of = (bytes) => call(bufferToString, bytes, "base64");
  const fromBase64 = (text) => call(bufferFrom, SafeBuffer, text, "base64");
  const encoded = (bytes, encoding) =>
    encoding === undefined || encoding === "buffer" ? bytes : call(bufferToString, bytes, encoding);
  let digests;
  const digestNames = () => (digests ??= freeze(cryptoCall("nodeHashes", {})));

  /** A Hash (kind "nodeHash") or an Hmac ("nodeHmac"): updates gathered here, the digest made by the host. */
  function digester(kind, algorithm, key) {
    const chunks = [];
    let finished = false;
    const self = freeze({
      update(data, inputEncoding) {
        if (finished) throw new SafeError("Digest already called");
        call(arrayPush, chunks, toBytes(data, inputEncoding, "data"));
        return self;
      },
      digest(outputEncoding) {
        if (finished) throw new SafeError("Digest already called");
        finished = true;
        const input = base64Of(call(bufferConcat, SafeBuffer, chunks));
        return encoded(fromBase64(cryptoCall(kind, { algorithm, key, input })), outputEncoding);
      },
    });
    return self;
  }

  const maxRandomBytes = 65536;
  const viewOf = (buffer, what) => {
    if (isView(buffer)) return new SafeUint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    if (buffer instanceof SafeArrayBuffer) return new SafeUint8Array(buffer);
    throw codedTypeError('The "' + what + '" argument must be an instance of ArrayBuffer or ArrayBufferView.', "ERR_INVALID_ARG_TYPE");
  };
  const outOfRange = (name, most, received) => {
    const error = new RangeError('The value of "' + name + '" is out of range. It must be >= 0 && <= ' + most + ". Received " + SafeString(received));
    error.code = "ERR_OUT_OF_RANGE";
    return error;
  };
  const randomRange = (bytes, offset, size) => {
    const from = offset === undefined ? 0 : offset;
    if (typeof from !== "number" || !isInteger(from) || from < 0 || from > bytes.length) {
      throw outOfRange("offset", bytes.length, offset);
    }
    const length = size === undefined ? bytes.length - from : size;
    if (typeof length !== "number" || !isInteger(length) || length < 0 || from + length > bytes.length) {
      throw outOfRange("size", bytes.length - from, size);
    }
    return [from, length];
  };
  /** Fills bytes [from, from + length) of a Uint8Array with random bytes (the host's, 64 KiB a time). */
  const fillRandom = (bytes, from, length) => {
    for (let at = from; at < from + length; at += maxRandomBytes) {
      const chunk = fromBase64(cryptoCall("random", { size: from + length - at < maxRandomBytes ? from + length - at : maxRandomBytes }));
      for (let i = 0; i < chunk.length; i++) bytes[at + i] = chunk[i];
    }
  };
  function randomFillSync(buffer, offset, size) {
    const bytes = viewOf(buffer, "buf");
    const [from, length] = randomRange(bytes, offset, size);
    fillRandom(bytes, from, length);
    return buffer;
  }
  function randomFill(buffer, offset, size, callback) {
    const done = typeof offset === "function" ? offset : typeof size === "function" ? size : callback;
    if (typeof done !== "function") throw codedTypeError('The "callback" argument must be of type function.', "ERR_INVALID_ARG_TYPE");
    const filled = randomFillSync(buffer, typeof offset === "function" ? undefined : offset, typeof size === "function" ? undefined : size);
    call(promiseThen, SafePromise.resolve(), () => done(null, filled));
  }
  // Web Crypto's getRandomValues (crypto.getRandomValues, crypto.webcrypto.getRandomValues): an
  // integer typed array of at most 65,536 bytes.
  const integerArrays = ["Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "BigInt64Array", "BigUint64Array"];
  function getRandomValues(array) {
    const kind = isView(array) && !(array instanceof DataView) ? array[Symbol.toStringTag] : undefined;
    if (!call(arrayIncludes, integerArrays, kind)) {
      const error = new SafeTypeError("The data argument must be an integer-type TypedArray");
      error.name = "TypeMismatchError";
      error.code = 17;
      throw error;
    }
    if (array.byteLength > maxRandomBytes) {
      const error = new SafeError("The requested length exceeds 65,536 bytes");
      error.name = "QuotaExceededError";
      error.code = 22;
      throw error;
    }
    fillRandom(new SafeUint8Array(array.buffer, array.byteOffset, array.byteLength), 0, array.byteLength);
    return array;
  }

  function randomBytes(size, callback) {
    const bytes = fromBase64(cryptoCall("random", { size }));
    if (typeof callback !== "function") return bytes;
    call(promiseThen, SafePromise.resolve(), () => callback(null, bytes));
    return undefined;
  }

  // Node's keys (KeyObject, createSecretKey, createPublicKey, createPrivateKey, generateKeyPair…),
  // signatures (createSign, createVerify, sign, verify) — what packages such as jsonwebtoken use.
  // A key's material stays in the context (a secret's bytes, an asymmetric key's PEM); the process's
  // own crypto reads it for each operation (hostCrypto), and describes the keys it makes.
  const keyStates = new SafeWeakMap();
  const base64urlOf = (bytes) => {
    const text = base64Of(bytes);
    let out = "";
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (c === "=") break;
      out += c === "+" ? "-" : c === "/" ? "_" : c;
    }
    return out;
  };
  const keyState = (key) => {
    const state = isObject(key) ? call(weakMapGet, keyStates, key) : undefined;
    if (state === undefined) throw codedTypeError('The "key" argument must be an instance of KeyObject.', "ERR_INVALID_ARG_TYPE");
    return state;
  };
  class KeyObject {
    constructor() {
      throw codedTypeError("KeyObjects are made by createSecretKey, createPublicKey, createPrivateKey and generateKeyPair", "ERR_ILLEGAL_CONSTRUCTOR");
    }
    get type() {
      return keyState(this).type;
    }
    get asymmetricKeyType() {
      return keyState(this).asymmetricKeyType;
    }
    get asymmetricKeyDetails() {
      const details = keyState(this).details;
      return details === undefined ? undefined : { ...details };
    }
    get symmetricKeySize() {
      const state = keyState(this);
      return state.type === "secret" ? state.bytes.length : undefined;
    }
    export(options) {
      const state = keyState(this);
      if (state.type === "secret") {
        if (isObject(options) && options.format === "jwk") return { kty: "oct", k: base64urlOf(state.bytes) };
        return call(bufferFrom, SafeBuffer, state.bytes);
      }
      const out = cryptoCall("nodeKeyExport", { kind: state.type, pem: state.pem, options: isObject(options) ? { ...options } : {} });
      if (hasOwn(out, "s")) return out.s;
      if (hasOwn(out, "b")) return fromBase64(out.b);
      return out.jwk;
    }
    equals(other) {
      const mine = keyState(this);
      const theirs = keyState(other);
      if (mine.type !== theirs.type) return false;
      if (mine.type !== "secret") return mine.pem === theirs.pem;
      return mine.bytes.length === theirs.bytes.length && cryptoModule.timingSafeEqual(mine.bytes, theirs.bytes);
    }
    get [Symbol.toStringTag]() {
      return "KeyObject";
    }
  }
  freeze(KeyObject.prototype);
  freeze(KeyObject);
  const keyOf = (state) => {
    const key = create(KeyObject.prototype);
    call(weakMapSet, keyStates, key, freeze(state));
    return freeze(key);
  };
  /** A key the process described (cryptoOps' describeKey) as a KeyObject. */
  const describedKey = (described) => {
    const details = {};
    for (const name of keys(described.details || {})) {
      const value = described.details[name];
      details[name] = isObject(value) && typeof value.bigint === "string" ? BigInt(value.bigint) : value;
    }
    return keyOf({ type: described.type, asymmetricKeyType: described.asymmetricKeyType, details: freeze(details), pem: described.pem });
  };
  const keyTypeError = () =>
    codedTypeError(
      'The "key" argument must be of type string or an instance of ArrayBuffer, Buffer, TypedArray, DataView, KeyObject, or CryptoKey.',
      "ERR_INVALID_ARG_TYPE",
    );
  /** A key argument as the process reads it: a KeyObject's PEM, a PEM, DER bytes or a JWK, with its passphrase. */
  function keySpec(key) {
    if (key instanceof KeyObject) {
      const state = keyState(key);
      if (state.type === "secret") throw codedTypeError("Invalid key object type secret, expected private or public.", "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE");
      return { pem: state.pem };
    }
    if (typeof key === "string") return { pem: key };
    if (isView(key) || key instanceof SafeArrayBuffer) return { pem: call(bufferToString, toBytes(isView(key) ? key : new SafeUint8Array(key), undefined, "key"), "utf8") };
    if (!isObject(key)) throw keyTypeError();
    const inner = key.key;
    if (inner instanceof KeyObject) return keySpec(inner);
    const passphrase = key.passphrase === undefined ? {} : { passphrase: typeof key.passphrase === "string" ? key.passphrase : call(bufferToString, toBytes(key.passphrase, undefined, "passphrase"), "utf8") };
    if (key.format === "jwk") {
      if (!isObject(inner)) throw codedTypeError('The "key.key" property must be of type object.', "ERR_INVALID_ARG_TYPE");
      return { jwk: parseJson(stringifyJson(inner)) };
    }
    if (key.format === "der") return { der: base64Of(toBytes(inner, key.encoding, "key.key")), type: SafeString(key.type), ...passphrase };
    if (typeof inner === "string") return { pem: inner, ...passphrase };
    if (isView(inner) || inner instanceof SafeArrayBuffer) return { pem: call(bufferToString, toBytes(isView(inner) ? inner : new SafeUint8Array(inner), undefined, "key"), "utf8"), ...passphrase };
    throw keyTypeError();
  }
  /** The signing options a key argument carries (RSA padding and salt length, ECDSA's encoding). */
  const signingOf = (key) =>
    isObject(key) && !(key instanceof KeyObject) ? { padding: key.padding, saltLength: key.saltLength, dsaEncoding: key.dsaEncoding } : {};
  function createSecretKey(key, encoding) {
    const bytes = toBytes(isObject(key) && key instanceof SafeArrayBuffer ? new SafeUint8Array(key) : key, encoding, "key");
    return keyOf({ type: "secret", bytes: call(bufferFrom, SafeBuffer, bytes) });
  }
  const createPublicKey = (key) => (key instanceof KeyObject && keyState(key).type === "public" ? key : describedKey(cryptoCall("nodeKey", { kind: "public", key: keySpec(key) })));
  const createPrivateKey = (key) => describedKey(cryptoCall("nodeKey", { kind: "private", key: keySpec(key) }));
  /** A key made of a pair's half as generateKeyPair's options ask: a KeyObject, or its export. */
  const pairHalf = (described, encoding) => {
    const key = describedKey(described);
    return isObject(encoding) ? key.export(encoding) : key;
  };
  function generateKeyPairSync(type, options) {
    const given = isObject(options) ? options : {};
    const pair = cryptoCall("nodeGenerateKeyPair", { type: SafeString(type), options: { ...given, publicKeyEncoding: undefined, privateKeyEncoding: undefined } });
    return { publicKey: pairHalf(pair.publicKey, given.publicKeyEncoding), privateKey: pairHalf(pair.privateKey, given.privateKeyEncoding) };
  }
  function generateKeyPair(type, options, callback) {
    const done = typeof options === "function" ? options : callback;
    if (typeof done !== "function") throw codedTypeError('The "callback" argument must be of type function.', "ERR_INVALID_ARG_TYPE");
    let pair;
    try {
      pair = generateKeyPairSync(type, typeof options === "function" ? undefined : options);
    } catch (error) {
      call(promiseThen, SafePromise.resolve(), () => done(error));
      return;
    }
    call(promiseThen, SafePromise.resolve(), () => done(null, pair.publicKey, pair.privateKey));
  }
  /** Sign and Verify: data gathered here, the signature made or checked by the process. */
  function signer(kind, algorithm) {
    if (typeof algorithm !== "string") throw codedTypeError('The "algorithm" argument must be of type string.', "ERR_INVALID_ARG_TYPE");
    const chunks = [];
    let finished = false;
    const input = () => {
      if (finished) throw new SafeError(kind === "sign" ? "Sign already called" : "Verify already called");
      finished = true;
      return base64Of(call(bufferConcat, SafeBuffer, chunks));
    };
    const self = {
      update(data, inputEncoding) {
        if (finished) throw new SafeError("Digest already called");
        call(arrayPush, chunks, toBytes(data, inputEncoding, "data"));
        return self;
      },
      write(data, inputEncoding) {
        self.update(data, inputEncoding);
        return true;
      },
      end(data, inputEncoding) {
        if (data !== undefined) self.update(data, inputEncoding);
        return self;
      },
    };
    if (kind === "sign") {
      self.sign = (privateKey, outputEncoding) =>
        encoded(fromBase64(cryptoCall("nodeSign", { algorithm, input: input(), key: keySpec(privateKey), ...signingOf(privateKey) })), outputEncoding);
    } else {
      self.verify = (publicKey, signature, signatureEncoding) =>
        cryptoCall("nodeVerify", {
          algorithm,
          input: input(),
          key: keySpec(publicKey),
          ...signingOf(publicKey),
          signature: base64Of(toBytes(signature, signatureEncoding, "signature")),
        });
    }
    return freeze(self);
  }
  function sign(algorithm, data, key, callback) {
    const signature = fromBase64(
      cryptoCall("nodeSign", {
        algorithm: algorithm === null || algorithm === undefined ? null : SafeString(algorithm),
        input: base64Of(toBytes(data, undefined, "data")),
        key: keySpec(key),
        ...signingOf(key),
      }),
    );
    if (typeof callback !== "function") return signature;
    call(promiseThen, SafePromise.resolve(), () => callback(null, signature));
    return undefined;
  }
  function verify(algorithm, data, key, signature, callback) {
    const valid = cryptoCall("nodeVerify", {
      algorithm: algorithm === null || algorithm === undefined ? null : SafeString(algorithm),
      input: base64Of(toBytes(data, undefined, "data")),
      key: keySpec(key),
      ...signingOf(key),
      signature: base64Of(toBytes(signature, undefined, "signature")),
    });
    if (typeof callback !== "function") return valid;
    call(promiseThen, SafePromise.resolve(), () => callback(null, valid));
    return undefined;
  }

  // Key derivation (pbkdf2, scrypt, hkdf), ciphers and RSA encryption, run by the process's crypto.
  // A cipher lives in the process by a number this context holds; one never finished is freed
  // there when its object is collected here.
  const nodeBytes = (value, what) =>
    base64Of(value instanceof KeyObject ? keyState(value).bytes : toBytes(value instanceof SafeArrayBuffer ? new SafeUint8Array(value) : value, undefined, what));
  const later = (callback, compute) => {
    if (typeof callback !== "function") throw codedTypeError('The "callback" argument must be of type function.', "ERR_INVALID_ARG_TYPE");
    const result = compute();
    call(promiseThen, SafePromise.resolve(), () => callback(null, result));
  };
  const pbkdf2Sync = (password, salt, iterations, keylen, digest) =>
    fromBase64(cryptoCall("nodePbkdf2", { password: nodeBytes(password, "password"), salt: nodeBytes(salt, "salt"), iterations, keylen, digest }));
  const pbkdf2 = (password, salt, iterations, keylen, digest, callback) =>
    later(callback, () => pbkdf2Sync(password, salt, iterations, keylen, digest));
  const scryptSync = (password, salt, keylen, options) =>
    fromBase64(cryptoCall("nodeScrypt", { password: nodeBytes(password, "password"), salt: nodeBytes(salt, "salt"), keylen, options: isObject(options) ? { ...options } : {} }));
  const scrypt = (password, salt, keylen, options, callback) =>
    typeof options === "function"
      ? later(options, () => scryptSync(password, salt, keylen))
      : later(callback, () => scryptSync(password, salt, keylen, options));
  const hkdfSync = (digest, key, salt, info, keylen) => {
    const bytes = fromBase64(cryptoCall("nodeHkdf", { digest, key: nodeBytes(key, "ikm"), salt: nodeBytes(salt, "salt"), info: nodeBytes(info, "info"), keylen }));
    const out = new SafeArrayBuffer(bytes.length);
    new SafeUint8Array(out).set(bytes);
    return out;
  };
  const hkdf = (digest, key, salt, info, keylen, callback) => later(callback, () => hkdfSync(digest, key, salt, info, keylen));
  const cipherRegistry = new FinalizationRegistry((id) => {
    try {
      cryptoCall("nodeCipherFree", { id });
    } catch (ignored) {
      // (Gone already.)
    }
  });
  function cipherObject(decipher, algorithm, key, iv, options) {
    const id = cryptoCall("nodeCipherNew", {
      decipher,
      algorithm: SafeString(algorithm),
      key: nodeBytes(key, "key"),
      iv: iv === null || iv === undefined ? null : nodeBytes(iv, "iv"),
      authTagLength: isObject(options) ? options.authTagLength : undefined,
    });
    let tag = null;
    const self = {
      update(data, inputEncoding, outputEncoding) {
        return encoded(fromBase64(cryptoCall("nodeCipherUpdate", { id, input: base64Of(toBytes(data, inputEncoding, "data")) })), outputEncoding);
      },
      final(outputEncoding) {
        const done = cryptoCall("nodeCipherFinal", { id });
        tag = done.tag;
        return encoded(fromBase64(done.last), outputEncoding);
      },
      setAAD(buffer, aadOptions) {
        cryptoCall("nodeCipherSet", { id, what: "aad", value: nodeBytes(buffer, "buffer"), plaintextLength: isObject(aadOptions) ? aadOptions.plaintextLength : undefined });
        return self;
      },
      setAutoPadding(autoPadding) {
        cryptoCall("nodeCipherSet", { id, what: "padding", value: autoPadding !== false });
        return self;
      },
    };
    if (decipher) {
      self.setAuthTag = (buffer, encoding) => {
        cryptoCall("nodeCipherSet", { id, what: "tag", value: base64Of(toBytes(buffer, encoding, "buffer")) });
        return self;
      };
    } else {
      self.getAuthTag = () => {
        if (tag === null) {
          const error = new SafeError("Invalid state for operation getAuthTag");
          error.code = "ERR_CRYPTO_INVALID_STATE";
          throw error;
        }
        return fromBase64(tag);
      };
    }
    cipherRegistry.register(self, id);
    return freeze(self);
  }
  const rsaCall = (op) => (key, buffer) =>
    fromBase64(
      cryptoCall("nodeRsa", {
        op,
        key: keySpec(key),
        padding: isObject(key) && !(key instanceof KeyObject) ? key.padding : undefined,
        oaepHash: isObject(key) && !(key instanceof KeyObject) ? key.oaepHash : undefined,
        input: nodeBytes(buffer, "buffer"),
      }),
    );
  let cryptoLists;
  const listsOf = () => (cryptoLists ??= cryptoCall("nodeLists", {}));

  const hexDigits = "0123456789abcdef";
  const cryptoModule = freeze({
    createHash: (algorithm) => {
      if (typeof algorithm !== "string" || !call(arrayIncludes, digestNames(), call(stringToLowerCase, algorithm)))
        throw new SafeError("Digest method not supported");
      return digester("nodeHash", algorithm);
    },
    createHmac: (algorithm, key) => {
      if (typeof algorithm !== "string" || !call(arrayIncludes, digestNames(), call(stringToLowerCase, algorithm)))
        throw new SafeError("Invalid digest: " + SafeString(algorithm));
      if (key instanceof KeyObject) {
        const state = keyState(key);
        if (state.type !== "secret") throw codedTypeError("Invalid key object type " + state.type + ", expected secret.", "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE");
        return digester("nodeHmac", algorithm, base64Of(state.bytes));
      }
      return digester("nodeHmac", algorithm, base64Of(toBytes(key, undefined, "key")));
    },
    KeyObject,
    createSecretKey,
    createPublicKey,
    createPrivateKey,
    generateKeyPair,
    generateKeyPairSync,
    createSign: (algorithm) => signer("sign", algorithm),
    createVerify: (algorithm) => signer("verify", algorithm),
    sign,
    verify,
    pbkdf2,
    pbkdf2Sync,
    scrypt,
    scryptSync,
    hkdf,
    hkdfSync,
    createCipheriv: (algorithm, key, iv, options) => cipherObject(false, algorithm, key, iv, options),
    createDecipheriv: (algorithm, key, iv, options) => cipherObject(true, algorithm, key, iv, options),
    publicEncrypt: rsaCall("publicEncrypt"),
    privateDecrypt: rsaCall("privateDecrypt"),
    privateEncrypt: rsaCall("privateEncrypt"),
    publicDecrypt: rsaCall("publicDecrypt"),
    getCiphers: () => call(arraySlice, listsOf().ciphers),
    getCurves: () => call(arraySlice, listsOf().curves),
    constants: freeze(${JSON.stringify(cryptoConstants)}),
    getHashes: () => call(arraySlice, digestNames()),
    randomBytes,
    randomFillSync,
    randomFill,
    getRandomValues,
    webcrypto: freeze({ getRandomValues }),
    randomUUID() {
      const bytes = randomBytes(16);
      bytes[6] = (bytes[6] & 0x0f) | 0x40;
      bytes[8] = (bytes[8] & 0x3f) | 0x80;
      let text = "";
      for (let i = 0; i < 16; i++) {
        if (i === 4 || i === 6 || i === 8 || i === 10) text += "-";
        text += hexDigits[bytes[i] >> 4] + hexDigits[bytes[i] & 15];
      }
      return text;
    },
    timingSafeEqual(a, b) {
      const left = toBytes(a, undefined, "buf1");
      const right = toBytes(b, undefined, "buf2");
      if (left.length !== right.length) throw new RangeError("Input buffers must have the same byte length");
      let difference = 0;
      for (let i = 0; i < left.length; i++) difference |= left[i] ^ right[i];
      return difference === 0;
    },
  });
  // (The buffer package's own limits: its kMaxLength is 2^31 − 1.)
  const bufferModule = freeze({
    Buffer: SafeBuffer,
    SlowBuffer: SafeBuffer,
    kMaxLength: 2147483647,
    INSPECT_MAX_BYTES: 50,
    constants: freeze({ MAX_LENGTH: 2147483647, MAX_STRING_LENGTH: 536870888 }),
    atob,
    btoa,
  });

  // TextEncoder and TextDecoder (UTF-8), globals as in Node, on Buffer.
  const SafeUint8Array = Uint8Array;
  const SafeArrayBuffer = ArrayBuffer;
  class TextEncoder {
    get encoding() {
      return "utf-8";
    }
    encode(input = "") {
      return new SafeUint8Array(call(bufferFrom, SafeBuffer, SafeString(input), "utf8"));
    }
    encodeInto(source, destination) {
      const bytes = this.encode(source);
      const written = bytes.length <= destination.length ? bytes.length : destination.length;
      for (let i = 0; i < written; i++) destination[i] = bytes[i];
      return { read: SafeString(source).length, written };
    }
  }
  class TextDecoder {
    constructor(label = "utf-8", options) {
      const name = call(stringToLowerCase, SafeString(label));
      if (name !== "utf-8" && name !== "utf8" && name !== "unicode-1-1-utf-8")
        throw new RangeError('The "' + SafeString(label) + '" encoding is not supported');
      this.ignoreBOM = isObject(options) && options.ignoreBOM === true;
    }
    get encoding() {
      return "utf-8";
    }
    decode(input) {
      if (input === undefined) return "";
      let bytes;
      if (isView(input)) bytes = call(bufferFrom, SafeBuffer, input.buffer, input.byteOffset, input.byteLength);
      else if (input instanceof SafeArrayBuffer) bytes = call(bufferFrom, SafeBuffer, input);
      else throw new SafeTypeError('The "input" argument must be an instance of ArrayBuffer or ArrayBufferView');
      const text = call(bufferToString, bytes, "utf8");
      return !this.ignoreBOM && call(stringSlice, text, 0, 1) === "\ufeff" ? call(stringSlice, text, 1) : text;
    }
  }
  for (const [name, value] of [["TextEncoder", TextEncoder], ["TextDecoder", TextDecoder]]) {
    freeze(value.prototype);
    defineProperty(globalThis, name, { value: freeze(value), writable: false, enumerable: false, configurable: false });
  }

  // require(): Node's buffer, crypto (above) and timers (the call's own), the built-in modules
  // offered as packages and the app's functions/node_modules (the module loader below).
  function requireFor(timersModule) {
    return freeze(function require(name) {
      return requireModule("", name, timersModule);
    });
  }

  // Timers: setTimeout, setInterval, setImmediate and their clear…, each call's own (factory
  // parameters, as require), on the process's timers (the worker's hostTimer, numbers only). A
  // call's timers still pending when it ends are cancelled; one that throws fails its call.
  const timers = new SafeMap();
  const callTimers = new SafeMap();
  const timerIds = new SafeWeakMap();
  const maxTimersPerCall = 10000;
  let nextTimer = 1;

  function dropTimer(id) {
    const timer = call(mapGet, timers, id);
    if (timer === undefined) return;
    call(mapDelete, timers, id);
    const mine = call(mapGet, callTimers, timer.callId);
    if (mine !== undefined) {
      call(setDelete, mine.ids, id);
      mine.count--;
    }
    hostTimer(0, id, 0);
  }

  function endTimers(callId) {
    const mine = call(mapGet, callTimers, callId);
    if (mine === undefined) return;
    call(mapDelete, callTimers, callId);
    for (const id of mine.ids) {
      call(mapDelete, timers, id);
      hostTimer(0, id, 0);
    }
  }

  /** Node's rule: a delay that is not a number from 1 to 2^31 − 1 is 1 ms. */
  const delayOf = (ms) => {
    const n = SafeNumber(ms);
    return n >= 1 && n <= 2147483647 ? n : 1;
  };

  function timersFor(callId) {
    const add = (fn, delay, args, repeat) => {
      if (typeof fn !== "function") throw new SafeTypeError('The "callback" argument must be of type function');
      let mine = call(mapGet, callTimers, callId);
      if (mine === undefined) {
        mine = { count: 0, ids: new SafeSet() };
        call(mapSet, callTimers, callId, mine);
      }
      if (mine.count >= maxTimersPerCall)
        throw new SafeError("a function call may have at most " + maxTimersPerCall + " timers pending");
      const id = nextTimer++;
      call(mapSet, timers, id, { callId, fn, args, repeat: repeat ? delay : -1 });
      call(setAdd, mine.ids, id);
      mine.count++;
      hostTimer(1, id, delay);
      const handle = freeze({
        ref() { return handle; },
        unref() { return handle; },
        hasRef: () => true,
      });
      call(weakMapSet, timerIds, handle, id);
      return handle;
    };
    const clear = (handle) => {
      const id = isObject(handle) ? call(weakMapGet, timerIds, handle) : undefined;
      const timer = id === undefined ? undefined : call(mapGet, timers, id);
      if (timer !== undefined && timer.callId === callId) dropTimer(id);
    };
    // (Node's timers module as the call's, or the process's.)
    return freeze({
      setTimeout: (fn, ms, ...args) => add(fn, delayOf(ms), args, false),
      clearTimeout: clear,
      setInterval: (fn, ms, ...args) => add(fn, delayOf(ms), args, true),
      clearInterval: clear,
      setImmediate: (fn, ...args) => add(fn, -1, args, false),
      clearImmediate: clear,
    });
  }

  /** A timers module's functions in the order factories and modules take them as parameters. */
  const timerArguments = (t) => [t.setTimeout, t.clearTimeout, t.setInterval, t.clearInterval, t.setImmediate, t.clearImmediate];

  function fireTimer(id) {
    const timer = call(mapGet, timers, id);
    if (timer === undefined) return;
    // An interval is due again after its delay; anything else is done.
    if (timer.repeat >= 0) hostTimer(1, id, timer.repeat);
    else dropTimer(id);
    try {
      apply(timer.fn, undefined, timer.args);
    } catch (error) {
      fail(timer.callId, error);
    }
  }

  // Modules (docs/decisions/0038): a CommonJS loader. The worker finds and reads files (hostModule:
  // paths and texts in, a path, a text or a function compiled in this context out), only in the
  // app's functions/node_modules and in the packages of the built-in modules offered as packages;
  // module objects, require functions and the cache are made here. Modules run with the process's
  // timers (not a call's) and a process object of their own.
  const builtinPackages = freeze(${JSON.stringify(packagedModules)});
  const moduleCache = new SafeMap();
  const moduleTimers = timersFor(0);
  const nextTick = (fn, ...args) => {
    if (typeof fn !== "function") throw new SafeTypeError('The "callback" argument must be of type function');
    call(promiseThen, SafePromise.resolve(), () => apply(fn, undefined, args));
  };
  // process.hrtime on the process's monotonic clock (hostTimer 2: milliseconds, a number).
  const hrtime = (previous) => {
    const ms = hostTimer(2, 0, 0);
    let seconds = floor(ms / 1000);
    let nanoseconds = floor((ms - seconds * 1000) * 1e6);
    if (previous !== undefined) {
      if (!isArray(previous) || previous.length !== 2) {
        throw codedTypeError('The "time" argument must be an instance of Array of length 2.', "ERR_INVALID_ARG_TYPE");
      }
      seconds -= previous[0];
      nanoseconds -= previous[1];
      if (nanoseconds < 0) {
        seconds -= 1;
        nanoseconds += 1e9;
      }
    }
    return [seconds, nanoseconds];
  };
  hrtime.bigint = () => {
    const [seconds, nanoseconds] = hrtime();
    return BigInt(seconds) * 1000000000n + BigInt(nanoseconds);
  };
  freeze(hrtime);
  // Standard output and error: not terminals, and what is written to them goes nowhere (a call's
  // console is its log).
  const output = (fd) => freeze({ fd, isTTY: false, writable: true, write: () => true, end: () => undefined, on() { return this; }, once() { return this; } });
  // The process object of functions (a global) and of modules: App Services gives functions
  // hrtime, nextTick, version and versions; modules find the rest Node packages read at load.
  const moduleProcess = freeze({
    env: {},
    argv: freeze([]),
    platform: "linux",
    version: app.nodeVersion,
    versions: freeze({ node: call(stringSlice, app.nodeVersion, 1) }),
    nextTick,
    hrtime,
    cwd: () => "/",
    emitWarning: () => undefined,
    stdout: output(1),
    stderr: output(2),
    // (Object.prototype.toString gives "[object process]", as packages check: axios, for one.)
    [Symbol.toStringTag]: "process",
  });
  defineProperty(globalThis, "process", { value: moduleProcess, writable: false, enumerable: false, configurable: false });
  const moduleError = (message, code) => {
    const error = new SafeError(message);
    error.code = code;
    return error;
  };
  const dirOf = (file) => {
    const at = call(stringLastIndexOf, file, "/");
    return at <= 0 ? "/" : call(stringSlice, file, 0, at);
  };

  // What a call of a function that names neither timers nor require() is given for them: the process's.
  const processNode = freeze([requireFor(moduleTimers), ...timerArguments(moduleTimers)]);

  let utilLoaded = false;

  /** Node's zlib: the browserify-zlib package, with the constants Node also gives as zlib.constants. */
  function zlibModule() {
    const zlib = loadModule(builtinFile("zlib"));
    if (zlib.constants === undefined) {
      const constants = {};
      for (const name of keys(zlib)) if (call(stringSlice, name, 0, 2) === "Z_" && typeof zlib[name] === "number") constants[name] = zlib[name];
      zlib.constants = freeze(constants);
    }
    return zlib;
  }

  // Node's fs as App Services gives functions a part of it (accessSync, constants, lstatSync,
  // readFileSync, statSync), over no files: each names the file as missing, in Node's words.
  const missingFile = (syscall) => (path) => {
    const error = new SafeError("ENOENT: no such file or directory, " + syscall + " '" + SafeString(path) + "'");
    error.errno = -2;
    error.code = "ENOENT";
    error.syscall = syscall;
    error.path = SafeString(path);
    throw error;
  };
  const fsModule = freeze({
    constants: freeze(${JSON.stringify(fsConstants)}),
    accessSync: missingFile("access"),
    lstatSync: missingFile("lstat"),
    readFileSync: missingFile("open"),
    statSync: missingFile("stat"),
  });

  function requireModule(fromDir, name, timersModule) {
    if (typeof name !== "string") throw new SafeTypeError('The "id" argument must be of type string');
    const bare = call(stringSlice, name, 0, 5) === "node:" ? call(stringSlice, name, 5) : name;
    if (bare === "buffer") return bufferModule;
    if (bare === "crypto") return cryptoModule;
    if (bare === "timers") return timersModule;
    // The util package first, whole, before any package: it requires the inherits package, which
    // requires util and, when it came first, made util's inherits the half-loaded module.
    // Node's util has TextEncoder and TextDecoder too (the package does not): the globals.
    if (!utilLoaded) {
      utilLoaded = true;
      const util = loadModule(builtinFile("util"));
      if (util.TextEncoder === undefined) util.TextEncoder = TextEncoder;
      if (util.TextDecoder === undefined) util.TextDecoder = TextDecoder;
    }
    if (bare === "url") return urlModule();
    if (bare === "http" || bare === "https") return httpModule(bare === "https");
    if (bare === "fs") return fsModule;
    if (bare === "zlib") return zlibModule();
    if (hasOwn(builtinPackages, bare)) return loadModule(builtinFile(bare));
    if (hostModule("core", bare) === true || bare !== name) {
      throw new SafeError(
        "require(" + stringifyJson(name) + ") is not supported by this server: functions have Node's ${offeredModules.slice(0, -1).join(", ")} and ${offeredModules.at(-1)} modules, and the packages of their app's functions/node_modules",
      );
    }
    const file = hostModule("resolve", fromDir, name);
    if (typeof file !== "string" || file === "") throw moduleError("Cannot find module '" + name + "'", "MODULE_NOT_FOUND");
    return loadModule(file);
  }

  function loadModule(file) {
    const known = call(mapGet, moduleCache, file);
    if (known !== undefined) return known.exports;
    const module = { exports: {}, id: file, filename: file, loaded: false, children: [], paths: [] };
    call(mapSet, moduleCache, file, module);
    try {
      const text = hostModule("read", file);
      if (typeof text !== "string") throw moduleError("Cannot read module '" + file + "'", "MODULE_NOT_FOUND");
      if (call(stringSlice, file, -5) === ".json") {
        module.exports = parseJson(text);
      } else {
        const compiled = hostModule("compile", file, text);
        if (typeof compiled !== "function") throw new SafeSyntaxError(typeof compiled === "string" ? compiled : "the module " + file + " does not compile");
        const dir = dirOf(file);
        const require = function require(request) {
          return requireModule(dir, request, moduleTimers);
        };
        require.resolve = (request) => {
          const found = hostModule("resolve", dir, request);
          if (typeof found !== "string" || found === "") throw moduleError("Cannot find module '" + request + "'", "MODULE_NOT_FOUND");
          return found;
        };
        require.cache = create(null);
        apply(compiled, module.exports, [
          module.exports, require, module, file, dir, moduleProcess, globalThis, ...timerArguments(moduleTimers), nextTick,
        ]);
      }
    } catch (error) {
      call(mapDelete, moduleCache, file);
      throw error;
    }
    module.loaded = true;
    return module.exports;
  }

  /** The main file of a built-in module or of a package one is made of (sandbox.ts resolved it). */
  function builtinFile(name) {
    const file = hostModule("builtin", name);
    if (typeof file !== "string" || file === "") throw moduleError("Cannot find module '" + name + "'", "MODULE_NOT_FOUND");
    return file;
  }

  // Node's url module: the url package's legacy API (parse, resolve, format of its objects) with the
  // WHATWG URL of the whatwg-url package — URL, URLSearchParams, format of a URL, domainToASCII and
  // domainToUnicode (tr46, its IDNA), fileURLToPath and pathToFileURL as on Linux — as Node has them
  // from version 10 on. URL and URLSearchParams are globals too. All loaded on first use.
  let urlExports = null;
  let urlClasses = null;
  const codedTypeError = (message, code) => {
    const error = new SafeTypeError(message);
    error.code = code;
    return error;
  };
  function urlModule() {
    if (urlExports !== null) return urlExports;
    const legacy = loadModule(builtinFile("url"));
    const whatwgFile = builtinFile("whatwg-url");
    const whatwg = loadModule(whatwgFile);
    const tr46File = hostModule("resolve", dirOf(whatwgFile), "tr46");
    if (typeof tr46File !== "string" || tr46File === "") throw moduleError("Cannot find module 'tr46'", "MODULE_NOT_FOUND");
    const tr46 = loadModule(tr46File);
    const WhatwgURL = whatwg.URL;
    // (Node's errors: a TypeError with the code ERR_INVALID_URL and the input.)
    class URL extends WhatwgURL {
      constructor(...args) {
        try {
          super(...args);
        } catch (error) {
          if (error instanceof SafeTypeError && typeof error.message === "string" && call(stringSlice, error.message, 0, 11) === "Invalid URL") {
            error.code = "ERR_INVALID_URL";
            error.input = SafeString(args[0]);
          }
          throw error;
        }
      }
    }
    const URLSearchParams = whatwg.URLSearchParams;
    for (const value of [URL, WhatwgURL, URLSearchParams]) {
      freeze(value.prototype);
      freeze(value);
    }
    // Node's url.domainToASCII / domainToUnicode: UTS #46 as the URL standard's host parser runs it, "" for an error.
    const idna = freeze({ checkBidi: true, checkHyphens: false, checkJoiners: true, useSTD3ASCIIRules: false, verifyDNSLength: false, transitionalProcessing: false });
    const domainToASCII = (domain) => {
      const ascii = tr46.toASCII(SafeString(domain), idna);
      return ascii === null ? "" : ascii;
    };
    const domainToUnicode = (domain) => {
      const result = tr46.toUnicode(SafeString(domain), idna);
      return result.error ? "" : result.domain;
    };
    const legacyFormat = legacy.format;
    const option = (options, name, fallback) => (name in options ? !!options[name] : fallback);
    function format(urlObject, options) {
      if (!(urlObject instanceof WhatwgURL)) return legacyFormat(urlObject);
      // (As Node: no options when they are falsy, and not an array or a function.)
      if (options && (typeof options !== "object" || isArray(options))) throw codedTypeError('The "options" argument must be of type object.', "ERR_INVALID_ARG_TYPE");
      const given = options ? options : {};
      const record = whatwg.parseURL(urlObject.href);
      let text = record.scheme + ":";
      if (record.host !== null) {
        text += "//";
        if (option(given, "auth", true) && (record.username !== "" || record.password !== "")) {
          text += record.username + (record.password === "" ? "" : ":" + record.password) + "@";
        }
        const unicode = option(given, "unicode", false) && typeof record.host === "string";
        text += unicode ? domainToUnicode(record.host) : whatwg.serializeHost(record.host);
        if (record.port !== null) text += ":" + record.port;
      }
      text += urlObject.pathname;
      if (option(given, "search", true) && record.query !== null) text += "?" + record.query;
      if (option(given, "fragment", true) && record.fragment !== null) text += "#" + record.fragment;
      return text;
    }
    function fileURLToPath(path) {
      const url = typeof path === "string" ? new URL(path) : path;
      if (!(url instanceof WhatwgURL)) throw codedTypeError('The "path" argument must be of type string or an instance of URL.', "ERR_INVALID_ARG_TYPE");
      if (url.protocol !== "file:") throw codedTypeError("The URL must be of scheme file", "ERR_INVALID_URL_SCHEME");
      if (url.hostname !== "") throw codedTypeError('File URL host must be "localhost" or empty on linux', "ERR_INVALID_FILE_URL_HOST");
      const pathname = url.pathname;
      for (let n = 0; n + 2 < pathname.length; n++) {
        if (pathname[n] === "%" && pathname[n + 1] === "2" && (pathname[n + 2] === "f" || pathname[n + 2] === "F")) {
          throw codedTypeError("File URL path must not include encoded / characters", "ERR_INVALID_FILE_URL_PATH");
        }
      }
      return decodeURIComponent(pathname);
    }
    // (What a path may hold that a URL's path may not, as Node encodes it on Linux.)
    const pathEscapes = freeze({ "%": "%25", "\\\\": "%5C", "\\n": "%0A", "\\r": "%0D", "\\t": "%09", "?": "%3F", "#": "%23" });
    function pathToFileURL(filepath) {
      if (typeof filepath !== "string") throw codedTypeError('The "path" argument must be of type string.', "ERR_INVALID_ARG_TYPE");
      let resolved = requireModule("", "path", moduleTimers).resolve(filepath);
      if (filepath[filepath.length - 1] === "/" && resolved[resolved.length - 1] !== "/") resolved += "/";
      let escaped = "";
      for (const character of resolved) escaped += hasOwn(pathEscapes, character) ? pathEscapes[character] : character;
      return new URL("file://" + escaped);
    }
    urlClasses = freeze({ URL, URLSearchParams });
    urlExports = {
      ...legacy,
      URL,
      URLSearchParams,
      domainToASCII,
      domainToUnicode,
      fileURLToPath,
      pathToFileURL,
      format,
    };
    return urlExports;
  }
  for (const name of ["URL", "URLSearchParams"]) {
    defineProperty(globalThis, name, {
      get: () => (urlClasses === null ? (urlModule(), urlClasses) : urlClasses)[name],
      enumerable: false,
      configurable: false,
    });
  }

  // Node's http and https modules, their client (App Services has all of them but the server): a
  // request is sent by the emulator when it ends, whole, as context.http's are (the hosts the server
  // allows, responses up to 16 MiB, the emulator's HTTP client decoding compressed bodies), and its
  // response comes back whole as an IncomingMessage stream. Modules are the process's, not a call's
  // (decision 0038): so are these requests, each within the app's function time limit.
  let httpModules = null;
  function httpModule(secure) {
    if (httpModules === null) httpModules = makeHttpModules();
    return secure ? httpModules.https : httpModules.http;
  }
  function makeHttpModules() {
    const { Writable, Readable } = requireModule("", "stream", moduleTimers);
    const { EventEmitter } = requireModule("", "events", moduleTimers);
    const { URL } = urlModule();
    const STATUS_CODES = freeze(${JSON.stringify(STATUS_CODES)});
    const METHODS = freeze(${JSON.stringify(METHODS)});
    const headerName = /^[\\^_\\x60a-zA-Z\\-0-9!#$%&'*+.|~]+$/;
    const badHeaderValue = /[^\\t\\x20-\\x7e\\x80-\\xff]/;
    const validateHeaderName = (name) => {
      if (typeof name !== "string" || !headerName.test(name)) {
        throw codedTypeError('Header name must be a valid HTTP token ["' + SafeString(name) + '"]', "ERR_INVALID_HTTP_TOKEN");
      }
    };
    const validateHeaderValue = (name, value) => {
      if (value === undefined) throw codedTypeError('Invalid value "undefined" for header "' + name + '"', "ERR_HTTP_INVALID_HEADER_VALUE");
      if (badHeaderValue.test(SafeString(value))) throw codedTypeError('Invalid character in header content ["' + name + '"]', "ERR_INVALID_CHAR");
    };
    const systemErrorCode = /\\b(E[A-Z]{3,}|UND_[A-Z_]+)\\b/;
    const codedError = (message, code) => {
      const error = new SafeError(message);
      error.code = code;
      return error;
    };

    /** What requests and responses have for a socket: events, timeouts, and no connection of their own. */
    class Socket extends EventEmitter {
      constructor(secure) {
        super();
        this.encrypted = secure;
        this.destroyed = false;
        this.connecting = false;
        this.readable = true;
        this.writable = true;
        this.timeout = 0;
        this.timer = null;
      }
      setTimeout(ms, callback) {
        if (this.timer !== null) moduleTimers.clearTimeout(this.timer);
        this.timer = null;
        this.timeout = ms;
        if (typeof callback === "function") this.once("timeout", callback);
        if (ms > 0 && !this.destroyed) this.timer = moduleTimers.setTimeout(() => this.emit("timeout"), ms);
        return this;
      }
      clearTimer() {
        if (this.timer !== null) moduleTimers.clearTimeout(this.timer);
        this.timer = null;
      }
      setNoDelay() { return this; }
      setKeepAlive() { return this; }
      ref() { return this; }
      unref() { return this; }
      address() { return {}; }
      destroy(error) {
        if (this.destroyed) return this;
        this.destroyed = true;
        this.clearTimer();
        if (error) this.emit("error", error);
        this.emit("close", !!error);
        return this;
      }
      end() { return this; }
      write() { return true; }
    }

    class IncomingMessage extends Readable {
      constructor(socket, answer) {
        super();
        this.socket = socket;
        this.connection = socket;
        this.httpVersion = "1.1";
        this.httpVersionMajor = 1;
        this.httpVersionMinor = 1;
        this.complete = false;
        this.aborted = false;
        this.url = "";
        this.method = null;
        this.statusCode = answer.statusCode;
        this.statusMessage = answer.statusMessage;
        this.headers = answer.headers;
        this.rawHeaders = answer.rawHeaders;
        this.trailers = {};
        this.rawTrailers = [];
        this.on("end", () => {
          this.complete = true;
        });
      }
      _read() {}
      setTimeout(ms, callback) {
        this.socket.setTimeout(ms, callback);
        return this;
      }
    }

    /** The headers of a response as Node gives them: lower-case names, Set-Cookie a list, others joined. */
    function answerOf(response) {
      const headers = {};
      const rawHeaders = [];
      const given = isObject(response.headers) ? response.headers : {};
      for (const name of keys(given)) {
        const values = isArray(given[name]) ? given[name] : [given[name]];
        const lower = call(stringToLowerCase, name);
        for (const value of values) {
          call(arrayPush, rawHeaders, name, SafeString(value));
          if (lower === "set-cookie") {
            if (!isArray(headers[lower])) headers[lower] = [];
            call(arrayPush, headers[lower], SafeString(value));
          } else if (hasOwn(headers, lower)) {
            headers[lower] += (lower === "cookie" ? "; " : ", ") + SafeString(value);
          } else {
            headers[lower] = SafeString(value);
          }
        }
      }
      const status = typeof response.status === "string" ? response.status : "";
      const space = call(stringIndexOf, status, " ");
      const statusCode = typeof response.statusCode === "number" ? response.statusCode : SafeNumber(call(stringSlice, status, 0, space));
      const statusMessage = space === -1 ? STATUS_CODES[statusCode] || "" : call(stringSlice, status, space + 1);
      return { statusCode, statusMessage, headers, rawHeaders };
    }

    function requestOptions(input, options, secure) {
      let merged;
      if (typeof input === "string" || input instanceof URL) {
        const url = typeof input === "string" ? new URL(input) : input;
        merged = {
          protocol: url.protocol,
          hostname: call(stringSlice, url.hostname, 0, 1) === "[" ? call(stringSlice, url.hostname, 1, -1) : url.hostname,
          port: url.port === "" ? undefined : SafeNumber(url.port),
          path: url.pathname + url.search,
          auth: url.username || url.password ? decodeURIComponent(url.username) + ":" + decodeURIComponent(url.password) : undefined,
        };
        if (isObject(options)) merged = { ...merged, ...options };
      } else {
        merged = isObject(input) ? { ...input } : {};
      }
      const expected = secure ? "https:" : "http:";
      const protocol = merged.protocol === undefined || merged.protocol === null ? expected : merged.protocol;
      if (protocol !== expected) throw codedTypeError('Protocol "' + protocol + '" not supported. Expected "' + expected + '"', "ERR_INVALID_PROTOCOL");
      return merged;
    }

    class ClientRequest extends Writable {
      constructor(input, options, callback, secure) {
        super({ decodeStrings: true });
        if (typeof options === "function") {
          callback = options;
          options = undefined;
        }
        const given = requestOptions(input, options, secure);
        this.protocol = secure ? "https:" : "http:";
        this.host = SafeString(given.hostname || given.host || "localhost");
        this.port = given.port || given.defaultPort || (secure ? 443 : 80);
        this.path = given.path === undefined || given.path === null ? "/" : SafeString(given.path);
        this.method = call(stringToUpperCase, SafeString(given.method || "GET"));
        this.agent = given.agent;
        this.aborted = false;
        this.reusedSocket = false;
        this.headersSent = false;
        this.maxHeadersCount = null;
        this.chunks = [];
        this.pendingId = null;
        this.outgoing = create(null);
        this.socket = new Socket(secure);
        this.connection = this.socket;
        if (isArray(given.headers)) {
          for (let i = 0; i + 1 < given.headers.length; i += 2) this.setHeader(given.headers[i], given.headers[i + 1]);
        } else if (isObject(given.headers)) {
          for (const name of keys(given.headers)) if (given.headers[name] !== undefined) this.setHeader(name, given.headers[name]);
        }
        if (given.auth && !this.hasHeader("authorization")) {
          this.setHeader("Authorization", "Basic " + call(bufferToString, call(bufferFrom, SafeBuffer, SafeString(given.auth)), "base64"));
        }
        if (given.setHost !== false && !this.hasHeader("host")) {
          const defaultPort = secure ? 443 : 80;
          const host = call(stringIndexOf, this.host, ":") !== -1 ? "[" + this.host + "]" : this.host;
          this.setHeader("Host", SafeNumber(this.port) === defaultPort ? host : host + ":" + this.port);
        }
        if (typeof callback === "function") this.once("response", callback);
        if (typeof given.timeout === "number") this.setTimeout(given.timeout);
        const signal = given.signal;
        if (isObject(signal)) {
          const abort = () => this.destroy(codedError("The operation was aborted", "ABORT_ERR"));
          if (signal.aborted) nextTick(abort);
          else if (typeof signal.addEventListener === "function") signal.addEventListener("abort", abort, { once: true });
        }
        this.socket.on("timeout", () => this.emit("timeout"));
        nextTick(() => {
          if (!this.destroyed) this.emit("socket", this.socket);
        });
      }
      setHeader(name, value) {
        if (this.headersSent) throw codedError("Cannot set headers after they are sent to the client", "ERR_HTTP_HEADERS_SENT");
        validateHeaderName(name);
        validateHeaderValue(name, value);
        this.outgoing[call(stringToLowerCase, name)] = [name, value];
        return this;
      }
      getHeader(name) {
        const entry = this.outgoing[call(stringToLowerCase, SafeString(name))];
        return entry === undefined ? undefined : entry[1];
      }
      getHeaders() {
        const out = create(null);
        for (const lower of keys(this.outgoing)) out[lower] = this.outgoing[lower][1];
        return out;
      }
      getHeaderNames() { return keys(this.outgoing); }
      getRawHeaderNames() { return call(arrayMap, keys(this.outgoing), (lower) => this.outgoing[lower][0]); }
      hasHeader(name) { return this.outgoing[call(stringToLowerCase, SafeString(name))] !== undefined; }
      removeHeader(name) {
        if (this.headersSent) throw codedError("Cannot remove headers after they are sent to the client", "ERR_HTTP_HEADERS_SENT");
        delete this.outgoing[call(stringToLowerCase, SafeString(name))];
      }
      flushHeaders() {}
      setTimeout(ms, callback) {
        if (typeof callback === "function") this.once("timeout", callback);
        this.socket.setTimeout(ms);
        return this;
      }
      setNoDelay() {}
      setSocketKeepAlive() {}
      abort() {
        if (this.aborted) return;
        this.aborted = true;
        nextTick(() => this.emit("abort"));
        this.destroy();
      }
      _write(chunk, encoding, done) {
        call(arrayPush, this.chunks, chunk);
        done();
      }
      _final(done) {
        this.headersSent = true;
        const body = call(bufferConcat, SafeBuffer, this.chunks);
        this.chunks = [];
        const headers = {};
        for (const lower of keys(this.outgoing)) {
          // (The emulator's client says where it connects and how long the body is.)
          if (lower === "host" || lower === "content-length" || lower === "connection" || lower === "transfer-encoding") continue;
          const [name, value] = this.outgoing[lower];
          headers[name] = isArray(value) ? call(arrayMap, value, SafeString) : [SafeString(value)];
        }
        const hostname = call(stringIndexOf, this.host, ":") !== -1 ? "[" + this.host + "]" : this.host;
        const url = this.protocol + "//" + hostname + ":" + this.port + (call(stringSlice, this.path, 0, 1) === "/" ? this.path : "/" + this.path);
        const options = { url, headers };
        if (body.length > 0) options.body = new SafeBinary(new SafeUint8Array(body.buffer, body.byteOffset, body.length));
        done();
        call(
          promiseThen,
          request(0, "http", { method: this.method, options }, (id) => {
            this.pendingId = id;
          }),
          (response) => {
            this.pendingId = null;
            this.respond(response);
          },
          (error) => {
            this.pendingId = null;
            this.fail(error);
          },
        );
      }
      respond(response) {
        if (this.destroyed) return;
        const message = new IncomingMessage(this.socket, answerOf(response));
        message.req = this;
        this.res = message;
        const body = isObject(response) && response.body instanceof SafeBinary ? response.body : null;
        if (body !== null && body.position > 0) {
          message.push(call(bufferFrom, SafeBuffer, body.buffer.buffer, body.buffer.byteOffset, body.position));
        }
        message.push(null);
        message.once("end", () => {
          this.socket.clearTimer();
          nextTick(() => this.emit("close"));
        });
        if (!this.emit("response", message)) message.resume();
      }
      fail(error) {
        if (this.destroyed) return;
        const text = isObject(error) && typeof error.message === "string" ? error.message : SafeString(error);
        // (A system error's code, as Node's request would have it: ECONNREFUSED, ENOTFOUND, …)
        const code = call(regExpExec, systemErrorCode, text);
        const failure = new SafeError(text);
        if (code !== null) failure.code = code[1];
        this.destroy(failure);
      }
      _destroy(error, done) {
        // A request the emulator is still making is given up there too (its place freed at once).
        if (this.pendingId !== null) {
          call(mapDelete, pending, this.pendingId);
          send("cancel", 0, this.pendingId, "");
          this.pendingId = null;
        }
        this.socket.destroy();
        done(error);
      }
    }

    class Agent extends EventEmitter {
      constructor(options) {
        super();
        this.options = isObject(options) ? { ...options } : {};
        this.keepAlive = this.options.keepAlive === true;
        this.maxSockets = typeof this.options.maxSockets === "number" ? this.options.maxSockets : Infinity;
        this.maxFreeSockets = typeof this.options.maxFreeSockets === "number" ? this.options.maxFreeSockets : 256;
        this.sockets = {};
        this.freeSockets = {};
        this.requests = {};
      }
      destroy() {}
    }

    const make = (secure) => {
      class SecureAgent extends Agent {
        constructor(options) {
          super(options);
          this.defaultPort = secure ? 443 : 80;
          this.protocol = secure ? "https:" : "http:";
        }
      }
      const requestOf = (input, options, callback) => new ClientRequest(input, options, callback, secure);
      const refuseServer = () => {
        throw new SafeError("http servers are not supported in functions (App Services runs only their clients)");
      };
      return {
        Agent: SecureAgent,
        globalAgent: new SecureAgent({ keepAlive: true }),
        ClientRequest,
        IncomingMessage,
        STATUS_CODES,
        METHODS,
        maxHeaderSize: 16384,
        validateHeaderName,
        validateHeaderValue: (name, value) => validateHeaderValue(name, value),
        request: requestOf,
        get(input, options, callback) {
          const outgoing = requestOf(input, options, callback);
          outgoing.end();
          return outgoing;
        },
        createServer: refuseServer,
        Server: refuseServer,
      };
    };
    return { http: make(false), https: make(true) };
  }

  function makeContext(callId, callInfo) {
    const services = freeze({
      get(name) {
        if (name !== app.service) throw new SafeError("service not found: '" + name + "'");
        return freeze({
          db: (database) =>
            freeze({
              collection: (name_) => collection(callId, database, name_),
              getCollectionNames: () => request(callId, "mongo", { action: "getCollectionNames", args: { database } }),
            }),
          admin: () => freeze({ getDBNames: () => request(callId, "mongo", { action: "getDBNames", args: {} }) }),
          startSession: () => startSession(callId),
        });
      },
    });
    return freeze({
      app: app.app,
      user: callInfo.user,
      request: callInfo.request,
      environment: app.environment,
      values: freeze({
        get: (name) => (hasOwn(app.values, name) ? app.values[name] : undefined),
      }),
      services,
      functions: freeze({ execute: (name, ...args) => request(callId, "execute", { name, args }) }),
      http: httpClient(callId),
    });
  }

  function format(args) {
    return call(arrayJoin, call(arrayMap, args, (a) => {
      if (typeof a === "string") return a;
      try {
        const text = ejsonStringify(a, { relaxed: true });
        return typeof text === "string" ? text : SafeString(text);
      } catch (error) {
        return describe(a);
      }
    }), " ");
  }
  const consoleFor = (callId) => {
    const log = (level) => (...args) => {
      let text;
      try {
        text = level + " " + format(args);
      } catch (error) {
        text = level + " " + describe(error);
      }
      send("log", callId, 0, text);
    };
    return freeze({ log: log("log"), info: log("info"), warn: log("warn"), error: log("error"), debug: log("debug") });
  };

  /** A thrown value as text ("Name: message"); reads each property once and never throws. */
  function describe(value) {
    try {
      if (isObject(value)) {
        const message = value.message;
        if (typeof message === "string") {
          const name = value.name;
          return (typeof name === "string" && name !== "" ? name + ": " : "") + message;
        }
      }
      const text = SafeString(value);
      return typeof text === "string" ? text : "error";
    } catch (ignored) {
      return "error";
    }
  }

  /** A thrown value's message alone (the library's errors), else its text as describe() gives it. */
  function messageOf(error) {
    try {
      const message = isObject(error) ? error.message : undefined;
      return typeof message === "string" ? message : describe(error);
    } catch (ignored) {
      return describe(error);
    }
  }

  function fail(callId, error) {
    endTimers(callId);
    send("error", callId, 0, describe(error));
  }

  // HTTPS endpoints: the function gets the request (its body a Binary with text()) and a response
  // to fill; what it set goes back with its value (app-functions.ts runEndpoint).
  const headerName = /^[!#$%&'*+.^_\x60|~0-9A-Za-z-]+$/;
  const headerValue = /^[\t\x20-\x7e\x80-\xff]*$/;
  function endpointResponse() {
    const state = { headers: create(null) };
    const checkHeader = (name, value) => {
      if (typeof name !== "string" || call(regExpExec, headerName, name) === null)
        throw new SafeTypeError("a header name must be a token (letters, digits, -, …), not " + stringifyJson(SafeString(name)));
      if (typeof value !== "string" || call(regExpExec, headerValue, value) === null)
        throw new SafeTypeError("a header value must be a string without line breaks");
    };
    const api = freeze({
      setStatusCode(code) {
        if (!isInteger(code) || code < 100 || code > 599) throw new SafeTypeError("setStatusCode needs an HTTP status code (100 to 599)");
        state.statusCode = code;
      },
      setBody(body) {
        if (typeof body === "string") {
          state.body = undefined;
          state.bodyText = body;
        } else if (body instanceof SafeBinary) {
          state.bodyText = undefined;
          state.body = body;
        } else {
          throw new SafeTypeError("setBody needs a string or a BSON.Binary");
        }
      },
      setHeader(name, value) {
        checkHeader(name, value);
        state.headers[name] = [value];
      },
      addHeader(name, value) {
        checkHeader(name, value);
        const values = state.headers[name];
        if (values === undefined) state.headers[name] = [value];
        else call(arrayPush, values, value);
      },
    });
    return { api, state };
  }

  /** An endpoint call's answer: its value (none when undefined) and what it set on the response. */
  function endpointAnswer(value, state) {
    const response = { headers: state.headers };
    if (state.statusCode !== undefined) response.statusCode = state.statusCode;
    if (state.body !== undefined) response.body = state.body;
    if (state.bodyText !== undefined) response.bodyText = state.bodyText;
    return value === undefined ? { response } : { result: value, response };
  }

  /** A number as the library writes it in canonical Extended JSON (its own rule, written out). */
  function numberText(value) {
    const negativeZero = objectIs(value, -0);
    if (isInteger(value) && !negativeZero) {
      if (value >= -2147483648 && value <= 2147483647) return '{"$numberInt":"' + SafeString(value) + '"}';
      if (value >= -(2 ** 63) && value <= 2 ** 63 - 1) return '{"$numberLong":"' + SafeString(value) + '"}';
    }
    return '{"$numberDouble":"' + (negativeZero ? "-0.0" : SafeString(value)) + '"}';
  }

  function finish(callId, result) {
    endTimers(callId);
    let text;
    try {
      // A number or a string, the commonest results, written without the library's tree of wrappers.
      if (typeof result === "number") text = numberText(result);
      else if (typeof result === "string") text = stringifyJson(result);
      else text = result === undefined ? '{"$undefined":true}' : ejsonStringify(result, { relaxed: false });
    } catch (error) {
      fail(callId, error);
      return;
    }
    // A value with no JSON form (a function, a symbol) is undefined to the caller.
    send("done", callId, 0, typeof text === "string" ? text : '{"$undefined":true}');
  }

  /**
   * Extended JSON text read as the library reads it (relaxed), without its reviver where that gives
   * the same values (the reviver was most of a call's cost): the text is read with JSON.parse; text
   * with no "$" and no escape sequence has no key the library would read as a type (nor a NUL in a
   * key) and is done; otherwise each {"$numberInt": "…"} or {"$numberDouble": "…"} (the only key,
   * a string: what the SDKs send for numbers) becomes its number as the library makes it, and any
   * other "$" key or a NUL in a key sends the whole text to the library instead.
   * (test/functions/argument-reading.test.ts compares the two over generated texts.)
   */
  const needsLibrary = freeze({});
  function numbersRead(value) {
    if (value === null || typeof value !== "object") return value;
    if (isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const item = numbersRead(value[i]);
        if (item === needsLibrary) return needsLibrary;
        value[i] = item;
      }
      return value;
    }
    const names = keys(value);
    if (names.length === 1) {
      const text = value[names[0]];
      if (typeof text === "string") {
        if (names[0] === "$numberInt") return toInt(text, 10);
        if (names[0] === "$numberDouble") return toFloat(text);
      }
    }
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      if (call(stringSlice, name, 0, 1) === "$" || call(stringIndexOf, name, "\\u0000") !== -1) {
        return needsLibrary;
      }
      const item = numbersRead(value[name]);
      if (item === needsLibrary) return needsLibrary;
      value[name] = item;
    }
    return value;
  }
  const fromText = (text) => {
    let value;
    try {
      value = parseJson(text);
    } catch (ignored) {
      return ejsonParse(text, { relaxed: true });
    }
    if (call(stringIndexOf, text, "$") === -1 && call(stringIndexOf, text, "\\\\u") === -1) return value;
    const read = numbersRead(value);
    return read === needsLibrary ? ejsonParse(text, { relaxed: true }) : read;
  };

  /**
   * Refuses {"$numberInt": "abc"} and {"$numberLong": "1e3"}, which the library reads as numbers
   * and MongoDB refuses (data/documents.ts: the same pattern and words).
   */
  function checkNumberStrings(text) {
    const bad = call(regExpExec, badNumberString, text);
    if (bad === null) return;
    const found = bad[0];
    const value = call(stringTrim, call(stringSlice, found, call(stringLastIndexOf, found, ":") + 1));
    throw new SafeError("$number" + bad[1] + " must be a decimal integer string, not " + value);
  }

  /**
   * Whether arguments the library read hold a date it made invalid ({"$date": "soon"}), which
   * MongoDB refuses (and so does the emulator's own reading, data/documents.ts): looked for here,
   * where the arguments are read anyway, not on the emulator's main thread.
   */
  function holdsInvalidDate(root) {
    const pending = [root];
    while (pending.length > 0) {
      const node = call(arrayPop, pending);
      if (node === null || typeof node !== "object") continue;
      const prototype = getPrototypeOf(node);
      if (prototype === DatePrototype) {
        if (numberIsNaN(call(dateGetTime, node))) return true;
      } else if (isArray(node)) {
        for (let i = 0; i < node.length; i++) call(arrayPush, pending, node[i]);
      } else if (prototype === ObjectPrototype) {
        const names = keys(node);
        for (let i = 0; i < names.length; i++) call(arrayPush, pending, node[names[i]]);
      }
    }
    return false;
  }

  // context.user and context.request of calls, parsed and frozen once per distinct text: the
  // emulator sends each text once ("u") and names it by id in its runs; "z" forgets them all.
  const contexts = new SafeMap();

  function run(message) {
    const callId = message.callId;
    const defined = call(mapGet, factories, message.fn);
    if (defined === undefined) {
      fail(callId, new SafeError("the function is not defined"));
      return;
    }
    const factory = defined.factory;
    // The arguments first: arguments the library cannot read are the caller's mistake (the emulator
    // answers 400 with the library's message), and none of the function's code runs for them.
    // A large request's arguments come as its whole body, read here rather than on the emulator's
    // main thread (functions/sandbox.ts).
    let args;
    try {
      const text = message.inBody ? stringifyJson(parseJson(message.args).arguments ?? []) : message.args;
      checkNumberStrings(text);
      args = fromText(text);
      if (call(stringIndexOf, text, '"$date"') !== -1 && holdsInvalidDate(args)) {
        throw new SafeError("$date is not a valid date");
      }
    } catch (error) {
      send("badargs", callId, 0, messageOf(error));
      return;
    }
    let endpoint;
    if (message.endpoint) {
      // (request, response): the request's body, a Binary, reads as text as context.http's do.
      const endpointRequest = args[0];
      const body = isObject(endpointRequest) ? endpointRequest.body : undefined;
      if (body instanceof SafeBinary) {
        const bytes = body.buffer;
        const length = body.position;
        defineProperty(body, "text", { value: () => utf8Text(bytes, length), enumerable: false });
      }
      endpoint = endpointResponse();
      args = [endpointRequest, endpoint.api];
    }
    let fn;
    try {
      const module = { exports: undefined };
      const kept = call(mapGet, contexts, message.context);
      if (kept === undefined) throw new SafeError("the call's context is missing");
      // A call's own context.request (sandbox.ts sends it with the run when the function names it).
      const callInfo =
        message.request === undefined ? kept : { user: kept.user, request: deepFreeze(fromText(message.request)) };
      let node = processNode;
      if (defined.usesNode) {
        const timersModule = timersFor(callId);
        node = [requireFor(timersModule), ...timerArguments(timersModule)];
      }
      fn = apply(factory, undefined, [undefined, module, makeContext(callId, callInfo), consoleFor(callId), ...node]);
    } catch (error) {
      fail(callId, error);
      return;
    }
    if (typeof fn !== "function") {
      fail(callId, new SafeError("function '" + defined.name + "' does not export a function (use exports = function () {…})"));
      return;
    }
    let result;
    try {
      result = apply(fn, undefined, args);
    } catch (error) {
      fail(callId, error);
      return;
    }
    const done = endpoint === undefined ? finish : (id, value) => finish(id, endpointAnswer(value, endpoint.state));
    // A value answers at once; anything else may be a promise or a thenable, whose "then" only the
    // promise machinery reads (a getter that throws rejects the call).
    if (!isObject(result)) {
      done(callId, result);
      return;
    }
    call(
      promiseThen,
      new SafePromise((resolve) => resolve(result)),
      (value) => done(callId, value),
      (error) => fail(callId, error),
    );
  }

  /** A message's first count numbers (from its second character, each ended by a comma), then where the rest starts. */
  function readNumbers(text, count) {
    const out = [];
    let at = 1;
    for (let i = 0; i < count; i++) {
      const end = call(stringIndexOf, text, ",", at);
      if (end < 0) throw new SafeError("a broken message");
      call(arrayPush, out, SafeNumber(call(stringSlice, text, at, end)));
      at = end + 1;
    }
    call(arrayPush, out, at);
    return out;
  }

  function deliver(message) {
    const waiter = call(mapGet, pending, message.id);
    if (!waiter) return;
    call(mapDelete, pending, message.id);
    if (message.status === 0) {
      waiter.reject(new SafeError(message.text));
      return;
    }
    if (message.status === 2) {
      waiter.reject(serverError(message.text));
      return;
    }
    let value;
    try {
      value = ejsonParse(message.text, { relaxed: true });
    } catch (error) {
      waiter.reject(error);
      return;
    }
    waiter.resolve(value);
  }

  return freeze({
    /** A timer of hostTimer's is due (never throws). */
    fire(id) {
      try {
        if (typeof id === "number") fireTimer(id);
      } catch (ignored) {
        // (Its failure went to its call.)
      }
    },
    /** A compiled function's factory (made in this context by vm.compileFunction), by the id runs name it by. */
    define(id, name, factory, usesNode) {
      if (typeof id === "number" && typeof factory === "function") {
        call(mapSet, factories, id, freeze({ factory, name: SafeString(name), usesNode: usesNode !== false }));
      }
    },
    /** A function whose source does not compile: its factory, made here, throws the compile error's text. */
    defineFailed(id, name, errorName, message) {
      if (typeof id !== "number") return;
      const error = freeze({ name: typeof errorName === "string" ? errorName : "SyntaxError", message: typeof message === "string" ? message : "" });
      call(mapSet, factories, id, freeze({ factory: function () { throw error; }, name: SafeString(name) }));
    },
    /**
     * A run, a context, a delivery (sandbox.ts writes them: numbers each ended by a comma, then
     * texts of known length, the last one to the end) or forgetting the contexts; never throws.
     */
    dispatch(text) {
      try {
        if (typeof text !== "string") return;
        const kind = call(stringSlice, text, 0, 1);
        if (kind === "r" || kind === "b") {
          const header = readNumbers(text, 3);
          const args = call(stringSlice, text, header[3]);
          run({ callId: header[0], fn: header[1], context: header[2], args, inBody: kind === "b" });
        } else if (kind === "R" || kind === "B" || kind === "E") {
          const header = readNumbers(text, 4);
          const requestEnd = header[4] + header[3];
          const request = call(stringSlice, text, header[4], requestEnd);
          const args = call(stringSlice, text, requestEnd);
          run({ callId: header[0], fn: header[1], context: header[2], request, args, inBody: kind === "B", endpoint: kind === "E" });
        } else if (kind === "u") {
          const header = readNumbers(text, 1);
          call(mapSet, contexts, header[0], deepFreeze(fromText(call(stringSlice, text, header[1]))));
        } else if (kind === "z") {
          call(mapClear, contexts);
        } else if (kind === "d") {
          const header = readNumbers(text, 2);
          deliver({ id: header[0], status: header[1], text: call(stringSlice, text, header[2]) });
        }
      } catch (ignored) {
        // Only a broken message gets here; runs and deliveries report their own failures.
      }
    },
    /** The error a dynamic import() gets (node:vm would give one of the worker's realm). */
    refuseImport() {
      return new SafeError("import() is not available in functions");
    },
  });
})`;

/**
 * A function's source (`exports = function (…) {…}`) as the body of its per-call factory
 * `(exports, module, context, console, require, setTimeout, …) => exports`, compiled in the context by the worker
 * (vm.compileFunction: the source cannot close the body early and run code at definition).
 */
export const factoryParameters = [
  "exports",
  "module",
  "context",
  "console",
  "require",
  "setTimeout",
  "clearTimeout",
  "setInterval",
  "clearInterval",
  "setImmediate",
  "clearImmediate",
];
export function factoryBody(source: string): string {
  return `${source}\n;\nreturn module.exports !== undefined ? module.exports : exports;`;
}
