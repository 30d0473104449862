/**
 * require() in a function: Node's buffer, crypto (hashes and HMACs of any digest Node has, random
 * bytes and UUIDs, a constant-time comparison) and timers modules; Node's modules not offered are
 * refused in words, a package the app lacks is not found (modules.test.ts has the packages).
 */
import { createHash, createHmac } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appOfFunctions, callAppFunction } from "../helpers/app.ts";

let app: FastifyInstance;
let appId: string;
let token: string;
let run: (name: string, ...args: unknown[]) => Promise<any>;

const functions: Record<string, string> = {
  // A webhook's signature, as functions check them.
  signature: `exports = (body, secret) => {
    const crypto = require("crypto");
    const hex = crypto.createHmac("sha256", secret).update(body).digest("hex");
    return {
      hex,
      base64: crypto.createHmac("SHA256", Buffer.from(secret)).update(Buffer.from(body)).digest("base64"),
      sha512: require("node:crypto").createHash("sha512").update("a").update("b").digest("hex"),
      md5: crypto.createHash("md5").update(body, "utf8").digest().toString("hex"),
      matches: crypto.timingSafeEqual(Buffer.from(hex), Buffer.from(hex)),
      differs: crypto.timingSafeEqual(Buffer.from("ab"), Buffer.from("ac")),
    };
  };`,
  random: `exports = async () => {
    const crypto = require("crypto");
    const bytes = crypto.randomBytes(32);
    const later = await new Promise((resolve) => crypto.randomBytes(8, (error, b) => resolve(b.length)));
    return { length: bytes.length, other: !bytes.equals(crypto.randomBytes(32)), later, uuid: crypto.randomUUID() };
  };`,
  others: `exports = async () => {
    const { Buffer: B } = require("buffer");
    const timers = require("timers");
    await new Promise((resolve) => timers.setTimeout(resolve, 1));
    return { sameBuffer: B === Buffer, hashes: require("crypto").getHashes().includes("sha256") };
  };`,
  mistakes: `exports = () => {
    const crypto = require("crypto");
    const out = {};
    const attempt = (name, work) => { try { work(); out[name] = "ok"; } catch (error) { out[name] = error.message; } };
    attempt("digest", () => crypto.createHash("nope"));
    attempt("hmacDigest", () => crypto.createHmac("nope", "k"));
    attempt("twice", () => { const h = crypto.createHash("sha1"); h.digest(); h.digest(); });
    attempt("lengths", () => crypto.timingSafeEqual(Buffer.from("a"), Buffer.from("ab")));
    attempt("size", () => crypto.randomBytes(1e9));
    attempt("data", () => crypto.createHash("sha1").update(42));
    return out;
  };`,
  lodash: `exports = () => require("lodash/cloneDeep")({ a: 1 });`,
  fs: `exports = () => require("node:child_process").execSync("id");`,
  noFiles: `exports = () => { try { return require("fs").readFileSync("/etc/passwd"); } catch (error) { return [error.code, error.syscall, error.message]; } };`,
};

beforeAll(async () => {
  ({ app, appId, token, run } = await appOfFunctions(functions));
});
afterAll(() => app.close());

describe("require() in a function", () => {
  it("gives Node's crypto: HMACs and hashes of any digest, as Node computes them", async () => {
    const body = '{"event":"paid"}';
    const secret = "whsec_test";
    const hex = createHmac("sha256", secret).update(body).digest("hex");
    expect(await run("signature", body, secret)).toEqual({
      hex,
      base64: createHmac("sha256", secret).update(body).digest("base64"),
      sha512: createHash("sha512").update("ab").digest("hex"),
      md5: createHash("md5").update(body).digest("hex"),
      matches: true,
      differs: false,
    });
  });

  it("gives random bytes and UUIDs", async () => {
    const random = await run("random");
    expect(random).toMatchObject({ length: { $numberInt: "32" }, other: true, later: { $numberInt: "8" } });
    expect(random.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("gives the buffer and timers modules", async () => {
    expect(await run("others")).toEqual({ sameBuffer: true, hashes: true });
  });

  it("answers mistakes in Node's words", async () => {
    expect(await run("mistakes")).toEqual({
      digest: "Digest method not supported",
      hmacDigest: "Invalid digest: nope",
      twice: "Digest already called",
      lengths: "Input buffers must have the same byte length",
      size: 'The value of "size" is out of range. It must be >= 0 && <= 65536. Received 1000000000',
      data: 'The "data" argument must be of type string or an instance of Buffer, TypedArray, or DataView.',
    });
  });

  it("says that Node's other built-in modules are not run here, and finds no package the app lacks", async () => {
    const fs = await callAppFunction(app, appId, token, "fs", []);
    expect(fs.response.statusCode).toBe(400);
    expect(fs.body).toMatchObject({
      error_code: "FunctionExecutionError",
      error:
        "Error: require(\"node:child_process\") is not supported by this server: functions have Node's assert, buffer, crypto, events, fs, http, http2, https, net, os, path, punycode, querystring, stream, string_decoder, timers, tls, tty, url, util and zlib modules, and the packages of their app's functions/node_modules",
    });
    // fs is App Services' part of it, over no files.
    expect((await callAppFunction(app, appId, token, "noFiles", [])).body).toEqual([
      "ENOENT",
      "open",
      "ENOENT: no such file or directory, open '/etc/passwd'",
    ]);
    const lodash = await callAppFunction(app, appId, token, "lodash", []);
    expect(lodash.body).toMatchObject({ error: "Error: Cannot find module 'lodash/cloneDeep'" });
  });
});
