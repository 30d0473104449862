/**
 * Node's keys and signatures in functions (docs/decisions/0038): App Services has Node's crypto
 * but Diffie-Hellman and ECDH. KeyObject, createSecretKey, createPublicKey, createPrivateKey,
 * generateKeyPair(Sync), createSign, createVerify, sign and verify, each checked against this
 * process's own crypto; and the unchanged jsonwebtoken 9 (HS256, RS256, ES256) from an app folder.
 */
import {
  createCipheriv,
  createHmac,
  createPublicKey,
  createSign,
  createVerify,
  generateKeyPairSync,
  hkdfSync,
  sign as nodeSign,
  verify as nodeVerify,
  pbkdf2Sync,
  privateDecrypt,
  randomBytes,
  scryptSync,
} from "node:crypto";
import type { FastifyInstance } from "fastify";
import jwt from "jsonwebtoken";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, functionResult, testApp } from "../helpers/app.ts";
import { appFolderWithPackages } from "../helpers/app-folder.ts";

let app: FastifyInstance;
let token: string;
const appId = "keys-abcde";
const run = (name: string, ...args: unknown[]) => functionResult(app, appId, token, name, args);

const rsa = generateKeyPairSync("rsa", {
  modulusLength: 2048,
  publicKeyEncoding: { type: "spki", format: "pem" },
  privateKeyEncoding: { type: "pkcs8", format: "pem" },
});
const ed = generateKeyPairSync("ed25519", {
  publicKeyEncoding: { type: "spki", format: "pem" },
  privateKeyEncoding: { type: "pkcs8", format: "pem" },
});

