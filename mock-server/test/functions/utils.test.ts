/**
 * `utils.crypto` and `utils.jwt`, the App Services globals, answered at once (synchronously) by
 * the function's process: hashes, HMACs, RSA signatures and JSON Web Tokens as Node's crypto makes
 * and checks them; AES encryption as the service sealed it (its own example opens).
 */
import {
  createDecipheriv,
  createHash,
  createHmac,
  generateKeyPairSync,
  constants as rsa,
  sign,
  verify,
} from "node:crypto";
import { EJSON } from "bson";
import { describe, expect, it } from "vitest";
import type { FunctionSource } from "../../src/functions/function-folder.ts";
import { testSandbox } from "../helpers/sandbox.ts";

const sandbox = testSandbox("utils");

let made = 0;
/** Runs `source` with `args`: what it returned (relaxed Extended JSON), or `{thrown: message}`. */
async function run(source: string, ...args: unknown[]): Promise<unknown> {
  const fn: FunctionSource = {
    name: `f${++made}`,
    source: `exports = (...args) => { try { return (${source})(...args); } catch (error) { return { thrown: error.message }; } };`,
    private: false,
    runAsSystem: false,
    origin: "config",
    version: `test:utils:${made}`,
  };
  const { result } = sandbox.run({
    fn,
    argsText: EJSON.stringify(args, { relaxed: false }),
    callText: '{"user":{},"request":{}}',
    deadline: Date.now() + 10_000,
  });
  return EJSON.parse(await result, { relaxed: true });
}

const { privateKey, publicKey } = generateKeyPairSync("rsa", {
  modulusLength: 2048,
  privateKeyEncoding: { type: "pkcs8", format: "pem" },
  publicKeyEncoding: { type: "spki", format: "pem" },
});
const b64 = (text: string) => Buffer.from(text).toString("base64url");

