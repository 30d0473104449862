/**
 * How a request's path is routed, and its query read (`firstValues`, below). Two kinds of path would otherwise never reach a route nor the
 * error handler, and be answered in the router's own words (`FST_ERR_BAD_URL`,
 * `FST_ERR_MAX_PARAM_LENGTH`), without the request's id or CORS headers:
 *
 * - A path whose percent-encoding is malformed (`/app/%ZZ/location`, `/…/50%`, escapes that are
 *   not UTF-8). It is read as the URL standard reads it (https://url.spec.whatwg.org/#percent-decode,
 *   then UTF-8 decoding): a `%` not followed by two hex digits is itself, bytes that are not UTF-8
 *   are U+FFFD. The path is rewritten to the well-formed one naming the same thing, so it is routed
 *   and answered as any other (an app not found, no such route); `request.originalUrl` keeps what
 *   was sent. A path without `%`, or whose escapes decode, is not touched: one `indexOf` a request.
 * - A path parameter longer than the router's default 100 characters (or any bound short of the
 *   request line's): no name the services accept is that long, so a longer one is an unknown app,
 *   key or collection, as the handlers answer. The request line is bounded by the head's size.
 */

import { parse } from "fast-querystring";
import type { RawRequestDefaultExpression } from "fastify";
import { maxRequestHeaderBytes } from "../runtime/large-requests.ts";

const hex = (code: number) => (code >= 48 && code <= 57) || (code >= 65 && code <= 70) || (code >= 97 && code <= 102);
const utf8 = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

/** A run of `%XX` escapes as bytes, read as UTF-8 (U+FFFD where not), escaped again. */
function escapedAgain(run: string): string {
  const bytes = new Uint8Array(run.length / 3);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(run.slice(3 * i + 1, 3 * i + 3), 16);
  return encodeURIComponent(utf8.decode(bytes));
}

/** The path read as the URL standard reads it, written with well-formed escapes. */
export function wellFormedPath(path: string): string {
  let out = "";
  let i = 0;
  while (i < path.length) {
    const percent = path.indexOf("%", i);
    if (percent === -1) return out + path.slice(i);
    out += path.slice(i, percent);
    let end = percent;
    while (path.charCodeAt(end) === 37 && hex(path.charCodeAt(end + 1)) && hex(path.charCodeAt(end + 2))) end += 3;
    if (end === percent) {
      out += "%25";
      i = percent + 1;
    } else {
      out += escapedAgain(path.slice(percent, end));
      i = end;
    }
  }
  return out;
}

/** The URL to route: `url` itself unless its path's percent-encoding is malformed. */
export function routedUrl(url: string): string {
  const percent = url.indexOf("%");
  if (percent === -1) return url;
  let end = url.indexOf("?");
  const hash = url.indexOf("#");
  if (end === -1 || (hash !== -1 && hash < end)) end = hash;
  if (end === -1) end = url.length;
  if (percent > end) return url;
  const path = url.slice(0, end);
  try {
    decodeURI(path);
    return url;
  } catch {
    return wellFormedPath(path) + url.slice(end);
  }
}

/**
 * A query string as Go's `URL.Query().Get` reads it, which the service's handlers use: a key given
 * more than once is its first value (`?link=false&link=true` does not link), not an array that no
 * parameter of the documents takes. HTTPS endpoints' functions see the same (the documentation: "only
 * the first occurrence is represented"; the whole string is `rawQueryString`).
 */
export function firstValues(query: string): Record<string, string> {
  const parsed = parse(query) as Record<string, string | string[]>;
  for (const key in parsed) {
    const value = parsed[key]!;
    if (typeof value !== "string") parsed[key] = value[0]!;
  }
  return parsed as Record<string, string>;
}

/** Fastify's options for routing requests as above (the emulator's and the identity provider's servers). */
export const routing = {
  rewriteUrl: (request: RawRequestDefaultExpression) => routedUrl(request.url ?? "/"),
  routerOptions: { ignoreTrailingSlash: false, maxParamLength: maxRequestHeaderBytes, querystringParser: firstValues },
};
