/**
 * `context.http` of App Services functions (get, post, put, patch, delete, head): the request is
 * made here, in the emulator's process — a function's own process has no network — to a host the
 * server allows (`--function-http-hosts`: loopback only in the harness, any host in production),
 * within the call's time limit, the response read up to 16 MiB (and all of them at once up to 64
 * MiB: one app's function cannot take the memory every app shares). The answer is the service's
 * response document: `status` ("200 OK"), `statusCode`, `contentLength` (-1 when the response did
 * not say), `headers` (canonical names, each a list of values), `cookies` (name → value of each
 * `Set-Cookie`) and `body` (a BSON Binary; the function's side adds `text()`). A 4xx or 5xx is
 * an answer; a request that cannot be made is an error (decision 0032).
 */
import { type LookupAddress, lookup } from "node:dns";
import type { LookupFunction } from "node:net";
import { Binary, EJSON } from "bson";
import ipaddr from "ipaddr.js";
import type { Agent, FormData, Headers, Response } from "undici";
import { isDocument } from "../data/documents.ts";
import { canonicalHeaderName } from "../http/header-names.ts";

/** Host names (a leading dot: with subdomains), addresses, or `*` (any host). */
export type OutboundHosts = readonly string[];

/**
 * The harness's default: loopback only, so that tests stay hermetic — these names, and any
 * loopback address (127.0.0.0/8, ::1, their IPv4-mapped forms; OutboundHttp.reach).
 */
export const loopbackHosts: OutboundHosts = ["localhost", ".localhost", "127.0.0.1", "::1"];

/** The hosts of `--function-http-hosts`, or the mode's default: loopback in the harness, any in production. */
export const outboundHosts = (given: readonly string[] | null, production: boolean): OutboundHosts =>
  given ?? (production ? ["*"] : loopbackHosts);

export const outboundLimits = {
  maxResponseBytes: 16 * 1024 * 1024,
  /** Response bytes read and not yet answered, of all the instance's functions together. */
  budgetBytes: 64 * 1024 * 1024,
  maxRedirects: 10,
} as const;

const methods = new Set(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]);

type Undici = typeof import("undici");
/** undici (fetch, and connections made with a lookup of ours): loaded at the first request, not at every start. */
let undici: Promise<Undici> | undefined;
const loadUndici = () => (undici ??= import("undici"));

/** ipaddr.js's names of the ranges that are not public, in words for the refusal. */
const rangeWords: Record<string, string> = {
  loopback: "loopback",
  private: "private",
  linkLocal: "link-local",
  uniqueLocal: "unique local",
  carrierGradeNat: "shared (carrier-grade NAT)",
  unspecified: "unspecified",
  broadcast: "broadcast",
  multicast: "multicast",
};

/** The kind of a non-public address ("loopback", "private" …), or null when it is public (or not an address). */
function closedRange(address: string): string | null {
  if (!ipaddr.isValid(address)) return null;
  const range = ipaddr.process(address).range();
  return range === "unicast" ? null : (rangeWords[range] ?? "reserved");
}

/**
 * Whether an address is a public one, which `*` lets functions reach: not loopback, private,
 * link-local (the cloud's metadata service), unique local, shared, multicast or reserved, an
 * IPv4-mapped IPv6 address judged as its IPv4 one.
 */
export const publicAddress = (address: string): boolean => ipaddr.isValid(address) && closedRange(address) === null;

/** A host allowed by `*` only that is, or resolves to, an address that is not public. */
class ClosedAddress extends Error {
  constructor(host: string, kind: string, address?: string) {
    super(
      `requests to '${host}' are not allowed here: ${address === undefined ? `it is a ${kind} address` : `it is at a ${kind} address (${address})`} (name it in --function-http-hosts to allow it)`,
    );
  }
}

/**
 * The address lookup of the connections made for hosts allowed by `*` only: every address the
 * name resolves to must be public, checked where the connection is made (a name that answers a
 * public address to a first lookup and a private one to the next gains nothing).
 */
