/**
 * More of Node in functions (docs/decisions/0038), as App Services lists it for functions: the
 * `process` global (hrtime, nextTick, version, versions), the `tty` module, and crypto's random
 * fills (`randomFillSync`, `randomFill`, `getRandomValues`) — what packages such as debug, chalk,
 * nanoid and uuid call when they load or run.
 */
import { describe, expect, it } from "vitest";
import { functionsRunner } from "../helpers/app.ts";

const functions: Record<string, string> = {
  process: `exports = async () => {
    const start = process.hrtime();
    const ticked = await new Promise((resolve) => process.nextTick((a, b) => resolve(a + b), 1, 2));
    const elapsed = process.hrtime(start);
    return {
      type: typeof process,
      version: process.version,
      node: process.versions.node,
      ticked,
      hrtime: [Array.isArray(start), start.length, Number.isInteger(start[0]), start[1] >= 0 && start[1] < 1e9],
      elapsed: elapsed[0] >= 0 && elapsed[1] >= 0 && elapsed[1] < 1e9,
      bigint: typeof process.hrtime.bigint(),
      env: Object.keys(process.env),
      stderr: [process.stderr.fd, process.stderr.isTTY, process.stderr.write("nowhere")],
      frozen: (() => { try { process.version = "v0"; } catch (error) {} return process.version === "v0"; })(),
    };
  };`,
  tty: `exports = () => {
    const tty = require("tty");
    let refused;
    try { new tty.WriteStream(1); } catch (error) { refused = error.message; }
    return [tty.isatty(1), tty.isatty(2), refused];
  };`,
  fill: `exports = async () => {
    const crypto = require("crypto");
    const buf = Buffer.alloc(16);
    const same = crypto.randomFillSync(buf) === buf;
    const part = crypto.randomFillSync(Buffer.alloc(8), 2, 4);
    const large = crypto.randomFillSync(new Uint8Array(200000));
    const view = crypto.randomFillSync(new Uint32Array(4));
    const async = await new Promise((resolve, reject) => crypto.randomFill(Buffer.alloc(8), (error, b) => (error ? reject(error) : resolve(b.length))));
    const values = crypto.getRandomValues(new Uint16Array(8));
    const refusals = [];
    for (const attempt of [
      () => crypto.randomFillSync("text"),
      () => crypto.randomFillSync(Buffer.alloc(4), 5),
      () => crypto.randomFillSync(Buffer.alloc(4), 1, 4),
      () => crypto.getRandomValues(new Float32Array(2)),
      () => crypto.getRandomValues(new Uint8Array(65537)),
    ]) {
      try { attempt(); refusals.push("none"); } catch (error) { refusals.push(error.name + " " + (error.code ?? "")); }
    }
    return {
      same,
      zeroed: [part[0], part[1], part[6], part[7]],
      untouched: part.subarray(2, 6).some((b) => b !== 0),
      large: large.subarray(199000).some((b) => b !== 0),
      view: view.some((v) => v !== 0),
      async,
      values: values.length === 8 && values.some((v) => v !== 0),
      webcrypto: crypto.webcrypto.getRandomValues(new Uint8Array(4)).length,
      refusals,
    };
  };`,
};

const run = functionsRunner(functions);

describe("Node's process, tty and random fills in a function", () => {
  it("has a process global: hrtime, nextTick, version and versions, read-only", async () => {
    expect(await run("process")).toEqual({
      type: "object",
      version: process.version,
      node: process.versions.node,
      ticked: { $numberInt: "3" },
      hrtime: [true, { $numberInt: "2" }, true, true],
      elapsed: true,
      bigint: "bigint",
      env: [],
      stderr: [{ $numberInt: "2" }, false, true],
      frozen: false,
    });
  });

  it("has Node's tty module: nothing is a terminal", async () => {
    expect(await run("tty")).toEqual([false, false, "tty.WriteStream is not implemented"]);
  });

  it("fills buffers and typed arrays with random bytes as Node's crypto does, with its refusals", async () => {
    expect(await run("fill")).toEqual({
      same: true,
      zeroed: [0, 0, 0, 0].map((n) => ({ $numberInt: String(n) })),
      untouched: true,
      large: true,
      view: true,
      async: { $numberInt: "8" },
      values: true,
      webcrypto: { $numberInt: "4" },
      refusals: [
        "TypeError ERR_INVALID_ARG_TYPE",
        "RangeError ERR_OUT_OF_RANGE",
        "RangeError ERR_OUT_OF_RANGE",
        "TypeMismatchError 17",
        "QuotaExceededError 22",
      ],
    });
  });
});
