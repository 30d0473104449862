/**
 * The contract rules of a reply (status documented, content type, body schema), as a function that
 * reports: `expectContract` asserts on it in tests, and the fuzzer (which runs outside Vitest too)
 * uses it as its oracle.
 */

import { documents } from "@harness/openapi/documents";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { operation } from "../../src/openapi/operations.ts";

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const compiled = new WeakMap<object, ReturnType<typeof ajv.compile>>();
function validatorFor(schema: object) {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  return validate;
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  /** The body as text (for event streams: what arrived before the fuzzer hung up). */
  body: string;
}

type Responses = Record<
  string,
  {
    content?: Record<
      string,
      { schema?: object; examples?: Record<string, { value?: unknown }>; "x-event-data"?: object }
    >;
  }
>;

/**
 * The problem with an event stream's `data:` lines, when its document gives their JSON a schema
 * (`x-event-data`): each whole event (one followed by its blank line; the last may be cut) must be
 * JSON the schema takes.
 */
function eventDataProblem(operationId: string, schema: object, body: string): string | null {
  const validate = validatorFor(schema);
  const events = body.split("\n\n").slice(0, -1);
  for (const event of events) {
    for (const line of event.split("\n")) {
      if (!line.startsWith("data:")) continue;
      let data: unknown;
      try {
        data = JSON.parse(line.slice(5));
      } catch {
        return `${operationId} sent a data line that is not JSON: ${clip(line)}`;
      }
      if (!validate(data))
        return `${operationId} sent an event that breaks its schema (${ajv.errorsText(validate.errors)}): ${clip(line)}`;
    }
  }
  return null;
}

/**
 * The `error_code`s the document's examples give a reply (App Services errors): an error reply's
 * code must be one of them, so an answer the document does not describe cannot go unnoticed (the
 * schema alone takes any code). Empty when the response names none.
 */
function documentedErrorCodes(examples: Record<string, { value?: unknown }> | undefined): Set<string> {
  const codes = new Set<string>();
  for (const example of Object.values(examples ?? {})) {
    const code = (example?.value as { error_code?: unknown } | undefined)?.error_code;
    if (typeof code === "string") codes.add(code);
  }
  return codes;
}

export const clip = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text);

/** The problem with a reply to an operation, or null when the document allows it. */
export function contractProblem(operationId: string, reply: Reply): string | null {
  const spec = operation(operationId);
  const responses = spec.operation.responses as Responses;
  const documented = responses[String(reply.status)] ?? responses[`${String(reply.status)[0]}XX`];
  // A server error is a bug; 503 (the database cannot be reached, `--database` only) is documented.
  if (reply.status >= 500 && !(reply.status === 503 && documented))
    return `${operationId} answered ${reply.status}: ${clip(reply.body)}`;
  if (!documented)
    return `${operationId} answered ${reply.status}, which its document does not list: ${clip(reply.body)}`;
  const content = documented.content;
  const type = reply.headers["content-type"];
  // `*/*`: any reply the operation's own code chose (an HTTPS endpoint's function), body or none.
  if (content && "*/*" in content) return null;
  if (!content || Object.keys(content).length === 0) {
    if (reply.body !== "") return `${operationId} ${reply.status} must have no body: ${clip(reply.body)}`;
    if (type !== undefined) return `${operationId} ${reply.status} must have no Content-Type, has ${type}`;
    return null;
  }
  if (typeof type !== "string") return `${operationId} ${reply.status} has no Content-Type`;
  const mediaType = type.split(";")[0]!.trim();
  if (!(mediaType in content))
    return `${operationId} ${reply.status} answered ${type}, documented: ${Object.keys(content)}`;
  if (mediaType === "application/json" && spec.document === "app-services" && type !== "application/json") {
    return `${operationId} ${reply.status}: App Services JSON must be exactly application/json, was ${type}`;
  }
  if (mediaType === "text/event-stream") {
    const eventData = content[mediaType]?.["x-event-data"];
    return eventData ? eventDataProblem(operationId, eventData, reply.body) : null;
  }
  const schema = content[mediaType]?.schema;
  if (!schema) return null;
  let body: unknown = reply.body;
  if (mediaType === "application/json") {
    try {
      body = JSON.parse(reply.body);
    } catch {
      return `${operationId} ${reply.status} body is not JSON: ${clip(reply.body)}`;
    }
  }
  const validate = validatorFor(schema);
  if (!validate(body)) {
    return `${operationId} ${reply.status} body breaks its schema (${ajv.errorsText(validate.errors)}): ${clip(reply.body)}`;
  }
  const code = spec.document === "app-services" ? (body as { error_code?: unknown } | null)?.error_code : undefined;
  // (A body that cannot be read answers 400 BadRequest on any operation that takes one: the
  // document's conventions say so once, not in each operation's examples.)
  const unreadableBody = reply.status === 400 && code === "BadRequest" && spec.operation.requestBody !== undefined;
  if (typeof code === "string" && !unreadableBody) {
    const codes = documentedErrorCodes(content[mediaType]?.examples);
    if (codes.size > 0 && !codes.has(code))
      return `${operationId} ${reply.status} answered error_code ${code}, which its document's examples do not name (${[...codes]}): ${clip(reply.body)}`;
  }
  return null;
}

/**
 * The problem with a live event the emulator emitted (`streamEvents`' `data:` lines), or null when
 * the control document's `ControlEvent` takes it.
 */
export function controlEventProblem(event: unknown): string | null {
  const schemas = documents["mock-control"].components?.schemas as Record<string, object>;
  const validate = validatorFor(schemas.ControlEvent!);
  if (validate(event)) return null;
  return `an event the control document does not describe (${ajv.errorsText(validate.errors)}): ${clip(JSON.stringify(event))}`;
}