const publicLookup: LookupFunction = (hostname, options, callback) => {
  lookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, "", 0);
    for (const { address } of addresses) {
      const kind = closedRange(address);
      if (kind !== null) return callback(new ClosedAddress(hostname, kind, address), "", 0);
    }
    if (options.all) (callback as unknown as (e: null, all: LookupAddress[]) => void)(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  });
};

/** An error the function sees as thrown by `context.http` (its message only). */
class OutboundError extends Error {
  constructor(message: string) {
    super(`context.http: ${message}`);
  }
}

/** A value given as a list of strings, or one string. */
function strings(value: unknown, what: string): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value) && value.every((item) => typeof item === "string")) return value;
  throw new OutboundError(`${what} must be a string or a list of strings`);
}

export class OutboundHttp {
  /** Response bytes held now (being read, or read and not yet answered), all requests together. */
  private held = 0;
  /** Connections to hosts named in the list, and to hosts `*` allows (public addresses only). */
  private agents: { named: Agent; publicOnly: Agent } | undefined;

  constructor(
    private readonly hosts: OutboundHosts,
    private readonly budgetBytes: number = outboundLimits.budgetBytes,
  ) {}

  /** Whether a URL's host name may be reached (by `*`: at public addresses only). */
  allows(hostname: string): boolean {
    return this.reach(hostname) !== "no";
  }

  /** How a host may be reached: not, at any address (it is named in the list), or at public ones (`*`). */
  private reach(hostname: string): "no" | "any" | "public" {
    const name = hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1");
    const named = this.hosts.some(
      (entry) => entry === name || (entry.startsWith(".") && (name.endsWith(entry) || name === entry.slice(1))),
    );
    if (named) return "any";
    if (this.hosts === loopbackHosts && closedRange(name) === "loopback") return "any";
    return this.hosts.includes("*") ? "public" : "no";
  }

  /** Ends every connection, kept or in use (the server stops: a request still going is failed). */
  async close(): Promise<void> {
    const agents = this.agents;
    this.agents = undefined;
    if (agents) await Promise.all([agents.named.destroy(), agents.publicOnly.destroy()]);
  }

