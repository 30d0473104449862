/**
 * The modules functions may require() besides their app's packages (docs/decisions/0038), in one
 * place for the function process (sandbox-bootstrap.ts, sandbox.ts) and the start's warning
 * (app-folder.ts).
 */

/**
 * Made in the function's context itself: Node's buffer, crypto (in part), fs (App Services' part,
 * over no files), timers, the clients of http and https, and net, tls and http2 without
 * connections of their own.
 */
export const contextModules = ["buffer", "crypto", "fs", "http", "http2", "https", "net", "timers", "tls"] as const;

/**
 * Node's modules offered as the pure-JavaScript packages browsers use (a package, or one of its
 * files), read from this project's dependencies.
 */
export const packagedModules: Readonly<Record<string, string>> = {
  assert: "assert",
  events: "events",
  os: "os-browserify/browser",
  path: "path-browserify",
  punycode: "punycode",
  querystring: "querystring-es3",
  stream: "stream-browserify",
  string_decoder: "string_decoder",
  tty: "tty-browserify",
  url: "url",
  util: "util",
  zlib: "browserify-zlib",
};

/**
 * Packages the offered modules are made of, not offered by name: the WHATWG URL of the url module
 * and of the `URL` and `URLSearchParams` globals (with tr46, its IDNA, for url.domainToASCII).
 */
export const supportPackages: readonly string[] = ["whatwg-url"];

/** Every module name a function's require() finds without node_modules, sorted. */
export const offeredModules: readonly string[] = [...contextModules, ...Object.keys(packagedModules)].sort();

/** The package a packaged module's request names ("os-browserify/browser" → "os-browserify"). */
export const packageNameOf = (request: string): string =>
  request.startsWith("@") ? request.split("/").slice(0, 2).join("/") : request.split("/")[0]!;
