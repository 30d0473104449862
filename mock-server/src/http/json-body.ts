/**
 * The JSON body parser for every route: an empty body is "no body" (realm-core sends
 * `Content-Type: application/json` with an empty body on `POST /auth/session`), nesting deeper
 * than MongoDB allows is refused before parsing (so a hostile 18 MB `[[[[…` costs one linear scan,
 * not seconds of parsing), and prototype-pollution keys are refused.
 */
import type { FastifyInstance } from "fastify";
import secureJson from "secure-json-parse";

/** MongoDB refuses documents nested deeper than 100 levels; requests add a few levels of envelope. */
export const maxJsonDepth = 128;

export class JsonBodyError extends Error {
  readonly statusCode = 400;
  constructor(
    message: string,
    readonly code: "JSON_SYNTAX" | "JSON_TOO_DEEP" | "JSON_FORBIDDEN_KEY",
  ) {
    super(message);
  }
}

/** The nesting depth of a JSON text, scanning strings correctly; stops early past `limit`. */
export function jsonDepth(text: string, limit: number): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      depth++;
      if (depth > max) {
        max = depth;
        if (max > limit) return max;
      }
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  return max;
}

export function parseJsonBody(text: string): unknown {
  if (text.trim() === "") return undefined;
  if (jsonDepth(text, maxJsonDepth) > maxJsonDepth) {
    throw new JsonBodyError(`the JSON body is nested deeper than ${maxJsonDepth} levels`, "JSON_TOO_DEEP");
  }
  try {
    return secureJson.parse(text, undefined, { protoAction: "error", constructorAction: "error" });
  } catch (error) {
    const message = (error as Error).message;
    if (/prototype|constructor/i.test(message)) {
      throw new JsonBodyError(
        "the JSON body contains a forbidden key (__proto__ or constructor.prototype)",
        "JSON_FORBIDDEN_KEY",
      );
    }
    throw new JsonBodyError(`the body is not valid JSON: ${message}`, "JSON_SYNTAX");
  }
}

export function registerJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser("application/json");
  app.decorateRequest("jsonText", null);
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    let parsed: unknown;
    try {
      parsed = parseJsonBody(body as string);
    } catch (error) {
      done(error as Error, undefined);
      return;
    }
    // Kept for the journal (http/request-journal.ts): a body that names no secret is kept as this text.
    if (parsed !== undefined) request.jsonText = body as string;
    done(null, parsed);
  });
}

/**
 * For the routes of operations that take no request body: any body is read and dropped, whatever
 * its content type, size or content (the document lists no error for a stray body on a DELETE or on
 * `POST /auth/session`; found by the fuzzer). Used in a plugin scope holding only those routes.
 */
export function ignoreRequestBodies(scope: FastifyInstance): void {
  // Its type too: Fastify refuses a malformed Content-Type (`a/b, c/d`) before any parser runs.
  scope.addHook("preParsing", (request, _reply, payload, done) => {
    // (Only when there is one: deleting a property turns the headers object into a slow dictionary.)
    if (request.headers["content-type"] !== undefined) delete request.headers["content-type"];
    done(null, payload);
  });
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser("*", (_request, payload, done) => {
    payload.on("error", (error) => done(error, undefined));
    payload.on("end", () => done(null, undefined));
    payload.resume();
  });
}
