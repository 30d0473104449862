/**
 * `%%request` of App Services' expressions (a function's `can_evaluate`, data access rules): what
 * the client's request says of itself, read only when an expression names it.
 */
import type { FastifyRequest } from "fastify";
import type { Document } from "../data/documents.ts";

export function requestExpansion(request: FastifyRequest): () => Document {
  return () => ({
    httpMethod: request.method,
    httpReferrer: request.headers.referer ?? "",
    httpUserAgent: request.headers["user-agent"] ?? "",
    rawQueryString: request.url.split("?")[1] ?? "",
    remoteIPAddress: request.ip,
  });
}