  /**
   * Sends a request of a function, `options` as `context.http.<method>` got it; given up at
   * `deadline` (epoch ms) or when `ended` aborts (the call ended without waiting for it).
   */
  async send(
    method: string,
    options: unknown,
    deadline: number,
    ended?: AbortSignal,
  ): Promise<Record<string, unknown>> {
    const verb = method.toUpperCase();
    if (!methods.has(verb)) throw new OutboundError(`no such method '${method}'`);
    if (!isDocument(options)) throw new OutboundError("the argument must be a document");
    if (options.digestAuth === true) throw new OutboundError("digestAuth is not supported by this server");
    if (options.authUrl !== undefined) throw new OutboundError("authUrl is not supported by this server");
    let url = this.urlOf(options);
    const { Agent, fetch, FormData, Headers } = await loadUndici();
    this.agents ??= { named: new Agent(), publicOnly: new Agent({ connect: { lookup: publicLookup } }) };
    const agents = this.agents;
    const headers = new Headers();
    if (options.headers !== undefined) {
      if (!isDocument(options.headers)) throw new OutboundError("headers must be a document");
      for (const [name, value] of Object.entries(options.headers)) {
        for (const one of strings(value, `header '${name}'`)) headers.append(name, one);
      }
    }
    if (options.cookies !== undefined) {
      if (!isDocument(options.cookies)) throw new OutboundError("cookies must be a document");
      const pairs = Object.entries(options.cookies).map(([name, value]) => `${name}=${String(value)}`);
      if (pairs.length > 0) headers.set("cookie", pairs.join("; "));
    }
    const username = options.username ?? (url.username ? decodeURIComponent(url.username) : undefined);
    const password = options.password ?? (url.password ? decodeURIComponent(url.password) : undefined);
    if (username !== undefined || password !== undefined) {
      const pair = `${String(username ?? "")}:${String(password ?? "")}`;
      headers.set("authorization", `Basic ${Buffer.from(pair).toString("base64")}`);
    }
    url.username = "";
    url.password = "";
    let body: string | Uint8Array<ArrayBuffer> | FormData | undefined = this.bodyOf(options, headers, FormData);
    let current = verb;
    const timeout = AbortSignal.timeout(Math.max(1, deadline - Date.now()));
    const signal = ended ? AbortSignal.any([timeout, ended]) : timeout;
    for (let hop = 0; ; hop++) {
      const reach = this.reach(url.hostname);
      if (reach === "no") {
        throw new OutboundError(`requests to '${url.hostname}' are not allowed here (--function-http-hosts)`);
      }
      const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
      const kind = reach === "public" ? closedRange(host) : null;
      if (kind !== null) throw new OutboundError(new ClosedAddress(host, kind).message);
      let response: Response;
      try {
        response = await fetch(url, {
          method: current,
          headers,
          ...(body !== undefined && current !== "GET" && current !== "HEAD" ? { body } : {}),
          redirect: "manual",
          signal,
          dispatcher: reach === "public" ? agents.publicOnly : agents.named,
        });
      } catch (error) {
        const cause = (error as { cause?: unknown }).cause;
        if (cause instanceof ClosedAddress) throw new OutboundError(cause.message);
        throw new OutboundError(`${current} ${JSON.stringify(url.href)}: ${reason(error)}`);
      }
      const location = response.headers.get("location");
      if (options.followRedirects === true && location !== null && response.status >= 300 && response.status < 400) {
        await response.body?.cancel().catch(() => undefined);
        if (hop + 1 >= outboundLimits.maxRedirects) throw new OutboundError(`stopped after ${hop + 1} redirects`);
        url = new URL(location, url);
        // As browsers and Go do: 303, and a POST answered 301 or 302, go on as GET without a body.
        if (response.status === 303 || ((response.status === 301 || response.status === 302) && current === "POST")) {
          current = current === "HEAD" ? "HEAD" : "GET";
          body = undefined;
          headers.delete("content-type");
        }
        continue;
      }
      const charge = { bytes: 0 };
      try {
        return this.answer(response, await this.read(response, current, url, charge));
      } finally {
        this.held -= charge.bytes;
      }
    }
  }

  /** The URL of `url`, or of its parts (`scheme`, `host`, `path`, `query`, `fragment`). */
  private urlOf(options: Record<string, unknown>): URL {
    let url: URL;
    if (options.url !== undefined) {
      if (typeof options.url !== "string") throw new OutboundError("url must be a string");
      try {
        url = new URL(options.url);
      } catch {
        throw new OutboundError(`'${options.url}' is not a URL`);
      }
    } else {
      if (typeof options.host !== "string" || options.host === "")
        throw new OutboundError("a url (or a host) is required");
      const scheme = typeof options.scheme === "string" ? options.scheme : "http";
      const path = typeof options.path === "string" ? options.path : "";
      try {
        url = new URL(`${scheme}://${options.host}${path.startsWith("/") || path === "" ? path : `/${path}`}`);
      } catch {
        throw new OutboundError(`'${scheme}://${options.host}' is not a URL`);
      }
      if (options.query !== undefined) {
        if (!isDocument(options.query)) throw new OutboundError("query must be a document");
        for (const [name, value] of Object.entries(options.query)) {
          for (const one of strings(value, `query value '${name}'`)) url.searchParams.append(name, one);
        }
      }
      if (typeof options.fragment === "string") url.hash = options.fragment;
    }
    if (url.protocol !== "http:" && url.protocol !== "https:")
      throw new OutboundError(`the URL's scheme must be http or https, not '${url.protocol.slice(0, -1)}'`);
    return url;
  }