const functions: Record<string, string> = {
  hmac: `exports = (secret, text) => {
    const crypto = require("crypto");
    const key = crypto.createSecretKey(Buffer.from(secret));
    return [key.type, key.symmetricKeySize, crypto.createHmac("sha256", key).update(text).digest("hex"), key.export().toString(), key.export({ format: "jwk" }).kty];
  };`,
  signatures: `exports = (privatePem, publicPem, text, theirs, edPrivate) => {
    const crypto = require("crypto");
    const mine = crypto.createSign("RSA-SHA256").update(text).sign(privatePem, "base64");
    const checked = crypto.createVerify("RSA-SHA256").update(text).verify(publicPem, theirs, "base64");
    const forged = crypto.createVerify("RSA-SHA256").update(text + "!").verify(publicPem, theirs, "base64");
    const pss = crypto.sign("sha256", Buffer.from(text), { key: privatePem, padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }).toString("base64");
    const edSignature = crypto.sign(null, Buffer.from(text), crypto.createPrivateKey(edPrivate)).toString("base64");
    return { mine, checked, forged, pss, edSignature };
  };`,
  keys: `exports = (privatePem) => {
    const crypto = require("crypto");
    const key = crypto.createPrivateKey(privatePem);
    const pub = crypto.createPublicKey(key);
    const refusals = [];
    for (const attempt of [() => crypto.createPrivateKey("not a key"), () => new crypto.KeyObject(), () => crypto.createHmac("sha256", key)]) {
      try { attempt(); refusals.push("none"); } catch (error) { refusals.push(error.code || error.message); }
    }
    return {
      types: [key.type, key.asymmetricKeyType, pub.type, key instanceof crypto.KeyObject, Object.prototype.toString.call(key)],
      modulusLength: key.asymmetricKeyDetails.modulusLength,
      exponent: String(key.asymmetricKeyDetails.publicExponent) + " " + typeof key.asymmetricKeyDetails.publicExponent,
      spki: pub.export({ type: "spki", format: "pem" }),
      jwk: pub.export({ format: "jwk" }),
      der: key.export({ type: "pkcs1", format: "der" }).length > 1000,
      equal: [pub.equals(crypto.createPublicKey(pub.export({ type: "spki", format: "pem" }))), key.equals(pub)],
      refusals,
    };
  };`,
  generated: `exports = async () => {
    const crypto = require("crypto");
    const { publicKey, privateKey } = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
    const signature = crypto.createSign("SHA256").update("x").sign(privateKey);
    const pem = await new Promise((resolve, reject) => crypto.generateKeyPair("rsa", {
      modulusLength: 1024, publicKeyEncoding: { type: "spki", format: "pem" }, privateKeyEncoding: { type: "pkcs8", format: "pem" },
    }, (error, pub, priv) => (error ? reject(error) : resolve([pub.slice(0, 26), priv.slice(0, 27)]))));
    const promised = await require("util").promisify(crypto.generateKeyPair)("ed25519");
    return [publicKey.asymmetricKeyDetails.namedCurve, crypto.createVerify("SHA256").update("x").verify(publicKey, signature), pem, [promised.publicKey.type, promised.privateKey.type]];
  };`,
  derive: `exports = async () => {
    const crypto = require("crypto");
    const pbkdf2 = crypto.pbkdf2Sync("password", "salt", 1000, 32, "sha256").toString("hex");
    const pbkdf2Async = await new Promise((resolve, reject) => crypto.pbkdf2("password", "salt", 1000, 32, "sha512", (e, key) => (e ? reject(e) : resolve(key.toString("hex")))));
    const scrypt = crypto.scryptSync("password", "salt", 32, { N: 1024 }).toString("hex");
    const hkdf = Buffer.from(crypto.hkdfSync("sha256", "key", "salt", "info", 16)).toString("hex");
    return { pbkdf2, pbkdf2Async, scrypt, hkdf };
  };`,
  ciphers: `exports = (key, iv, text, privatePem, publicPem) => {
    const crypto = require("crypto");
    const k = Buffer.from(key, "hex");
    const v = Buffer.from(iv, "hex");
    const cipher = crypto.createCipheriv("aes-256-cbc", k, v);
    const cbc = cipher.update(text, "utf8", "hex") + cipher.final("hex");
    const decipher = crypto.createDecipheriv("aes-256-cbc", k, v);
    const back = decipher.update(cbc, "hex", "utf8") + decipher.final("utf8");
    const gcm = crypto.createCipheriv("aes-256-gcm", k, v.subarray(0, 12));
    gcm.setAAD(Buffer.from("header"));
    const sealed = Buffer.concat([gcm.update(text), gcm.final()]);
    const tag = gcm.getAuthTag();
    const opened = crypto.createDecipheriv("aes-256-gcm", k, v.subarray(0, 12)).setAAD(Buffer.from("header")).setAuthTag(tag);
    const plain = Buffer.concat([opened.update(sealed), opened.final()]).toString();
    let tampered;
    try {
      const bad = crypto.createDecipheriv("aes-256-gcm", k, v.subarray(0, 12)).setAuthTag(tag);
      bad.update(sealed);
      bad.final();
    } catch (error) { tampered = error.message; }
    const encrypted = crypto.publicEncrypt(publicPem, Buffer.from(text)).toString("base64");
    return {
      cbc, back, sealed: sealed.toString("hex"), tag: tag.toString("hex"), plain, tampered,
      rsa: crypto.privateDecrypt(privatePem, Buffer.from(encrypted, "base64")).toString(),
      encrypted,
      lists: [crypto.getCiphers().includes("aes-256-gcm"), crypto.getCurves().includes("prime256v1")],
    };
  };`,
  jwt: `exports = (privatePem, publicPem) => {
    const jwt = require("jsonwebtoken");
    const out = {};
    const hs = jwt.sign({ sub: "ann" }, "a shared secret", { algorithm: "HS256", expiresIn: "1h" });
    out.hs = jwt.verify(hs, "a shared secret").sub;
    try { jwt.verify(hs, "another secret"); } catch (error) { out.wrongSecret = [error.name, error.message]; }
    const rs = jwt.sign({ sub: "bob" }, privatePem, { algorithm: "RS256", keyid: "k1" });
    out.rs = [jwt.verify(rs, publicPem, { algorithms: ["RS256"] }).sub, jwt.decode(rs, { complete: true }).header.kid];
    const { publicKey, privateKey } = require("crypto").generateKeyPairSync("ec", { namedCurve: "P-256" });
    out.es = jwt.verify(jwt.sign({ sub: "eve" }, privateKey, { algorithm: "ES256" }), publicKey).sub;
    const old = jwt.sign({ sub: "old", exp: Math.floor(Date.now() / 1000) - 60 }, "a shared secret");
    try { jwt.verify(old, "a shared secret"); } catch (error) { out.expired = error.name; }
    out.token = rs;
    return out;
  };`,
};

beforeAll(async () => {
  app = await testApp({ appDirs: [appFolderWithPackages(appId, functions, ["jsonwebtoken"])] });
  token = (await anonymousLogin(app, appId)).access_token as string;
});
afterAll(() => app?.close());

