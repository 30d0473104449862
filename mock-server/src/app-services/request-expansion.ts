/**
 * What a client's request says of itself, as App Services gives it to functions
 * (`context.request`) and expressions (`%%request`: a function's `can_evaluate`, data access
 * rules): its address, its headers (canonical names, each a list of values, as the service wrote
 * them), the query string without its `secret` parameters (the service removes them), the method,
 * referrer and user agent. Read only when something asks.
 */
import type { FastifyRequest } from "fastify";
import type { Document } from "../data/documents.ts";
import { canonicalHeaderName } from "../http/header-names.ts";

/** The query string of a URL (no `?`) without its `secret` parameters. */
export function queryWithoutSecret(url: string): string {
  const at = url.indexOf("?");
  if (at < 0) return "";
  return url
    .slice(at + 1)
    .split("&")
    .filter((pair) => pair !== "" && parameterName(pair) !== "secret")
    .join("&");
}

function parameterName(pair: string): string {
  const name = pair.split("=", 1)[0]!.replace(/\+/g, " ");
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/** The request's headers: each name as the service wrote it, its values in the order sent. */
export function requestHeaders(request: FastifyRequest): Record<string, string[]> {
  // (No prototype: a header may be named __proto__.)
  const headers: Record<string, string[]> = Object.create(null);
  const raw = request.raw.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = canonicalHeaderName(raw[i]!);
    const values = headers[name] ?? [];
    values.push(raw[i + 1]!);
    headers[name] = values;
  }
  return headers;
}

export function requestExpansion(request: FastifyRequest): () => Document {
  return () => ({
    httpMethod: request.method,
    httpReferrer: request.headers.referer ?? "",
    httpUserAgent: request.headers["user-agent"] ?? "",
    rawQueryString: queryWithoutSecret(request.url),
    remoteIPAddress: request.ip,
    requestHeaders: requestHeaders(request),
  });
}
