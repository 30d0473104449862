/**
 * Node's url, http and https modules for functions (docs/decisions/0038): part of the bridge's
 * source (sandbox-bootstrap.ts), in its scope — the url package's legacy API with WHATWG URL
 * (whatwg-url, tr46) and the `URL` and `URLSearchParams` globals, and the clients of http and
 * https, whose requests the emulator makes (`request(0, "http", …)`, as context.http's). It uses
 * the bridge's primordials, its module loader (`loadModule`, `builtinFile`, `requireModule`,
 * `moduleTimers`, `nextTick`), `request`, `send` and `pending`, and defines `urlModule`,
 * `codedTypeError` and `httpModule`. Like the bridge: no backticks, no `${` but
 * interpolations, regular expressions' backslashes doubled.
 */
import { METHODS, STATUS_CODES } from "node:http";
import { constants as http2Constants } from "node:http2";

export const urlAndHttpSource = `  // Node's url module: the url package's legacy API (parse, resolve, format of its objects) with the
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

  // Node's net, tls and http2 as far as packages use them without a connection of their own:
  // net.isIP and its kin (the process's own), classes to extend, http2's constants. A connection,
  // a server or a secure context is refused: functions reach the network through context.http
  // and the http and https clients (the emulator makes their requests). Packages such as
  // https-proxy-agent (twilio) and axios 1.x (http2) require them as they load.
  let networkModules = null;
  function networkModule(name) {
    if (networkModules === null) networkModules = makeNetworkModules();
    return networkModules[name];
  }
  function makeNetworkModules() {
    const { EventEmitter } = requireModule("", "events", moduleTimers);
    const refuse = (what) => () => {
      const error = new SafeError(what + " is not supported by this server: functions reach the network through context.http and the http and https modules");
      error.code = "ERR_NOT_SUPPORTED";
      throw error;
    };
    const isIP = (input) => cryptoCall("nodeIsIP", { input: SafeString(input) });
    class Socket extends EventEmitter {
      connect() {
        refuse("net.Socket.connect")();
      }
    }
    class TLSSocket extends Socket {}
    const net = {
      isIP,
      isIPv4: (input) => isIP(input) === 4,
      isIPv6: (input) => isIP(input) === 6,
      Socket,
      Stream: Socket,
      connect: refuse("net.connect"),
      createConnection: refuse("net.createConnection"),
      createServer: refuse("net.createServer"),
      Server: refuse("net.Server"),
    };
    const tls = {
      TLSSocket,
      connect: refuse("tls.connect"),
      createSecureContext: refuse("tls.createSecureContext"),
      createServer: refuse("tls.createServer"),
      Server: refuse("tls.Server"),
      checkServerIdentity: () => undefined,
      DEFAULT_MIN_VERSION: "TLSv1.2",
      DEFAULT_MAX_VERSION: "TLSv1.3",
      DEFAULT_ECDH_CURVE: "auto",
      rootCertificates: freeze([]),
    };
    const http2 = {
      constants: freeze(${JSON.stringify(http2Constants)}),
      connect: refuse("http2.connect"),
      createServer: refuse("http2.createServer"),
      createSecureServer: refuse("http2.createSecureServer"),
      sensitiveHeaders: Symbol("nodejs.http2.sensitiveHeaders"),
    };
    return { net, tls, http2 };
  }`;