describe("Node's keys and signatures in a function", () => {
  it("makes secret keys that HMACs take", async () => {
    expect(await run("hmac", "s3cret", "hello")).toEqual([
      "secret",
      { $numberInt: "6" },
      createHmac("sha256", "s3cret").update("hello").digest("hex"),
      "s3cret",
      "oct",
    ]);
  });

  it("signs and verifies as this process's crypto does: RSA, RSA-PSS, Ed25519", async () => {
    const text = "the message";
    const theirs = createSign("RSA-SHA256").update(text).sign(rsa.privateKey, "base64");
    const result = await run("signatures", rsa.privateKey, rsa.publicKey, text, theirs, ed.privateKey);
    expect(result.checked).toBe(true);
    expect(result.forged).toBe(false);
    expect(createVerify("RSA-SHA256").update(text).verify(rsa.publicKey, result.mine, "base64")).toBe(true);
    expect(result.mine).toBe(theirs);
    expect(
      nodeVerify(
        "sha256",
        Buffer.from(text),
        { key: rsa.publicKey, padding: 6 /* RSA_PKCS1_PSS_PADDING */, saltLength: 32 },
        Buffer.from(result.pss, "base64"),
      ),
    ).toBe(true);
    expect(Buffer.from(result.edSignature, "base64")).toEqual(nodeSign(null, Buffer.from(text), ed.privateKey));
  });

  it("reads, describes and exports keys as KeyObjects, and refuses what is no key", async () => {
    const result = await run("keys", rsa.privateKey);
    expect(result).toEqual({
      types: ["private", "rsa", "public", true, "[object KeyObject]"],
      modulusLength: { $numberInt: "2048" },
      exponent: "65537 bigint",
      spki: rsa.publicKey,
      jwk: createPublicKey(rsa.publicKey).export({ format: "jwk" }),
      der: true,
      equal: [true, false],
      refusals: [expect.stringMatching(/^ERR_/), "ERR_ILLEGAL_CONSTRUCTOR", "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE"],
    });
  });

  it("generates key pairs, as KeyObjects or exported, and through util.promisify as Node's", async () => {
    expect(await run("generated")).toEqual([
      "prime256v1",
      true,
      ["-----BEGIN PUBLIC KEY-----", "-----BEGIN PRIVATE KEY-----"],
      ["public", "private"],
    ]);
  });

  it("derives keys with pbkdf2, scrypt and hkdf as this process's crypto does", async () => {
    expect(await run("derive")).toEqual({
      pbkdf2: pbkdf2Sync("password", "salt", 1000, 32, "sha256").toString("hex"),
      pbkdf2Async: pbkdf2Sync("password", "salt", 1000, 32, "sha512").toString("hex"),
      scrypt: scryptSync("password", "salt", 32, { N: 1024 }).toString("hex"),
      hkdf: Buffer.from(hkdfSync("sha256", "key", "salt", "info", 16)).toString("hex"),
    });
  });

  it("encrypts and decrypts with ciphers (CBC, GCM with its tag) and RSA as this process's crypto does", async () => {
    const key = randomBytes(32);
    const iv = randomBytes(16);
    const text = "a secret note";
    const result = await run("ciphers", key.toString("hex"), iv.toString("hex"), text, rsa.privateKey, rsa.publicKey);
    const cipher = createCipheriv("aes-256-cbc", key, iv);
    const gcm = createCipheriv("aes-256-gcm", key, iv.subarray(0, 12)).setAAD(Buffer.from("header"));
    const sealed = Buffer.concat([gcm.update(text), gcm.final()]);
    expect(result).toEqual({
      cbc: cipher.update(text, "utf8", "hex") + cipher.final("hex"),
      back: text,
      sealed: sealed.toString("hex"),
      tag: gcm.getAuthTag().toString("hex"),
      plain: text,
      tampered: "Unsupported state or unable to authenticate data",
      rsa: text,
      encrypted: expect.any(String),
      lists: [true, true],
    });
    expect(privateDecrypt(rsa.privateKey, Buffer.from(result.encrypted, "base64")).toString()).toBe(text);
  });
});

describe("jsonwebtoken in a function, unchanged", () => {
  it("signs and verifies HS256, RS256 and ES256 tokens, and refuses bad and expired ones", async () => {
    const result = await run("jwt", rsa.privateKey, rsa.publicKey);
    expect(result).toMatchObject({
      hs: "ann",
      wrongSecret: ["JsonWebTokenError", "invalid signature"],
      rs: ["bob", "k1"],
      es: "eve",
      expired: "TokenExpiredError",
    });
    // Its RS256 token is one any other verifier takes.
    expect(jwt.verify(result.token, rsa.publicKey, { algorithms: ["RS256"] })).toMatchObject({ sub: "bob" });
  });
});
