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
import { constants as fsConstants } from "node:fs";
import { offeredModules, packagedModules } from "../config/function-modules.ts";
import { badNumberString, longNumberString } from "../data/documents.ts";
import { strictFormMarkers, strictFormWalk } from "../data/strict-forms.ts";
import { loneSurrogatesRewritten, surrogateEscape } from "../data/well-formed-json.ts";
import { cryptoSource } from "./sandbox-crypto.ts";
import { urlAndHttpSource } from "./sandbox-url-http.ts";

export const bootstrapSource = `(function (hostCall, appText, hostCrypto, hostTimer, hostModule) {
  "use strict";
  // --- What the bridge uses, taken before anything can change it.
  const { apply, ownKeys, getPrototypeOf, setPrototypeOf, defineProperty, getOwnPropertyDescriptor } = Reflect;
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
  const stringSplit = String.prototype.split;
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
  const stringToLowerCase = String.prototype.toLowerCase;
  const stringToUpperCase = String.prototype.toUpperCase;
  const badNumberString = new RegExp(${JSON.stringify(badNumberString.source)});
  const longNumberString = new RegExp(${JSON.stringify(longNumberString.source)}, "g");
  // The forms the service's reader refuses (data/strict-forms.ts: the same function, names only its own).
  const strictFormMarkers = new RegExp(${JSON.stringify(strictFormMarkers.source)});
  const strictFormWalk = (${strictFormWalk.toString()});
  const strictFormProblem = (value) => {
    const walk = strictFormWalk(value);
    for (let step = walk.next(); ; step = walk.next()) if (step.done) return step.value;
  };
  // Half of a surrogate pair alone in what the function made is sent as U+FFFD (data/well-formed-json.ts).
  const surrogateEscape = new RegExp(${JSON.stringify(surrogateEscape.source)});
  const loneSurrogatesRewritten = (${loneSurrogatesRewritten.toString()});
  const stringToWellFormed = String.prototype.toWellFormed;
  const SafeBigInt = BigInt;
  const SafeDouble = BSON.Double;
  const SafeLong = BSON.Long;
  const longFromBigInt = SafeLong.fromBigInt;
  const isSafeInteger = Number.isSafeInteger;

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
  // --- The reference's BSON global (App Services' API of the library, as its older versions had
  // it): Binary.fromHex / fromBase64 and a Binary's toHex / toBase64 / text; Int32, Long, Double,
  // Decimal128, ObjectId and BSONRegExp made with or without new (the numbers 0 of no argument);
  // MaxKey and MinKey as values
  // (\`{ $lt: BSON.MaxKey }\`). The library's own classes stay what its values are instances of.
  {
    const RealBinary = BSON.Binary;
    defineProperty(RealBinary, "fromHex", { value: (hex, subType) => RealBinary.createFromHexString(hex, subType), writable: true, configurable: true });
    defineProperty(RealBinary, "fromBase64", { value: (base64, subType) => RealBinary.createFromBase64(base64, subType), writable: true, configurable: true });
    const binaryToText = RealBinary.prototype.toString;
    defineProperty(RealBinary.prototype, "toHex", { value: function toHex() { return call(binaryToText, this, "hex"); }, writable: true, configurable: true });
    defineProperty(RealBinary.prototype, "toBase64", { value: function toBase64() { return call(binaryToText, this, "base64"); }, writable: true, configurable: true });
    defineProperty(RealBinary.prototype, "text", { value: function text() { return utf8Text(this.buffer, this.position); }, writable: true, configurable: true });
    for (const name of ["Int32", "Long", "Double", "Decimal128", "ObjectId", "BSONRegExp"]) {
      const Real = BSON[name];
      const made = {
        [name]: function (...args) {
          // (A Double of nothing is 0, as the reference says; the library's would be NaN.)
          return name === "Double" && args.length === 0 ? new Real(0) : new Real(...args);
        },
      }[name];
      made.prototype = Real.prototype;
      setPrototypeOf(made, Real);
      defineProperty(BSON, name, { value: made, writable: true, enumerable: true, configurable: true });
    }
    for (const name of ["MaxKey", "MinKey"]) {
      defineProperty(BSON, name, { value: new BSON[name](), writable: true, enumerable: true, configurable: true });
    }
  }

  // --- The app's clock, which the control API moves (its tokens, schedules and database go by it):
  // what \`Date\` says now is the app's time, not the host's. The dispatch's "t" says how far ahead
  // it runs. \`Date.now()\`, \`new Date()\` (a subclass's too) and \`Date()\` follow it, and so does
  // the BSON library's \`new ObjectId()\`, which asks \`Date.now()\`; the bridge's own timing keeps
  // the host's (\`dateNow\`). The global \`Date\` is a proxy of the intrinsic, whose prototype
  // names it as its constructor; everything else of the intrinsic is as it was.
  let clockOffset = 0;
  const appNow = () => dateNow() + clockOffset;
  {
    const RealDate = Date;
    const dateToString = DatePrototype.toString;
    const construct = Reflect.construct;
    defineProperty(RealDate, "now", { value: { now() { return appNow(); } }.now, writable: true, enumerable: false, configurable: true });
    const AppDate = new Proxy(RealDate, {
      apply() {
        return call(dateToString, new RealDate(appNow()));
      },
      construct(target, args, newTarget) {
        return construct(target, args.length === 0 ? [appNow()] : args, newTarget);
      },
    });
    defineProperty(DatePrototype, "constructor", { value: AppDate, writable: true, enumerable: false, configurable: true });
    defineProperty(globalThis, "Date", { value: AppDate, writable: true, enumerable: false, configurable: true });
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
  /**
   * Sends to the worker, each text well-formed (a log line or an error's message as text, the rest
   * as JSON); nothing the worker's function throws (a stack overflow) gets out.
   */
  const plainTexts = new SafeSet(["log", "error", "badargs"]);
  const send = (kind, callId, pendingId, text) => {
    try {
      const made = call(setHas, plainTexts, kind)
        ? call(stringToWellFormed, text)
        : call(regExpExec, surrogateEscape, text) === null
          ? text
          : loneSurrogatesRewritten(text);
      hostCall(kind, callId, pendingId, made);
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

  const toText = (value) => canonicalText(value === undefined ? null : value);

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
      if (name !== undefined) all.collection = name;
      // A collation goes with the action (a bulk operation's own, else the call's); the host
      // checks it, and applies it where MongoDB does (data/collation.ts).
      const collation = all.collation !== undefined ? all.collation : opt(options, "collation");
      if (collation !== undefined) all.collation = collation;
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
          // A limit of 0 is none and a negative one its absolute value, as MongoDB's cursor takes
          // them; the skipped documents are read too (another type is the service's to refuse).
          const read = typeof limit !== "number" ? limit : limit === 0 ? undefined : (limit < 0 ? -limit : limit) + state.skip;
          return action("find", {
            query, project: projection, sort: state.sort === undefined ? opt(options, "sort") : state.sort,
            limit: read,
          }, options);
        }, { sorts: true }),
      findOne: (query, projection, options) => action("findOne", { query, project: projection, sort: opt(options, "sort") }, options),
      count: (query, options) => action("count", { query, limit: opt(options, "limit") }, options),
      countDocuments: (query, options) => action("count", { query, limit: opt(options, "limit") }, options),
      aggregate: (pipeline, options) =>
        cursor(() => action("aggregate", { pipeline, maxTimeMS: opt(options, "maxTimeMS") }, options), { sorts: false }),
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
      // The path is walked a field at a time: an array met on the way gives each of its elements,
      // and a numeric field names an array's element (distinct_semantics.js).
      distinct: (field, query, options) => {
        if (typeof field !== "string" || field === "") return SafePromise.reject(new SafeError("distinct needs a field name"));
        const present = { v: { $exists: true } };
        const parts = call(stringSplit, field, ".");
        const numeric = (part) => SafeString(toInt(part, 10)) === part;
        const pipeline = [{ $match: isObject(query) ? query : {} }];
        for (let i = 0; i < parts.length; i++) {
          const part = parts[i];
          const value = i === 0 ? "$" + part : numeric(part) ? { $cond: [{ $isArray: "$v" }, { $arrayElemAt: ["$v", toInt(part, 10)] }, "$v." + part] } : "$v." + part;
          call(arrayPush, pipeline, { $project: { _id: 0, v: value } }, { $match: present });
          if (i + 1 < parts.length && numeric(parts[i + 1])) continue;
          call(arrayPush, pipeline, { $unwind: { path: "$v", preserveNullAndEmptyArrays: true } }, { $match: present });
        }
        call(arrayPush, pipeline, { $group: { _id: "$v" } }, { $sort: { _id: 1 } });
        return call(promiseThen, action("aggregate", { pipeline }, options), (groups) => call(arrayMap, groups, (group) => group._id));
      },
      // One action after another; ordered (the default) stops at the first failure, unordered goes
      // on and then throws the first. Answers the driver's BulkWriteResult counts.
      bulkWrite,
      // The Node.js driver's bulk operation builders, as App Services offers them (its CRUD and
      // aggregation reference): insert, find(…).update/updateOne/replaceOne/upsert/delete/deleteOne,
      // execute — which runs the operations as bulkWrite runs them.
      initializeOrderedBulkOp: () => bulkOperation(true),
      initializeUnorderedBulkOp: () => bulkOperation(false),
    });

    function bulkOperation(ordered) {
      const operations = [];
      let executed = false;
      const add = (operation) => {
        call(arrayPush, operations, operation);
        return self;
      };
      const self = {
        get length() { return operations.length; },
        insert: (document) => add({ insertOne: { document } }),
        find(selector) {
          if (!isObject(selector)) throw new SafeTypeError("Bulk find operation must specify a selector");
          let upsert = false;
          let arrayFilters;
          const options = () => ({ ...(upsert ? { upsert: true } : {}), ...(arrayFilters !== undefined ? { arrayFilters } : {}) });
          const finder = {
            upsert() { upsert = true; return finder; },
            arrayFilters(filters) { arrayFilters = filters; return finder; },
            update: (update) => add({ updateMany: { filter: selector, update, ...options() } }),
            updateOne: (update) => add({ updateOne: { filter: selector, update, ...options() } }),
            replaceOne: (replacement) => add({ replaceOne: { filter: selector, replacement, ...options() } }),
            delete: () => add({ deleteMany: { filter: selector } }),
            deleteOne: () => add({ deleteOne: { filter: selector } }),
            remove: () => add({ deleteMany: { filter: selector } }),
            removeOne: () => add({ deleteOne: { filter: selector } }),
          };
          return freeze(finder);
        },
        async execute(options) {
          if (executed) throw new SafeError("This batch has already been executed, create new batch to execute");
          if (operations.length === 0) throw new SafeError("Invalid BulkOperation, Batch cannot be empty");
          executed = true;
          return bulkWrite(operations, { ...(isObject(options) ? options : {}), ordered });
        },
      };
      return freeze(self);
    }

    async function bulkWrite(operations, options) {
      if (!isArray(operations)) throw new SafeError("bulkWrite needs a list of operations");
      const ordered = opt(options, "ordered") !== false;
      // (The collection's schema is not checked: App Services' bulkWrite option.)
      const bypass = opt(options, "bypassDocumentValidation") === true;
      // (Each operation takes its own collation: the driver's bulkWrite has none of its own.)
      const each = isObject(options) ? { ...options, collation: undefined } : options;
      const result = { insertedCount: 0, matchedCount: 0, modifiedCount: 0, deletedCount: 0, upsertedCount: 0, insertedIds: {}, upsertedIds: {} };
      let failure;
      for (let i = 0; i < operations.length; i++) {
        try {
          await bulkStep((act, args) => action(act, bypass ? { ...args, bypassDocumentValidation: true } : args, each), operations[i], i, result);
        } catch (error) {
          if (ordered) throw error;
          if (failure === undefined) failure = error;
        }
      }
      if (failure !== undefined) throw failure;
      return result;
    }
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
      counted(await action(kind, { query: spec.filter, update: spec.update, upsert: spec.upsert, arrayFilters: spec.arrayFilters, collation: spec.collation }));
    } else if (kind === "replaceOne") {
      counted(await action("replaceOne", { query: spec.filter, update: spec.replacement, upsert: spec.upsert, collation: spec.collation }));
    } else if (kind === "deleteOne" || kind === "deleteMany") {
      result.deletedCount += SafeNumber((await action(kind, { query: spec.filter, collation: spec.collation })).deletedCount || 0);
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
  /** utils.jwt.decode's accepted signing methods, copied: an array of strings. */
  const methodsArg = (value) => {
    const what = "the accepted signing methods must be an array of strings";
    if (!isArray(value)) throw new SafeTypeError(what);
    const methods = [];
    for (let i = 0; i < value.length; i++) {
      if (typeof value[i] !== "string") throw new SafeTypeError(what);
      methods[i] = value[i];
    }
    return methods;
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
      encrypt: (type, message, key) =>
        binaryOf(cryptoCall("encrypt", { type, input: bytesArg(message, "the message"), key: bytesArg(key, "the key") })),
      decrypt: (type, encryptedMessage, key) =>
        binaryOf(cryptoCall("decrypt", { type, input: bytesArg(encryptedMessage, "the encrypted message"), key: bytesArg(key, "the key") })),
    }),
    jwt: freeze({
      encode: (method, payload, key, header) =>
        cryptoCall("jwtEncode", {
          method, payload: stringifyJson(payload === undefined ? {} : payload), key: textArg(key, "the secret"),
          header: isObject(header) ? parseJson(stringifyJson(header)) : undefined,
        }),
      decode: (token, key, returnHeader, acceptedSigningMethods) => {
        // (Its exp and nbf checked at the app's time: the app clock's.)
        const decoded = cryptoCall("jwtDecode", {
          token: textArg(token, "the token"), key: textArg(key, "the key"), now: appNow() / 1000,
          accepted: acceptedSigningMethods === undefined ? undefined : methodsArg(acceptedSigningMethods),
        });
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
    // (The response's body, a Binary, reads as text by BSON.Binary.prototype.text.)
    const action = (method) => (options) => request(callId, "http", { method, options });
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

${cryptoSource}
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
      // (As Node's: util.promisify(crypto.generateKeyPair) resolves both keys.)
      const custom = typeof util.promisify === "function" ? util.promisify.custom : undefined;
      if (custom !== undefined && !hasOwn(cryptoModule.generateKeyPair, custom)) {
        defineProperty(cryptoModule.generateKeyPair, custom, {
          value: (type, options) =>
            new SafePromise((resolve, reject) =>
              cryptoModule.generateKeyPair(type, options, (error, publicKey, privateKey) =>
                error ? reject(error) : resolve({ publicKey, privateKey }),
              ),
            ),
        });
      }
    }
    if (bare === "url") return urlModule();
    if (bare === "http" || bare === "https") return httpModule(bare === "https");
    if (bare === "net" || bare === "tls" || bare === "http2") return networkModule(bare);
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

${urlAndHttpSource}

  function makeContext(callId, callInfo) {
    const services = freeze({
      // (Another name: undefined, as the reference says.)
      get(name) {
        if (name !== app.service) return undefined;
        return freeze({
          db: (database) =>
            freeze({
              collection: (name_) => collection(callId, database, name_),
              // db.aggregate(): MongoDB's {aggregate: 1}, its pipeline beginning with $documents.
              aggregate: (pipeline, options) => collection(callId, database, undefined).aggregate(pipeline, options),
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
      runningAsSystem: () => callInfo.system === true,
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

  /**
   * A number in canonical Extended JSON as the emulator writes it (data/ejson-text.ts): the
   * library's rule, but an integer past 2^53 with its exact digits (the library writes
   * JavaScript's shortest, "3458764513820541000" for 3458764513820540928: read back, another
   * value) and 2^63, past Int64's range, as the double it is.
   */
  function numberText(value) {
    const negativeZero = objectIs(value, -0);
    if (isInteger(value) && !negativeZero) {
      if (value >= -2147483648 && value <= 2147483647) return '{"$numberInt":"' + SafeString(value) + '"}';
      if (value >= -(2 ** 63) && value < 2 ** 63)
        return '{"$numberLong":"' + SafeString(isSafeInteger(value) ? value : SafeBigInt(value)) + '"}';
      // (As the library writes a Double, as within a document: exactIntegers.)
      if (value === 2 ** 63) return ejsonStringify(new SafeDouble(value), { relaxed: false });
    }
    return '{"$numberDouble":"' + (negativeZero ? "-0.0" : SafeString(value)) + '"}';
  }

  /** Canonical Extended JSON of a value, its integers past 2^53 exact (see numberText). */
  function canonicalText(value) {
    const text = ejsonStringify(value, { relaxed: false });
    // (An Int64 text of 16 digits or more may be such a number's, written inexactly: then once more,
    // from a copy holding each as the library writes exactly.)
    if (typeof text !== "string" || call(stringIndexOf, text, '"$numberLong":"') === -1) return text;
    if (call(regExpExec, sixteenDigits, text) === null) return text;
    return ejsonStringify(exactIntegers(value), { relaxed: false });
  }
  const sixteenDigits = /"\\$numberLong":"-?\\d{16,}"/;

  /**
   * A copy of a value's arrays and plain objects with each integer past 2^53 (within Int64's
   * range) as a BigInt, which the library writes exactly, and 2^63 as a Double; other values as
   * they are.
   */
  function exactIntegers(value) {
    if (typeof value === "number") {
      if (!isInteger(value) || isSafeInteger(value) || value < -(2 ** 63) || value > 2 ** 63) return value;
      return value === 2 ** 63 ? new SafeDouble(value) : SafeBigInt(value);
    }
    if (value === null || typeof value !== "object") return value;
    if (isArray(value)) {
      const out = [];
      for (let i = 0; i < value.length; i++) out[i] = exactIntegers(value[i]);
      return out;
    }
    const prototype = getPrototypeOf(value);
    if (prototype !== ObjectPrototype && prototype !== null) return value;
    const out = {};
    const names = keys(value);
    for (let i = 0; i < names.length; i++) {
      defineProperty(out, names[i], { value: exactIntegers(value[names[i]]), writable: true, enumerable: true, configurable: true });
    }
    return out;
  }

  function finish(callId, result) {
    endTimers(callId);
    let text;
    try {
      // A number or a string, the commonest results, written without the library's tree of wrappers.
      if (typeof result === "number") text = numberText(result);
      else if (typeof result === "string") text = stringifyJson(result);
      else text = result === undefined ? '{"$undefined":true}' : canonicalText(result);
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
      return libraryRead(text);
    }
    if (call(stringIndexOf, text, "$") === -1 && call(stringIndexOf, text, "\\\\u") === -1) return value;
    const read = numbersRead(value);
    return read === needsLibrary ? libraryRead(text) : read;
  };

  /**
   * Extended JSON text as the library reads it (relaxed), but an Int64 past 2^53 a Long, as the
   * emulator holds it (decision 0040): the library's relaxed reading makes it the nearest double,
   * another value, which a function would then write back. (Its Int64s are read as BigInts and
   * made numbers within 2^53; a text with no Int64 of 16 digits or more, nor an escape that could
   * spell one's key, as the library reads it.)
   */
  function libraryRead(text) {
    if (call(regExpExec, longDigits, text) === null && call(stringIndexOf, text, "\\\\u") === -1)
      return ejsonParse(text, { relaxed: true });
    let read;
    try {
      read = ejsonParse(text, { relaxed: true, useBigInt64: true });
    } catch (error) {
      // (In the library's own words: its messages write the value out, which cannot hold a BigInt.)
      ejsonParse(text, { relaxed: true });
      throw error;
    }
    return longsExact(read);
  }
  const longDigits = /"\\$numberLong"\\s*:\\s*"[+-]?\\d{16,}"/;
  function longsExact(value) {
    if (typeof value === "bigint")
      return value >= -9007199254740991n && value <= 9007199254740991n
        ? SafeNumber(value)
        : call(longFromBigInt, SafeLong, value);
    if (value === null || typeof value !== "object") return value;
    if (isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = longsExact(value[i]);
      return value;
    }
    const prototype = getPrototypeOf(value);
    if (prototype === ObjectPrototype || prototype === null) {
      const names = keys(value);
      for (let i = 0; i < names.length; i++) value[names[i]] = longsExact(value[names[i]]);
    } else if (value._bsontype === "DBRef") {
      value.oid = longsExact(value.oid);
      longsExact(value.fields);
    } else if (value._bsontype === "Code" && value.scope) longsExact(value.scope);
    return value;
  }

  /**
   * Refuses {"$numberInt": "abc"}, "1.5" and "3000000000", which the library reads as numbers (cut,
   * wrapped) and the service's reader refuses, in its words (data/documents.ts: the same patterns).
   */
  function checkNumberStrings(text) {
    const bad = call(regExpExec, badNumberString, text);
    if (bad !== null) {
      let value = bad[2];
      try {
        value = parseJson('"' + value + '"');
      } catch {
        // (Its text as it is.)
      }
      const problem = strictFormProblem({ ["$number" + bad[1]]: value });
      if (problem !== null) throw new SafeError(problem);
    }
    // Past its type's range (the library would wrap it around).
    longNumberString.lastIndex = 0;
    for (let long = call(regExpExec, longNumberString, text); long !== null; long = call(regExpExec, longNumberString, text)) {
      const problem = strictFormProblem({ ["$number" + long[1]]: long[2] });
      if (problem !== null) throw new SafeError(problem);
    }
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
      // (A large body's arguments are checked as parsed: written again, a number past a double,
      // read as Infinity, would be null.)
      const read = message.inBody ? (parseJson(message.args).arguments ?? []) : undefined;
      const text = message.inBody ? stringifyJson(read) : message.args;
      checkNumberStrings(text);
      if (call(regExpExec, strictFormMarkers, message.args) !== null) {
        const problem = strictFormProblem(message.inBody ? read : parseJson(text));
        if (problem !== null) throw new SafeError(problem);
      }
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
      // (request, response): the request's body, a Binary, reads as text by BSON.Binary.prototype.text.
      const endpointRequest = args[0];
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
        message.request === undefined
          ? kept
          : { user: kept.user, system: kept.system, request: deepFreeze(fromText(message.request)) };
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
      value = libraryRead(message.text);
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
     * A run, a context, a delivery, the app clock's offset (sandbox.ts writes them: numbers each
     * ended by a comma, then texts of known length, the last one to the end) or forgetting the
     * contexts; never throws.
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
        } else if (kind === "t") {
          const offset = readNumbers(text, 1)[0];
          if (!numberIsNaN(offset)) clockOffset = offset;
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
