/**
 * The code of an app's function process (a Node process per app, started with this text as `-e`
 * so it runs the same from the sources and from the bundle; sandbox.ts starts it). It holds the
 * app's `node:vm` context with the BSON library and the bridge, runs calls as the emulator asks,
 * and passes the bridge's requests (MongoDB actions, other functions, logs, results) back as
 * frames over its channel (a pipe; see below). The emulator keeps the deadlines: a process stuck
 * in a loop is killed, never waited for.
 *
 * Two walls stand between function code and the host (docs/decisions/0010):
 * 1. The context. Nothing of this process's realm may reach function code: this code hands the
 *    context only strings and numbers (and the closure-held `hostCall` and `hostCrypto`, which
 *    take strings and answer strings, `hostTimer`, which takes numbers and answers nothing, and
 *    `hostModule`, which takes strings and answers a string, a boolean or a function compiled in
 *    the context, as functions' own are), takes back only strings, and never calls or reads
 *    anything function code could have made.
 * 2. The process. Should code get out of the context anyway, it is in a process started under
 *    Node's permission model (no child processes, no worker threads, no native addons, no
 *    inspector, no file but the modules functions may require: the app's functions/node_modules
 *    and the built-in modules' packages, read), with no string compilation in its own realm
 *    either, none of the emulator's environment and nothing of its memory: the BSON library's text
 *    comes in the first message.
 * It also runs with `--experimental-vm-modules` so that a dynamic `import()` in the context can be
 * refused with an error of the context's own (without the flag, Node 20 refuses with one of this
 * realm).
 */
export const networkLockdown = `// Node 20's permission model leaves the network open: code that got out of the context could
// still reach the database or the emulator on this host, or anything else. Every way to a socket
// goes through these methods (a connection, a server, a datagram, a DNS query); from here on each
// throws, and none can be put back. (The channel to the emulator is a pipe opened from its file
// descriptor, without any of them.)
(() => {
  const refuse = (what) => function () {
    throw new Error("the network is not available to functions (" + what + ")");
  };
  const lock = (object, names, label) => {
    for (const name of names) {
      Object.defineProperty(object, name, { value: refuse(label + name), writable: false, configurable: false, enumerable: false });
    }
  };
  const net = require("node:net");
  const dgram = require("node:dgram");
  const dns = require("node:dns");
  lock(net.Socket.prototype, ["connect"], "net.Socket#");
  lock(net.Server.prototype, ["listen"], "net.Server#");
  lock(dgram.Socket.prototype, ["bind", "connect", "send"], "dgram.Socket#");
  const queries = (object) => Object.keys(object).filter((name) => /^(lookup|lookupService|resolve\\w*|reverse)$/.test(name));
  lock(dns, queries(dns), "dns.");
  lock(dns.promises, queries(dns.promises), "dns.promises.");
  for (const Resolver of [dns.Resolver, dns.promises.Resolver]) {
    lock(Resolver.prototype, Object.getOwnPropertyNames(Resolver.prototype).filter((name) => /^(resolve\\w*|reverse)$/.test(name)), "dns.Resolver#");
  }
  const { syncBuiltinESMExports } = require("node:module");
  syncBuiltinESMExports();
})();
`;

