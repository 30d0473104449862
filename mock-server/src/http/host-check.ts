/**
 * The Host allow-list, in every mode: the emulator answers only requests whose `Host` names it —
 * loopback names and addresses, the address it listens on, the host of `--public-url`, and the
 * hosts given with `--allowed-hosts` (`*` switches the check off). Anything else is refused before
 * routing, so a web page cannot reach the emulator through DNS rebinding (a name the attacker
 * controls, resolved to 127.0.0.1): the browser would send that name as `Host`.
 */
import { isIP } from "node:net";
import type { FastifyInstance } from "fastify";
import { isLoopback } from "../config/options.ts";
import { appServicesErrors, controlErrors, emailJsErrors } from "../errors/catalogue.ts";
import { areaOfUrl } from "./areas.ts";
import { sendError } from "./error-handler.ts";

/** A DNS label (underscores too: container and service names use them). */
const label = "[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?";
const hostNamePattern = new RegExp(`^${label}(?:\\.${label})*\\.?$`, "i");

/**
 * Whether a `Host` header is a host and nothing else: a name, an IPv4 address or a bracketed IPv6
 * address, then an optional numeric port (RFC 9110 §7.2). Checked before the allow-list (and with
 * `--allowed-hosts '*'` too), so `127.0.0.1:4000@evil.com` is refused rather than read as
 * `127.0.0.1`, and `location` never echoes anything else.
 */
export function isValidHost(header: string): boolean {
  if (header.length === 0 || header.length > 261) return false;
  let port: string | undefined;
  if (header.startsWith("[")) {
    const end = header.indexOf("]");
    if (end < 0 || isIP(header.slice(1, end)) !== 6) return false;
    const rest = header.slice(end + 1);
    if (rest !== "") {
      if (!rest.startsWith(":")) return false;
      port = rest.slice(1);
    }
  } else {
    const colon = header.indexOf(":");
    const name = colon >= 0 ? header.slice(0, colon) : header;
    if (colon >= 0) port = header.slice(colon + 1);
    if (name.length > 254 || !hostNamePattern.test(name)) return false;
  }
  return port === undefined || (/^\d{1,5}$/.test(port) && Number(port) <= 65_535);
}

/** The host name of a `Host` header, lower-cased, without port or IPv6 brackets. */
export function hostName(header: string): string {
  const value = header.trim().toLowerCase();
  if (value.startsWith("[")) {
    const end = value.indexOf("]");
    return end > 0 ? value.slice(1, end) : value;
  }
  const colon = value.indexOf(":");
  // A bare IPv6 address (not valid in Host, but harmless to recognise) has several colons.
  const name = colon >= 0 && value.indexOf(":", colon + 1) < 0 ? value.slice(0, colon) : value;
  return name.replace(/\.$/, "");
}

/** What `--allowed-hosts` may list: `*`, a name (a leading dot allows its subdomains too) or an address. */
export function checkAllowedHost(entry: string): string | null {
  if (entry === "*") return null;
  if (isIP(entry) !== 0) return null;
  const name = entry.startsWith(".") ? entry.slice(1) : entry;
  const label = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/i;
  if (name.length > 0 && name.length <= 253 && name.split(".").every((part) => label.test(part))) return null;
  return `'${entry}' is not a host name or address`;
}

/** `--trust-proxy`: `true`, a hop count, or addresses/CIDRs; or the reason it is none of these. */
export function parseTrustProxy(text: string): boolean | number | string[] | string {
  const value = text.trim();
  if (value === "true") return true;
  if (value === "false") return false;
  if (/^\d+$/.test(value)) return Number(value);
  const entries = value
    .split(",")
    .map((e) => e.trim())
    .filter(Boolean);
  const bad = entries.find((e) => {
    const [address, bits, extra] = e.split("/");
    if (extra !== undefined || !address || isIP(address) === 0) return true;
    return bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= (isIP(address) === 4 ? 32 : 128));
  });
  if (entries.length === 0 || bad !== undefined)
    return `'${bad ?? value}' is not true, a hop count, or an address or CIDR list`;
  return entries;
}

export interface HostPolicy {
  /** Whether a request with this `Host` header is answered. */
  allows(header: string | undefined): boolean;
}

export function hostPolicy(options: { host: string; publicUrl: string | null; allowedHosts: string[] }): HostPolicy {
  if (options.allowedHosts.includes("*")) return { allows: (header) => header !== undefined && isValidHost(header) };
  const exact = new Set<string>();
  const suffixes: string[] = [];
  for (const entry of options.allowedHosts.map((h) => h.toLowerCase())) {
    if (entry.startsWith(".")) suffixes.push(entry);
    else exact.add(hostName(entry));
  }
  if (options.publicUrl) exact.add(hostName(new URL(options.publicUrl).host));
  // The address it listens on, when that is one address (not a wildcard).
  if (options.host !== "0.0.0.0" && options.host !== "::") exact.add(hostName(options.host));
  const decide = (header: string) => {
    if (!isValidHost(header)) return false;
    const name = hostName(header);
    if (isLoopback(name) || exact.has(name)) return true;
    return suffixes.some((suffix) => name === suffix.slice(1) || name.endsWith(suffix));
  };
  // Clients send the same few Host values over and over: remember the answers (bounded).
  const answers = new Map<string, boolean>();
  return {
    allows(header) {
      if (header === undefined) return false;
      let answer = answers.get(header);
      if (answer === undefined) {
        answer = decide(header);
        if (answers.size >= 1024) answers.clear();
        answers.set(header, answer);
      }
      return answer;
    },
  };
}

export function registerHostCheck(app: FastifyInstance) {
  const policy = hostPolicy(app.emulator.options);
  app.addHook("onRequest", (request, reply, done) => {
    if (policy.allows(request.headers.host)) return done();
    const header = request.headers.host ?? "";
    // A malformed value is not echoed (not even into the advice to allow it).
    const host = isValidHost(header) ? hostName(header) : null;
    const area = areaOfUrl(request.url);
    const error =
      area === "emailjs"
        ? emailJsErrors.hostNotAllowed(host)
        : area === "control"
          ? controlErrors.hostNotAllowed(host)
          : appServicesErrors.hostNotAllowed(host);
    sendError(request, reply, error);
  });
}