describe("utils.crypto", () => {
  it("hashes a string or a Binary into a Binary", async () => {
    expect(await run(`(text) => utils.crypto.hash("sha256", text).toString("base64")`, "abc é")).toBe(
      createHash("sha256").update("abc é").digest("base64"),
    );
    expect(
      await run(`() => utils.crypto.hash("md5", new BSON.Binary(new Uint8Array([1, 2, 3]))).toString("hex")`),
    ).toBe(
      createHash("md5")
        .update(Buffer.from([1, 2, 3]))
        .digest("hex"),
    );
    expect(await run(`() => utils.crypto.hash("sha1", "x") instanceof BSON.Binary`)).toBe(true);
    for (const name of ["sha3", "constructor", "__proto__"]) {
      expect(await run(`(name) => utils.crypto.hash(name, "x")`, name)).toEqual({
        thrown: `the hash function must be sha1, sha256, sha512 or md5, not '${name}'`,
      });
    }
  });

  it("makes HMACs in hex or base64, as a webhook's signature is checked", async () => {
    const body = '{"event":"paid"}';
    expect(await run(`(body) => utils.crypto.hmac(body, "whsec", "sha256", "hex")`, body)).toBe(
      createHmac("sha256", "whsec").update(body).digest("hex"),
    );
    expect(await run(`(body) => utils.crypto.hmac(body, "whsec", "sha512", "base64")`, body)).toBe(
      createHmac("sha512", "whsec").update(body).digest("base64"),
    );
    expect(await run(`() => utils.crypto.hmac("a", "b", "sha256", "binary")`)).toEqual({
      thrown: "the output format must be hex or base64, not 'binary'",
    });
    expect(await run(`() => utils.crypto.hmac({}, "b", "sha256", "hex")`)).toEqual({
      thrown: "the input must be a string or a BSON.Binary",
    });
  });

  it("signs and verifies with RSA, PKCS #1 v1.5 or PSS", async () => {
    const signed = (await run(
      `(key) => utils.crypto.sign("rsa", "message", key, "pkcs1v1.5").toString("base64")`,
      privateKey,
    )) as string;
    expect(verify("sha256", Buffer.from("message"), publicKey, Buffer.from(signed, "base64"))).toBe(true);
    const pss = sign("sha256", Buffer.from("message"), {
      key: privateKey,
      padding: rsa.RSA_PKCS1_PSS_PADDING,
      saltLength: rsa.RSA_PSS_SALTLEN_DIGEST,
    });
    const check = `(key, signature, message) => utils.crypto.verify("rsa", message, key, BSON.Binary.createFromBase64(signature), "pss")`;
    expect(await run(check, publicKey, pss.toString("base64"), "message")).toBe(true);
    expect(await run(check, publicKey, pss.toString("base64"), "massage")).toBe(false);
  });

  it("names PKCS #1 v1.5 pkcs1v15 and signs with PSS when no scheme is given, as the reference says", async () => {
    const pkcs1 = (await run(
      `(key) => utils.crypto.sign("rsa", "message", key, "pkcs1v15").toString("base64")`,
      privateKey,
    )) as string;
    expect(verify("sha256", Buffer.from("message"), publicKey, Buffer.from(pkcs1, "base64"))).toBe(true);
    const unnamed = (await run(
      `(key) => utils.crypto.sign("rsa", "message", key).toString("base64")`,
      privateKey,
    )) as string;
    const pss = { key: publicKey, padding: rsa.RSA_PKCS1_PSS_PADDING, saltLength: rsa.RSA_PSS_SALTLEN_DIGEST };
    expect(verify("sha256", Buffer.from("message"), pss, Buffer.from(unnamed, "base64"))).toBe(true);
    const check = `(key, signature, scheme) => scheme === undefined
      ? utils.crypto.verify("rsa", "message", key, BSON.Binary.createFromBase64(signature))
      : utils.crypto.verify("rsa", "message", key, BSON.Binary.createFromBase64(signature), scheme)`;
    expect(await run(check, publicKey, unnamed)).toBe(true);
    expect(await run(check, publicKey, pkcs1, "pkcs1v15")).toBe(true);
    expect(await run(check, publicKey, pkcs1)).toBe(false);
    expect(await run(`(key) => utils.crypto.sign("rsa", "m", key, "oaep")`, privateKey)).toEqual({
      thrown: "the signature scheme must be pss or pkcs1v15, not 'oaep'",
    });
  });

  it("decrypts the reference's own example, and encrypts as it was made (AES-GCM, nonce first, tag last)", async () => {
    // The reference's utils.crypto.encrypt/decrypt example: its key, and the base64 it printed.
    const key = "603082712271C525E087BD999A4E0738";
    const example = "WPBuIvJ6Bity43Uh822dW8QlVYVJaFUiDeUjlTiJXzptUuTYIKPlXekBQAJb";
    const decrypt = `(sealed, key) => utils.crypto.decrypt("aes", BSON.Binary.fromBase64(sealed), key).text()`;
    expect(await run(decrypt, example, key)).toBe("MongoDB is great!");
    const sealed = (await run(
      `(key) => utils.crypto.encrypt("aes", "MongoDB is great!", key).toBase64()`,
      key,
    )) as string;
    expect(Buffer.from(sealed, "base64")).toHaveLength(12 + 17 + 16);
    expect(sealed).not.toBe(example); // (a nonce of its own)
    const raw = Buffer.from(sealed, "base64");
    const opened = createDecipheriv("aes-256-gcm", Buffer.from(key), raw.subarray(0, 12)).setAuthTag(raw.subarray(-16));
    expect(Buffer.concat([opened.update(raw.subarray(12, -16)), opened.final()]).toString()).toBe("MongoDB is great!");
    // AES-128 and -192 by the key's length; Go's words for a bad key or a message that does not open.
    for (const size of [16, 24]) {
      const roundTrip = `(key) => utils.crypto.decrypt("aes", utils.crypto.encrypt("aes", "short", key), key).text()`;
      expect(await run(roundTrip, "k".repeat(size))).toBe("short");
    }
    expect(await run(decrypt, example, "0".repeat(32))).toEqual({ thrown: "cipher: message authentication failed" });
    expect(await run(decrypt, "AAAA", key)).toEqual({ thrown: "cipher: message authentication failed" });
    expect(await run(`() => utils.crypto.encrypt("aes", "x", "short key")`)).toEqual({
      thrown: "crypto/aes: invalid key size 9",
    });
    expect(await run(`() => utils.crypto.encrypt("des", "x", "k".repeat(16))`)).toEqual({
      thrown: "the encryption type must be aes, not 'des'",
    });
  });
});

