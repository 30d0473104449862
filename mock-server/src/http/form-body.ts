/**
 * `application/x-www-form-urlencoded` bodies, for the operations whose documents take them (the
 * OAuth 2.0 callback's form post, the fake identity provider's forms and token endpoint); every
 * other operation keeps refusing them (415), as before. The first value of a repeated field wins;
 * prototype keys are dropped.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { operation } from "../openapi/operations.ts";

export const formMediaType = "application/x-www-form-urlencoded";
const formBodyLimit = 64 * 1024;
const forbidden = new Set(["__proto__", "constructor", "prototype"]);

export function parseForm(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(text)) {
    if (!forbidden.has(key) && !(key in out)) out[key] = value;
  }
  return out;
}

function takesForms(request: FastifyRequest): boolean {
  const operationId = request.routeOptions.config?.operationId;
  return operationId !== undefined && operation(operationId).requestMediaTypes.includes(formMediaType);
}

class UnsupportedMediaType extends Error {
  readonly statusCode = 415;
  readonly code = "FST_ERR_CTP_INVALID_MEDIA_TYPE";
}

export function registerFormParser(scope: FastifyInstance): void {
  scope.addContentTypeParser(formMediaType, { parseAs: "string", bodyLimit: formBodyLimit }, (request, body, done) => {
    if (!takesForms(request)) return done(new UnsupportedMediaType(`Unsupported Media Type: ${formMediaType}`));
    done(null, parseForm(body as string));
  });
}
