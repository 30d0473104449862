/**
 * Node's crypto module for functions (docs/decisions/0038): part of the bridge's source
 * (sandbox-bootstrap.ts), in its scope — hashes and HMACs, random bytes and fills, UUIDs, keys
 * and signatures, key derivation, ciphers and RSA encryption, each run by the function process's
 * own crypto through `hostCrypto` (text in, text out); key material stays in the context. It
 * uses the bridge's primordials (`call`, `freeze`, `SafeBuffer`, …), `cryptoCall` and
 * `codedTypeError`, and defines `cryptoModule` with the helpers of Buffer that follow it.
 * Like the bridge: no backticks, no `${` but interpolations, regular expressions' backslashes doubled.
 */
import { constants as cryptoConstants } from "node:crypto";

export const cryptoSource = `  // Node's crypto module, the part functions use: hashes and HMACs of any digest Node has, random
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
  });`;