describe("utils.jwt", () => {
  it("encodes HS256 and RS256 tokens others can check, with custom header fields", async () => {
    const token = (await run(
      `() => utils.jwt.encode("HS256", { sub: "ann", n: 1 }, "secret", { kid: "k1" })`,
    )) as string;
    const [header, payload, signature] = token.split(".");
    expect(JSON.parse(Buffer.from(header!, "base64url").toString())).toEqual({ kid: "k1", alg: "HS256", typ: "JWT" });
    expect(JSON.parse(Buffer.from(payload!, "base64url").toString())).toEqual({ sub: "ann", n: 1 });
    expect(signature).toBe(createHmac("sha256", "secret").update(`${header}.${payload}`).digest("base64url"));
    const rs = ((await run(`(key) => utils.jwt.encode("RS256", { sub: "ann" }, key)`, privateKey)) as string).split(
      ".",
    );
    expect(verify("sha256", Buffer.from(`${rs[0]}.${rs[1]}`), publicKey, Buffer.from(rs[2]!, "base64url"))).toBe(true);
  });

  it("decodes a token it can verify, and refuses the others", async () => {
    const input = `${b64('{"alg":"HS256","typ":"JWT"}')}.${b64('{"sub":"ann","exp":4102444800}')}`;
    const token = `${input}.${createHmac("sha256", "secret").update(input).digest("base64url")}`;
    expect(await run(`(token) => utils.jwt.decode(token, "secret")`, token)).toEqual({ sub: "ann", exp: 4102444800 });
    expect(await run(`(token) => utils.jwt.decode(token, "secret", true)`, token)).toEqual({
      header: { alg: "HS256", typ: "JWT" },
      payload: { sub: "ann", exp: 4102444800 },
    });
    expect(await run(`(token) => utils.jwt.decode(token, "other")`, token)).toEqual({ thrown: "signature is invalid" });
    const expiredInput = `${b64('{"alg":"HS256"}')}.${b64('{"exp":1}')}`;
    const expired = `${expiredInput}.${createHmac("sha256", "s").update(expiredInput).digest("base64url")}`;
    expect(await run(`(token) => utils.jwt.decode(token, "s")`, expired)).toEqual({ thrown: "token is expired" });
    for (const alg of ["none", "constructor", "toString"]) {
      const token = `${b64(JSON.stringify({ alg }))}.${b64("{}")}.`;
      expect(await run(`(token) => utils.jwt.decode(token, "s")`, token)).toEqual({
        thrown: "signing method (alg) is unavailable",
      });
    }
    expect(await run(`() => utils.jwt.decode("not a token", "s")`)).toEqual({ thrown: "token is malformed" });
  });

  it("encodes and decodes the reference's ES and PS methods, tokens others can check", async () => {
    const curves = { ES256: ["prime256v1", "sha256"], ES384: ["secp384r1", "sha384"], ES512: ["secp521r1", "sha512"] };
    for (const [method, [namedCurve, hash]] of Object.entries(curves)) {
      const ec = generateKeyPairSync("ec", {
        namedCurve: namedCurve!,
        privateKeyEncoding: { type: "pkcs8", format: "pem" },
        publicKeyEncoding: { type: "spki", format: "pem" },
      });
      const token = (await run(
        `(key, method) => utils.jwt.encode(method, { sub: "ann" }, key)`,
        ec.privateKey,
        method,
      )) as string;
      const [header, payload, signature] = token.split(".");
      expect(JSON.parse(Buffer.from(header!, "base64url").toString())).toEqual({ alg: method, typ: "JWT" });
      // (JWS's form: r and s side by side, not DER.)
      const key = { key: ec.publicKey, dsaEncoding: "ieee-p1363" as const };
      expect(verify(hash!, Buffer.from(`${header}.${payload}`), key, Buffer.from(signature!, "base64url"))).toBe(true);
      expect(await run(`(token, key) => utils.jwt.decode(token, key)`, token, ec.publicKey)).toEqual({ sub: "ann" });
    }
    for (const [method, hash] of [
      ["PS256", "sha256"],
      ["PS384", "sha384"],
      ["PS512", "sha512"],
    ] as const) {
      const token = (await run(
        `(key, method) => utils.jwt.encode(method, { sub: "ann" }, key)`,
        privateKey,
        method,
      )) as string;
      const [header, payload, signature] = token.split(".");
      const key = { key: publicKey, padding: rsa.RSA_PKCS1_PSS_PADDING, saltLength: rsa.RSA_PSS_SALTLEN_DIGEST };
      expect(verify(hash, Buffer.from(`${header}.${payload}`), key, Buffer.from(signature!, "base64url"))).toBe(true);
      expect(await run(`(token, key) => utils.jwt.decode(token, key)`, token, publicKey)).toEqual({ sub: "ann" });
    }
  });

  it("decodes only a token of the accepted signing methods, when they are given", async () => {
    const input = `${b64('{"alg":"HS512","typ":"JWT"}')}.${b64('{"sub":"ann"}')}`;
    const token = `${input}.${createHmac("sha512", "secret").update(input).digest("base64url")}`;
    const decode = `(token, methods) => utils.jwt.decode(token, "secret", false, methods)`;
    expect(await run(decode, token, ["HS512"])).toEqual({ sub: "ann" });
    expect(await run(decode, token, ["PS256", "HS512"])).toEqual({ sub: "ann" });
    expect(await run(decode, token, ["HS256"])).toEqual({ thrown: "signing method HS512 is invalid" });
    expect(await run(decode, token, [])).toEqual({ thrown: "signing method HS512 is invalid" });
    expect(await run(decode, token, "HS512")).toEqual({
      thrown: "the accepted signing methods must be an array of strings",
    });
  });
});