  private bodyOf(
    options: Record<string, unknown>,
    headers: Headers,
    Form: Undici["FormData"],
  ): string | Uint8Array<ArrayBuffer> | FormData | undefined {
    if (options.form !== undefined) {
      if (options.body !== undefined) throw new OutboundError("give body or form, not both");
      if (!isDocument(options.form)) throw new OutboundError("form must be a document");
      const form = new Form();
      for (const [name, value] of Object.entries(options.form)) form.append(name, String(value));
      // The reference says to send a form with `Content-Type: multipart/form-data`: the type fetch
      // gives it names the boundary its parts are cut at, and without one its server cannot read them.
      const type = headers.get("content-type");
      if (type !== null && /^\s*multipart\/form-data\s*(;|$)/i.test(type) && !/boundary=/i.test(type))
        headers.delete("content-type");
      return form;
    }
    const { body } = options;
    if (body === undefined || body === null) return undefined;
    if (typeof body === "string") return body;
    if (body instanceof Binary) return Uint8Array.from(body.buffer.subarray(0, body.position));
    if (options.encodeBodyAsJSON !== true)
      throw new OutboundError("a document body needs encodeBodyAsJSON: true (or give the body as a string)");
    if (!headers.has("content-type")) headers.set("content-type", "application/json");
    return EJSON.stringify(body);
  }

  /**
   * The body, at most the cap; a HEAD's is empty. Its bytes are charged to the instance's budget as
   * they arrive (`charge`, given back by the caller): one function cannot hold the memory of all.
   */
  private async read(response: Response, method: string, url: URL, charge: { bytes: number }): Promise<Uint8Array> {
    if (method === "HEAD" || !response.body) return new Uint8Array(0);
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = response.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > outboundLimits.maxResponseBytes) {
          await reader.cancel().catch(() => undefined);
          throw new OutboundError("the response body is larger than 16 MiB");
        }
        if (this.held + value.byteLength > this.budgetBytes) {
          await reader.cancel().catch(() => undefined);
          throw new OutboundError("the server is reading too many responses for functions at once; try again later");
        }
        this.held += value.byteLength;
        charge.bytes += value.byteLength;
        chunks.push(value);
      }
    } catch (error) {
      if (error instanceof OutboundError) throw error;
      throw new OutboundError(`${method} ${JSON.stringify(url.href)}: ${reason(error)}`);
    }
    return Buffer.concat(chunks);
  }

  private answer(response: Response, body: Uint8Array): Record<string, unknown> {
    const headers: Record<string, string[]> = {};
    // (Fetch gives a name once, its values joined by ", "; Set-Cookie lines one by one below.)
    for (const [name, value] of response.headers)
      if (name !== "set-cookie") headers[canonicalHeaderName(name)] = [value];
    const setCookies = response.headers.getSetCookie();
    const cookies: Record<string, string> = {};
    if (setCookies.length > 0) {
      headers["Set-Cookie"] = setCookies;
      for (const line of setCookies) {
        const pair = line.split(";", 1)[0]!;
        const equals = pair.indexOf("=");
        if (equals > 0) cookies[pair.slice(0, equals).trim()] = pair.slice(equals + 1).trim();
      }
    }
    const length = response.headers.get("content-length");
    return {
      status: `${response.status} ${response.statusText}`.trim(),
      statusCode: response.status,
      contentLength: length !== null && /^\d+$/.test(length) ? Number(length) : -1,
      headers,
      cookies,
      body: new Binary(body),
    };
  }
}

/** Why a request failed, in a few words (the time limit, a refused connection, a bad name…). */
function reason(error: unknown): string {
  const { name, message, cause } = error as {
    name?: string;
    message?: string;
    cause?: { code?: string; message?: string };
  };
  if (name === "TimeoutError" || name === "AbortError") return "the call's time ran out";
  return cause?.code ?? cause?.message ?? message ?? String(error);
}