export const workerSource = `"use strict";
const vm = require("node:vm");
const { types } = require("node:util");

// The channel to the emulator: a pipe on file descriptor 3 carrying frames, each its text's length
// in characters, a colon and the text (sandbox.ts writes and reads them the same way). When the
// emulator is gone (it exited or was killed), so is this process.
const channel = new (require("node:net").Socket)({ fd: 3, readable: true, writable: true });
channel.setEncoding("utf8");
channel.on("end", () => process.exit(0));
channel.on("error", () => process.exit(0));
${networkLockdown}const frame = (text) => text.length + ":" + text;
const post = (text) => {
  if (channel.writable) channel.write(text);
};
let unread = "";
channel.on("data", (chunk) => {
  unread = unread.length === 0 ? chunk : unread + chunk;
  let at = 0;
  for (;;) {
    const colon = unread.indexOf(":", at);
    if (colon < 0) break;
    const end = colon + 1 + Number(unread.slice(at, colon));
    if (end > unread.length) break;
    receive(unread.slice(colon + 1, end));
    at = end;
  }
  if (at > 0) unread = unread.slice(at);
});

let bridge = null;
let context = null;
let define = null;
let defineFailed = null;
let dispatch = null;
/** The context's error classes and ours, by prototype: a compile error is named without reading it. */
const errorNames = new Map();
const importModuleDynamically = () => {
  throw bridge.refuseImport();
};
const load = (source, filename) => new vm.Script(source, { filename, importModuleDynamically }).runInContext(context);

// Frames to the emulator: "kind,callId,pendingId,text"; from it, runs, call contexts and
// deliveries the bridge reads, and JSON for the rest (sandbox.ts). Outgoing ones are sent
// together once per turn of the event loop (one write instead of one per call).
let outbox = "";
let flushing = false;
const flush = () => {
  flushing = false;
  const batch = outbox;
  outbox = "";
  if (batch.length > 0) post(batch);
};
const hostCall = (kind, callId, pendingId, text) => {
  if (typeof kind === "string" && typeof callId === "number" && typeof text === "string") {
    outbox += frame(kind + "," + callId + "," + (typeof pendingId === "number" ? pendingId : 0) + "," + text);
    if (!flushing) {
      flushing = true;
      setImmediate(flush);
    }
  }
};

// utils.crypto and utils.jwt of App Services, answered at once (the service's are synchronous):
// a JSON text in, a JSON text out ({"ok": …} or {"error": "…"}), never anything of this realm.
// Bytes travel as base64 ("b") or UTF-8 text ("s").
const nodeCrypto = require("node:crypto");
const bytesOf = (value) =>
  value && typeof value.b === "string" ? Buffer.from(value.b, "base64") : Buffer.from(String(value && value.s), "utf8");
const hashes = { sha1: "sha1", sha256: "sha256", sha512: "sha512", md5: "md5" };
// (Names come from function code: only a table's own entries count, never "constructor" and the like.)
const own = (table, name) => (typeof name === "string" && Object.hasOwn(table, name) ? table[name] : undefined);
const base64url = (buffer) => buffer.toString("base64url");
// (RFC 7518: PS* is RSA-PSS with MGF1 of the same hash and a salt of the digest's length; ES* signs
// with r and s side by side, not DER.)
const pssKey = (key) => ({ key, padding: nodeCrypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: nodeCrypto.constants.RSA_PSS_SALTLEN_DIGEST });
const ecdsaKey = (key) => ({ key, dsaEncoding: "ieee-p1363" });
const plainKey = (key) => key;
const jwtAlgorithms = {
  HS256: ["hmac", "sha256"], HS384: ["hmac", "sha384"], HS512: ["hmac", "sha512"],
  RS256: ["sign", "sha256", plainKey], RS384: ["sign", "sha384", plainKey], RS512: ["sign", "sha512", plainKey],
  PS256: ["sign", "sha256", pssKey], PS384: ["sign", "sha384", pssKey], PS512: ["sign", "sha512", pssKey],
  ES256: ["sign", "sha256", ecdsaKey], ES384: ["sign", "sha384", ecdsaKey], ES512: ["sign", "sha512", ecdsaKey],
};
/** An AES key of utils.crypto's: the type must be aes, the key (its bytes) 16, 24 or 32 bytes, as Go's crypto/aes says. */
const aesKey = (a) => {
  if (a.type !== "aes") throw new Error("the encryption type must be aes, not '" + a.type + "'");
  const key = bytesOf(a.key);
  if (key.length !== 16 && key.length !== 24 && key.length !== 32) throw new Error("crypto/aes: invalid key size " + key.length);
  return key;
};
// (The reference's names, pss when none is given; pkcs1v1.5 too, as this server first took it.)
const rsaPadding = (scheme) => {
  if (scheme === "pss" || scheme === undefined || scheme === null)
    return { padding: nodeCrypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: nodeCrypto.constants.RSA_PSS_SALTLEN_DIGEST };
  if (scheme === "pkcs1v15" || scheme === "pkcs1v1.5") return { padding: nodeCrypto.constants.RSA_PKCS1_PADDING };
  throw new Error("the signature scheme must be pss or pkcs1v15, not '" + scheme + "'");
};
// Node's crypto module in functions (sandbox-bootstrap.ts): any digest Node has, bytes as base64.
const nodeDigests = new Set(nodeCrypto.getHashes());
const nodeDigest = (name, what) => {
  if (typeof name !== "string" || !nodeDigests.has(name.toLowerCase())) throw new Error(what);
  return name.toLowerCase();
};
/** The most random bytes one call of randomBytes makes (Node's own limit is 2 GiB). */
const maxRandomBytes = 65536;
// Node's keys in functions: a key travels as its PEM ("pem"), DER bytes ("der", base64, with its
// "type") or JWK ("jwk"), with a passphrase; a key made here goes back described (its PEM, type,
// asymmetric type and details; a bigint as {bigint: "…"}), never as this realm's object.
const keyInput = (spec) => {
  if (!spec || typeof spec !== "object") throw new TypeError("a key is required");
  const passphrase = typeof spec.passphrase === "string" ? { passphrase: spec.passphrase } : {};
  if (typeof spec.pem === "string") return { key: spec.pem, format: "pem", ...passphrase };
  if (typeof spec.der === "string") return { key: Buffer.from(spec.der, "base64"), format: "der", type: String(spec.type), ...passphrase };
  if (spec.jwk && typeof spec.jwk === "object") return { key: spec.jwk, format: "jwk" };
  throw new TypeError("a key is required");
};
const signingOptions = (a) => ({
  ...(Number.isInteger(a.padding) ? { padding: a.padding } : {}),
  ...(Number.isInteger(a.saltLength) ? { saltLength: a.saltLength } : {}),
  ...(a.dsaEncoding === "der" || a.dsaEncoding === "ieee-p1363" ? { dsaEncoding: a.dsaEncoding } : {}),
});
const describeKey = (key) => {
  const details = key.asymmetricKeyDetails ?? {};
  return {
    type: key.type,
    asymmetricKeyType: key.asymmetricKeyType,
    details: Object.fromEntries(Object.entries(details).map(([name, value]) => [name, typeof value === "bigint" ? { bigint: value.toString() } : value])),
    pem: key.export({ type: key.type === "private" ? "pkcs8" : "spki", format: "pem" }),
  };
};
const exportOptions = (options) => {
  const out = {};
  for (const name of ["type", "format", "cipher"]) if (typeof options?.[name] === "string") out[name] = options[name];
  if (typeof options?.passphrase === "string") out.passphrase = options.passphrase;
  return out;
};
// Ciphers live here, each by a number the context holds: at most this many at once per process
// (one never finished is freed when the context forgets its object, or when a new one needs room).
const ciphers = new Map();
const maxCiphers = 10000;
let nextCipher = 1;
const cipherOf = (id) => {
  const cipher = ciphers.get(id);
  if (cipher === undefined) throw new Error("the cipher is finished");
  return cipher;
};
const bytes64 = (text) => Buffer.from(String(text), "base64");
/** An AEAD cipher's tag once it is final (null for a cipher without one). */
const tagOf = (cipher) => {
  try {
    return cipher.getAuthTag().toString("base64");
  } catch {
    return null;
  }
};
const rsaOps = {
  publicEncrypt: nodeCrypto.publicEncrypt,
  privateDecrypt: nodeCrypto.privateDecrypt,
  privateEncrypt: nodeCrypto.privateEncrypt,
  publicDecrypt: nodeCrypto.publicDecrypt,
};
const cryptoOps = {
  nodePbkdf2(a) {
    return nodeCrypto.pbkdf2Sync(bytes64(a.password), bytes64(a.salt), a.iterations, a.keylen, String(a.digest)).toString("base64");
  },
  nodeScrypt(a) {
    const options = {};
    for (const name of ["N", "r", "p", "cost", "blockSize", "parallelization", "maxmem"]) {
      if (Number.isInteger(a.options?.[name])) options[name] = a.options[name];
    }
    return nodeCrypto.scryptSync(bytes64(a.password), bytes64(a.salt), a.keylen, options).toString("base64");
  },
  nodeHkdf(a) {
    return Buffer.from(nodeCrypto.hkdfSync(String(a.digest), bytes64(a.key), bytes64(a.salt), bytes64(a.info), a.keylen)).toString("base64");
  },
  nodeCipherNew(a) {
    if (ciphers.size >= maxCiphers) ciphers.delete(ciphers.keys().next().value);
    const options = Number.isInteger(a.authTagLength) ? { authTagLength: a.authTagLength } : undefined;
    const make = a.decipher ? nodeCrypto.createDecipheriv : nodeCrypto.createCipheriv;
    const cipher = make(String(a.algorithm), bytes64(a.key), a.iv === null ? null : bytes64(a.iv), options);
    const id = nextCipher++;
    ciphers.set(id, cipher);
    return id;
  },
  nodeCipherUpdate(a) {
    return cipherOf(a.id).update(bytes64(a.input)).toString("base64");
  },
  nodeCipherFinal(a) {
    const cipher = cipherOf(a.id);
    try {
      const last = cipher.final().toString("base64");
      return { last, tag: typeof cipher.getAuthTag === "function" ? tagOf(cipher) : null };
    } finally {
      ciphers.delete(a.id);
    }
  },
  nodeCipherSet(a) {
    const cipher = cipherOf(a.id);
    if (a.what === "aad") cipher.setAAD(bytes64(a.value), Number.isInteger(a.plaintextLength) ? { plaintextLength: a.plaintextLength } : undefined);
    else if (a.what === "tag") cipher.setAuthTag(bytes64(a.value));
    else if (a.what === "padding") cipher.setAutoPadding(a.value !== false);
    return null;
  },
  nodeCipherFree(a) {
    ciphers.delete(a.id);
    return null;
  },
  nodeRsa(a) {
    const op = own(rsaOps, a.op);
    if (!op) throw new Error("unknown operation");
    const key = { ...keyInput(a.key), ...(Number.isInteger(a.padding) ? { padding: a.padding } : {}), ...(typeof a.oaepHash === "string" ? { oaepHash: a.oaepHash } : {}) };
    return op(key, bytes64(a.input)).toString("base64");
  },
  nodeIsIP(a) {
    return require("node:net").isIP(String(a.input));
  },
  nodeLists() {
    return { ciphers: nodeCrypto.getCiphers(), curves: nodeCrypto.getCurves() };
  },
  nodeKey(a) {
    return describeKey(a.kind === "private" ? nodeCrypto.createPrivateKey(keyInput(a.key)) : nodeCrypto.createPublicKey(keyInput(a.key)));
  },
  nodeKeyExport(a) {
    const key = a.kind === "private" ? nodeCrypto.createPrivateKey({ key: String(a.pem), format: "pem" }) : nodeCrypto.createPublicKey({ key: String(a.pem), format: "pem" });
    const out = key.export(exportOptions(a.options));
    if (typeof out === "string") return { s: out };
    if (Buffer.isBuffer(out)) return { b: out.toString("base64") };
    return { jwk: out };
  },
  nodeSign(a) {
    const key = { ...keyInput(a.key), ...signingOptions(a) };
    const input = Buffer.from(String(a.input), "base64");
    const signature = a.algorithm === null
      ? nodeCrypto.sign(null, input, key)
      : nodeCrypto.createSign(String(a.algorithm)).update(input).sign(key);
    return signature.toString("base64");
  },
  nodeVerify(a) {
    const key = { ...keyInput(a.key), ...signingOptions(a) };
    const input = Buffer.from(String(a.input), "base64");
    const signature = Buffer.from(String(a.signature), "base64");
    return a.algorithm === null
      ? nodeCrypto.verify(null, input, key, signature)
      : nodeCrypto.createVerify(String(a.algorithm)).update(input).verify(key, signature);
  },
  nodeGenerateKeyPair(a) {
    const options = {};
    for (const name of ["modulusLength", "divisorLength", "publicExponent", "saltLength"]) {
      if (Number.isInteger(a.options?.[name])) options[name] = a.options[name];
    }
    for (const name of ["namedCurve", "hashAlgorithm", "mgf1HashAlgorithm", "hash", "mgf1Hash", "paramEncoding"]) {
      if (typeof a.options?.[name] === "string") options[name] = a.options[name];
    }
    const { publicKey, privateKey } = nodeCrypto.generateKeyPairSync(String(a.type), options);
    return { publicKey: describeKey(publicKey), privateKey: describeKey(privateKey) };
  },
  nodeHashes() {
    return [...nodeDigests];
  },
  nodeHash(a) {
    const algorithm = nodeDigest(a.algorithm, "Digest method not supported");
    return nodeCrypto.createHash(algorithm).update(Buffer.from(String(a.input), "base64")).digest("base64");
  },
  nodeHmac(a) {
    const algorithm = nodeDigest(a.algorithm, "Invalid digest: " + String(a.algorithm));
    return nodeCrypto
      .createHmac(algorithm, Buffer.from(String(a.key), "base64"))
      .update(Buffer.from(String(a.input), "base64"))
      .digest("base64");
  },
  random(a) {
    const size = a.size;
    if (!Number.isInteger(size) || size < 0 || size > maxRandomBytes)
      throw new Error('The value of "size" is out of range. It must be >= 0 && <= ' + maxRandomBytes + ". Received " + String(size));
    return nodeCrypto.randomBytes(size).toString("base64");
  },
  hash(a) {
    const algorithm = own(hashes, a.algorithm);
    if (!algorithm) throw new Error("the hash function must be sha1, sha256, sha512 or md5, not '" + a.algorithm + "'");
    return nodeCrypto.createHash(algorithm).update(bytesOf(a.input)).digest("base64");
  },
  hmac(a) {
    const algorithm = own(hashes, a.algorithm);
    if (!algorithm || algorithm === "md5") throw new Error("the hash function must be sha1, sha256 or sha512, not '" + a.algorithm + "'");
    if (a.format !== "hex" && a.format !== "base64") throw new Error("the output format must be hex or base64, not '" + a.format + "'");
    return nodeCrypto.createHmac(algorithm, bytesOf(a.secret)).update(bytesOf(a.input)).digest(a.format);
  },
  sign(a) {
    if (a.type !== "rsa") throw new Error("the encryption type must be rsa, not '" + a.type + "'");
    const key = { key: String(a.key), ...rsaPadding(a.scheme) };
    return nodeCrypto.sign("sha256", bytesOf(a.input), key).toString("base64");
  },
  verify(a) {
    if (a.type !== "rsa") throw new Error("the encryption type must be rsa, not '" + a.type + "'");
    const key = { key: String(a.key), ...rsaPadding(a.scheme) };
    return nodeCrypto.verify("sha256", bytesOf(a.input), key, bytesOf(a.signature));
  },
  // AES-GCM as Go seals it (the service was written in Go): the key's bytes choose AES-128, -192
  // or -256, a random 12-byte nonce goes first and the 16-byte tag last. The reference's own
  // example ciphertext opens so with its key (test/functions/utils.test.ts).
  encrypt(a) {
    const key = aesKey(a);
    const nonce = nodeCrypto.randomBytes(12);
    const cipher = nodeCrypto.createCipheriv("aes-" + key.length * 8 + "-gcm", key, nonce);
    return Buffer.concat([nonce, cipher.update(bytesOf(a.input)), cipher.final(), cipher.getAuthTag()]).toString("base64");
  },
  decrypt(a) {
    const key = aesKey(a);
    const sealed = bytesOf(a.input);
    if (sealed.length < 12 + 16) throw new Error("cipher: message authentication failed");
    const decipher = nodeCrypto.createDecipheriv("aes-" + key.length * 8 + "-gcm", key, sealed.subarray(0, 12));
    decipher.setAuthTag(sealed.subarray(sealed.length - 16));
    try {
      return Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]).toString("base64");
    } catch {
      throw new Error("cipher: message authentication failed");
    }
  },
  jwtEncode(a) {
    const method = own(jwtAlgorithms, a.method);
    if (!method) throw new Error("the signing method must be one of " + Object.keys(jwtAlgorithms).join(", ") + ", not '" + a.method + "'");
    const header = { ...(a.header && typeof a.header === "object" ? a.header : {}), alg: a.method, typ: "JWT" };
    const input = base64url(Buffer.from(JSON.stringify(header))) + "." + base64url(Buffer.from(String(a.payload)));
    const signature = method[0] === "hmac"
      ? nodeCrypto.createHmac(method[1], Buffer.from(String(a.key))).update(input).digest()
      : nodeCrypto.sign(method[1], Buffer.from(input), method[2](String(a.key)));
    return input + "." + base64url(signature);
  },
  jwtDecode(a) {
    const parts = String(a.token).split(".");
    if (parts.length !== 3) throw new Error("token is malformed");
    let header;
    try {
      header = JSON.parse(Buffer.from(parts[0], "base64url").toString("utf8"));
    } catch (error) {
      throw new Error("token is malformed");
    }
    const method = header && own(jwtAlgorithms, header.alg);
    if (!method) throw new Error("signing method (alg) is unavailable");
    if (a.accepted !== undefined && !a.accepted.includes(header.alg))
      throw new Error("signing method " + header.alg + " is invalid");
    const input = Buffer.from(parts[0] + "." + parts[1]);
    const signature = Buffer.from(parts[2], "base64url");
    const valid = method[0] === "hmac"
      ? (() => {
          const expected = nodeCrypto.createHmac(method[1], Buffer.from(String(a.key))).update(input).digest();
          return expected.length === signature.length && nodeCrypto.timingSafeEqual(expected, signature);
        })()
      : nodeCrypto.verify(method[1], input, method[2](String(a.key)), signature);
    if (!valid) throw new Error("signature is invalid");
    const payloadText = Buffer.from(parts[1], "base64url").toString("utf8");
    const payload = JSON.parse(payloadText);
    // (The app's time, which the bridge sends: its clock may have been moved.)
    const now = typeof a.now === "number" && Number.isFinite(a.now) ? a.now : Date.now() / 1000;
    if (payload && typeof payload.exp === "number" && now >= payload.exp) throw new Error("token is expired");
    if (payload && typeof payload.nbf === "number" && now < payload.nbf) throw new Error("token is not valid yet");
    return { header: JSON.stringify(header), payload: payloadText };
  },
};
const hostCrypto = (op, text) => {
  try {
    if (typeof op !== "string" || typeof text !== "string" || !Object.hasOwn(cryptoOps, op)) throw new Error("unknown operation");
    return JSON.stringify({ ok: cryptoOps[op](JSON.parse(text)) });
  } catch (error) {
    // (Node's code too, a string: ERR_OSSL_…, ERR_INVALID_ARG_VALUE, …)
    const code = error instanceof Error && typeof error.code === "string" ? { code: error.code } : {};
    return JSON.stringify({ error: error instanceof Error ? String(error.message) : "failed", ...code });
  }
};

// Modules functions require (sandbox-bootstrap.ts): found and read here, where this process may
// read only the app's functions/node_modules and the packages of the built-in modules it offers
// (its --allow-fs-read), and compiled in the context. Paths and texts in; a path, a text or the
// compiled function (made in the context) out.
const nodePath = require("node:path");
const nodeFs = require("node:fs");
let moduleRoots = { app: null, top: null, packages: [], builtins: {} };
const moduleParameters = [
  "exports", "require", "module", "__filename", "__dirname", "process", "global",
  "setTimeout", "clearTimeout", "setInterval", "clearInterval", "setImmediate", "clearImmediate", "queueMicrotask",
];
const coreModules = new Set(require("node:module").builtinModules);
const isFile = (file) => {
  try {
    return nodeFs.statSync(file).isFile();
  } catch (error) {
    return false;
  }
};
const packageOf = (dir) => {
  const file = nodePath.join(dir, "package.json");
  if (!isFile(file)) return null;
  try {
    const parsed = JSON.parse(nodeFs.readFileSync(file, "utf8"));
    return parsed !== null && typeof parsed === "object" ? parsed : null;
  } catch (error) {
    return null;
  }
};
const asFile = (file) => {
  for (const candidate of [file, file + ".js", file + ".json", file + ".cjs"]) if (isFile(candidate)) return candidate;
  return null;
};
const asIndex = (dir) => asFile(nodePath.join(dir, "index"));
/** A package.json "exports" target for CommonJS: a string, or the require / node / default condition. */
const exportTarget = (target) => {
  if (typeof target === "string") return target;
  if (Array.isArray(target)) {
    for (const each of target) {
      const found = exportTarget(each);
      if (found) return found;
    }
    return null;
  }
  if (target === null || typeof target !== "object") return null;
  // As Node: the first of the object's conditions, in its own order, that is one of require's.
  for (const condition of Object.keys(target)) {
    if (condition === "require" || condition === "node" || condition === "default") {
      const found = exportTarget(target[condition]);
      if (found) return found;
    }
  }
  return null;
};
/** An "exports" map's target for a subpath: its own entry, or the pattern ("./x/*") with the longest prefix, "*" filled. */
const exportOf = (map, subpath) => {
  if (Object.hasOwn(map, subpath)) return exportTarget(map[subpath]);
  let best = null;
  for (const key of Object.keys(map)) {
    const star = key.indexOf("*");
    if (star === -1 || key.indexOf("*", star + 1) !== -1) continue;
    const prefix = key.slice(0, star);
    const suffix = key.slice(star + 1);
    if (subpath.length < key.length - 1 || !subpath.startsWith(prefix) || !subpath.endsWith(suffix)) continue;
    if (best === null || prefix.length > best.prefix.length) best = { key, prefix, suffix };
  }
  if (best === null) return null;
  const target = exportTarget(map[best.key]);
  const filled = subpath.slice(best.prefix.length, subpath.length - best.suffix.length);
  return target === null ? null : target.split("*").join(filled);
};
/** A package's file for "." or "./sub": its "exports" when it has them, else "main" or the path itself. */
const packageEntry = (dir, subpath) => {
  const pkg = packageOf(dir);
  if (pkg && pkg.exports !== undefined) {
    const map = typeof pkg.exports === "object" && pkg.exports !== null && !Array.isArray(pkg.exports) &&
      Object.keys(pkg.exports).some((key) => key.startsWith("."))
      ? pkg.exports
      : { ".": pkg.exports };
    const target = exportOf(map, subpath);
    return target ? asFile(nodePath.join(dir, target)) : null;
  }
  if (subpath !== ".") {
    const file = nodePath.join(dir, subpath);
    return asFile(file) || asIndex(file);
  }
  const main = pkg && typeof pkg.main === "string" ? nodePath.join(dir, pkg.main) : null;
  return (main && (asFile(main) || asIndex(main))) || asIndex(dir);
};
const within = (file, root) => typeof root === "string" && (file === root || file.startsWith(root + nodePath.sep));
/** Where a bare request's search for node_modules stops: the app's functions folder, or above the built-ins' packages. */
const boundaryOf = (dir) => {
  if (within(dir, moduleRoots.app)) return nodePath.dirname(moduleRoots.app);
  if (moduleRoots.packages.some((packageDir) => within(dir, packageDir))) return moduleRoots.top;
  return dir;
};
/** A built-in module's main file (sandbox.ts resolved it), to be read: "" for another name. */
const builtinFile = (name) => {
  if (typeof name !== "string" || !Object.hasOwn(moduleRoots.builtins, name)) return "";
  const file = moduleRoots.builtins[name];
  if (!moduleRoots.packages.some((dir) => within(file, dir))) return "";
  resolvedFiles.add(file);
  return file;
};
/** A request from a module in fromDir: a file's real path within the roots, or "" when there is none. */
const resolveModule = (from, request) => {
  // ("" is the functions themselves: from their folder, beside its node_modules.)
  const fromDir = from === "" && moduleRoots.app ? nodePath.dirname(moduleRoots.app) : from;
  if (typeof fromDir !== "string" || fromDir === "" || typeof request !== "string" || request === "") return "";
  let found = null;
  if (request === "." || request === ".." || request.startsWith("./") || request.startsWith("../")) {
    const file = nodePath.resolve(fromDir, request);
    found = asFile(file) || asIndex(file) || (isFile(nodePath.join(file, "package.json")) ? packageEntry(file, ".") : null);
  } else if (!request.startsWith("/")) {
    const parts = request.split("/");
    const name = request.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
    // ("name/" asks for the package itself, as "name" does.)
    const rest = request.slice(name.length).replace(/\\/$/, "");
    const subpath = rest === "" ? "." : "." + rest;
    const boundary = boundaryOf(fromDir);
    for (let dir = fromDir; within(dir, boundary); dir = nodePath.dirname(dir)) {
      if (nodePath.basename(dir) !== "node_modules") {
        const candidate = nodePath.join(dir, "node_modules", name);
        if (isFile(nodePath.join(candidate, "package.json")) || asIndex(candidate)) {
          found = packageEntry(candidate, subpath);
          break;
        }
      }
      if (dir === boundary) break;
    }
  }
  if (found === null) return "";
  const real = nodeFs.realpathSync(found);
  // Nothing outside the app's modules and the built-ins' packages (the permission model agrees).
  if (!within(real, moduleRoots.app) && !moduleRoots.packages.some((dir) => within(real, dir))) return "";
  resolvedFiles.add(real);
  return real;
};
/** The files resolveModule answered: the only ones read and compiled. */
const resolvedFiles = new Set();
const hostModule = (op, a, b) => {
  try {
    if (op === "resolve") return resolveModule(a, b);
    if (op === "builtin") return builtinFile(a);
    if (op === "core") return typeof a === "string" && coreModules.has(a);
    if (op === "read" && typeof a === "string" && resolvedFiles.has(a)) return nodeFs.readFileSync(a, "utf8");
    if (op === "compile" && typeof a === "string" && typeof b === "string" && resolvedFiles.has(a)) {
      try {
        return vm.compileFunction(b, moduleParameters, { parsingContext: context, filename: a, importModuleDynamically });
      } catch (error) {
        // (The compile error's own words, as a function's are read: never this realm's object.)
        return compileErrorText(error)[1] || "the module does not compile";
      }
    }
  } catch (error) {
    return null;
  }
  return null;
};

// Functions' timers (sandbox-bootstrap.ts): the bridge names each by a number and a delay (-1: at
// once, as setImmediate); when one is due the bridge is told its number. Numbers in, none out.
const timerHandles = new Map();
let fire = null;
const hostTimer = (op, id, ms) => {
  // (2: the monotonic clock, in milliseconds, for process.hrtime.)
  if (op === 2) return performance.now();
  if (typeof id !== "number") return;
  const pending = timerHandles.get(id);
  if (pending !== undefined) {
    if (pending.immediate) clearImmediate(pending.handle);
    else clearTimeout(pending.handle);
    timerHandles.delete(id);
  }
  if (op !== 1 || typeof ms !== "number") return;
  const due = () => {
    timerHandles.delete(id);
    fire(id);
  };
  timerHandles.set(id, ms < 0 ? { immediate: true, handle: setImmediate(due) } : { immediate: false, handle: setTimeout(due, ms) });
};

/** The first message: the app, the BSON library's text and the bridge's. */
function start(init) {
  // A prototype-less global and no string compilation: the context's own constructors lead nowhere.
  context = vm.createContext(Object.create(null), {
    name: init.name,
    codeGeneration: { strings: false, wasm: false },
  });
  const names = load('["Error", "SyntaxError", "RangeError", "ReferenceError", "TypeError"].map((name) => [globalThis[name].prototype, name])', "functions-setup.js");
  for (let i = 0; i < names.length; i++) errorNames.set(names[i][0], names[i][1]);
  for (const E of [Error, SyntaxError, RangeError, ReferenceError, TypeError]) errorNames.set(E.prototype, E.name);
  // The BSON library sees the context's own Date (a parameter of its code), not the proxy of it
  // that the bridge makes the global \`Date\` (the app's clock: sandbox-bootstrap.ts): the dates
  // it reads from Extended JSON cost no trap; its \`Date.now()\` (new ObjectId()) is the
  // intrinsic's, which the bridge makes the app clock's too. The library's BSON is the global's, as before.
  const bsonFactory = vm.compileFunction(init.bsonSource + "\\n;return BSON;", ["Date"], {
    parsingContext: context,
    filename: "bson.bundle.js",
    importModuleDynamically,
  });
  context.BSON = bsonFactory(load("Date", "functions-setup.js"));
  load(init.bufferSource, "buffer.bundle.js");
  if (init.moduleRoots) moduleRoots = init.moduleRoots;
  bridge = load(init.bootstrapSource, "functions-bridge.js")(hostCall, init.appText, hostCrypto, hostTimer, hostModule);
  ({ define, defineFailed, dispatch, fire } = bridge);
}

// Node's own handling of a stray rejection or an uncaught exception formats the value with
// util.inspect in this realm, which calls the value's custom inspect function with this realm's
// inspect: function code must never get there. A rejection nobody handles is dropped (the call
// that made it answers as it does anyway); an uncaught exception (a FinalizationRegistry callback
// that throws) stops the process, unread, and the emulator fails its calls.
process.on("unhandledRejection", () => undefined);
process.on("uncaughtException", () => {
  if (channel.writable) {
    channel.write(frame("fatal,0,0,a function threw outside of its call; the app's functions were restarted"), () =>
      process.exit(1),
    );
  } else {
    process.exit(1);
  }
});

/** A compile error's text, read from V8's own error: its own message and its class's name. */
function compileErrorText(error) {
  if (!types.isNativeError(error) || types.isProxy(error)) return ["SyntaxError", "the function does not compile"];
  const message = Object.getOwnPropertyDescriptor(error, "message");
  return [
    errorNames.get(Object.getPrototypeOf(error)) || "Error",
    message && typeof message.value === "string" ? message.value : "",
  ];
}

function receive(text) {
  // A run, a call context or a delivery for the bridge (which never throws), else JSON.
  if (text[0] !== "{") return dispatch(text);
  const message = JSON.parse(text);
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
      defineFailed(message.id, message.name, name, text);
      return;
    }
    // Whether its source may use the call's timers or require() (or reach them through arguments):
    // a call of one that does not is given the process's, made once, instead of its own.
    define(message.id, message.name, factory, /\\b(set|clear)(Timeout|Interval|Immediate)\\b|\\brequire\\b|\\barguments\\b/.test(message.body));
  } else if (message.type === "ping") {
    post(frame("pong,0,0,"));
  } else if (message.type === "init") {
    start(message);
    // The emulator sends runs once it reads this: their time runs from here (sandbox.ts).
    post(frame("ready,0,0,"));
  }
}
`;
