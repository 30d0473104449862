/**
 * The code of an app's function worker (a `worker_threads` worker, started from this text so it
 * runs the same from the sources and from the bundle). It holds the app's `node:vm` context with
 * the BSON library and the bridge, runs calls as the main thread asks, and passes the bridge's
 * requests (MongoDB actions, other functions, logs, results) back as messages. The main thread
 * keeps the deadlines: a worker stuck in a loop is terminated, never waited for.
 */
export const workerSource = String.raw`"use strict";
const { parentPort, workerData } = require("node:worker_threads");
const vm = require("node:vm");
const { readFileSync } = require("node:fs");

function errorText(error) {
  if (error && typeof error === "object" && "message" in error) {
    return (typeof error.name === "string" ? error.name + ": " : "") + String(error.message);
  }
  return String(error);
}

// A prototype-less global and no string compilation: the context's own constructors lead nowhere.
const context = vm.createContext(Object.create(null), {
  name: workerData.name,
  codeGeneration: { strings: false, wasm: false },
});
new vm.Script(readFileSync(workerData.bsonBundlePath, "utf8"), { filename: "bson.bundle.js" }).runInContext(context);
const bootstrap = new vm.Script(workerData.bootstrapSource, { filename: "functions-bridge.js" }).runInContext(context);
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
const bridge = bootstrap(hostCall, workerData.appText);

const dispatch = (message) => {
  // A run or a delivery for the bridge.
  try {
    bridge.dispatch(message);
  } catch (error) {
    hostCall("error", 0, 0, errorText(error));
  }
};

parentPort.on("message", (message) => {
  if (typeof message === "string") return dispatch(message);
  if (Array.isArray(message)) {
    for (const one of message) dispatch(one);
    return;
  }
  try {
    if (message.type === "define") {
      const factory = new vm.Script(message.source, { filename: "functions/" + message.name + ".js", lineOffset: -1 }).runInContext(context);
      bridge.define(message.key, factory);
    } else if (message.type === "ping") {
      parentPort.postMessage("pong\u00000\u00000\u0000");
    }
  } catch (error) {
    // The factory throws the compile error's name and message on every call (only the bridge sees it).
    const name = String(error && error.name);
    const text = String(error && error.message);
    bridge.define(message.key, () => {
      throw { name, message: text };
    });
  }
});
`;
