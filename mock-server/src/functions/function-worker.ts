/**
 * The code of an app's function worker (a `worker_threads` worker, started from this text so it
 * runs the same from the sources and from the bundle). It holds the app's `node:vm` context with
 * the BSON library and the bridge, runs calls as the main thread asks, and passes the bridge's
 * requests (MongoDB actions, other functions, logs, results) back as messages. The main thread
 * keeps the deadlines: a worker stuck in a loop is terminated, never waited for.
 *
 * Nothing of this (the worker's) realm may reach function code: its `Function` compiles strings
 * and leads to `process`. So this code hands the context only strings and numbers (and the one
 * closure-held `hostCall`), takes back only strings, and never calls or reads anything function
 * code could have made (docs/decisions/0010-function-code-on-the-host.md). The worker runs with
 * `--experimental-vm-modules` only so that a dynamic `import()` in the context can be refused
 * with an error of the context's own (without the flag, Node 20 refuses with one of this realm).
 */
export const workerSource = String.raw`"use strict";
const { parentPort, workerData } = require("node:worker_threads");
const vm = require("node:vm");
const { readFileSync } = require("node:fs");
const { types } = require("node:util");

// A prototype-less global and no string compilation: the context's own constructors lead nowhere.
const context = vm.createContext(Object.create(null), {
  name: workerData.name,
  codeGeneration: { strings: false, wasm: false },
});
let bridge = null;
const importModuleDynamically = () => {
  throw bridge.refuseImport();
};
const load = (source, filename) => new vm.Script(source, { filename, importModuleDynamically }).runInContext(context);
// The context's error classes, taken before any function runs: a compile error is named by its
// prototype, without reading a property of it.
const errorNames = new Map(
  load('["Error", "SyntaxError", "RangeError", "ReferenceError", "TypeError"].map((name) => [globalThis[name].prototype, name])', "functions-setup.js"),
);
for (const E of [Error, SyntaxError, RangeError, ReferenceError, TypeError]) errorNames.set(E.prototype, E.name);
load(readFileSync(workerData.bsonBundlePath, "utf8"), "bson.bundle.js");
// Messages both ways are strings (cheaper to pass between threads than objects), or arrays of them:
// to the main thread "kind\u0000callId\u0000pendingId\u0000text"; from it, the JSON the bridge reads.
// Outgoing ones are sent together once per turn of the worker's event loop (each message to a
// sleeping thread wakes it: batches cost one thread switch instead of one per call).
let outbox = [];
let flushing = false;
const flush = () => {
  flushing = false;
  const batch = outbox;
  outbox = [];
  if (batch.length > 0) parentPort.postMessage(batch.length === 1 ? batch[0] : batch);
};
const hostCall = (kind, callId, pendingId, text) => {
  if (typeof kind === "string" && typeof callId === "number" && typeof text === "string") {
    outbox.push(kind + "\u0000" + callId + "\u0000" + (typeof pendingId === "number" ? pendingId : 0) + "\u0000" + text);
    if (!flushing) {
      flushing = true;
      setImmediate(flush);
    }
  }
};
bridge = load(workerData.bootstrapSource, "functions-bridge.js")(hostCall, workerData.appText);
// Node's own handling of a stray rejection or an uncaught exception formats the value with
// util.inspect in this realm, which calls the value's custom inspect function with this realm's
// \`inspect\`: function code must never get there. A rejection nobody handles is dropped (the call
// that made it answers as it does anyway); an uncaught exception (a FinalizationRegistry callback
// that throws) stops the worker, unread, and the main thread fails the worker's calls.
process.on("unhandledRejection", () => undefined);
process.on("uncaughtException", () => {
  parentPort.postMessage("fatal\u00000\u00000\u0000a function threw outside of its call; the app's functions were restarted");
  process.exit(1);
});
const { define, defineFailed, dispatch } = bridge;

/** A compile error's text, read from V8's own error: its own message and its class's name. */
function compileErrorText(error) {
  if (!types.isNativeError(error) || types.isProxy(error)) return ["SyntaxError", "the function does not compile"];
  const message = Object.getOwnPropertyDescriptor(error, "message");
  return [
    errorNames.get(Object.getPrototypeOf(error)) || "Error",
    message && typeof message.value === "string" ? message.value : "",
  ];
}

parentPort.on("message", (message) => {
  // A run or a delivery for the bridge (which never throws).
  if (typeof message === "string") return dispatch(message);
  if (Array.isArray(message)) {
    for (const one of message) dispatch(one);
    return;
  }
  if (message.type === "define") {
    let factory;
    try {
      factory = vm.compileFunction(message.body, message.parameters, {
        parsingContext: context,
        filename: "functions/" + message.name + ".js",
        importModuleDynamically,
      });
    } catch (error) {
      // The factory, made in the context, throws the compile error's name and message on every call.
      const [name, text] = compileErrorText(error);
      defineFailed(message.key, name, text);
      return;
    }
    define(message.key, factory);
  } else if (message.type === "ping") {
    parentPort.postMessage("pong\u00000\u00000\u0000");
  }
});
`;
