/**
 * Contract checks for tests: every reply is validated against the OpenAPI document of its
 * operation (status documented, content type, body schema), so the emulator cannot drift.
 */

import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
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

type Responses = Record<string, { content?: Record<string, { schema?: object }> }>;

/**
 * Asserts that a reply is one the document allows for this operation, and returns its JSON body
 * (or text for non-JSON replies, or undefined for empty ones).
 */
export function expectContract(operationId: string, response: LightMyRequestResponse): unknown {
  const spec = operation(operationId);
  const responses = spec.operation.responses as Responses;
  const documented = responses[String(response.statusCode)] ?? responses[`${String(response.statusCode)[0]}XX`];
  expect(
    documented,
    `${operationId} answered ${response.statusCode}, which its document does not list: ${response.body}`,
  ).toBeDefined();
  const content = documented?.content;
  const type = response.headers["content-type"];
  if (!content || Object.keys(content).length === 0) {
    expect(response.body, `${operationId} ${response.statusCode} must have no body`).toBe("");
    expect(type, `${operationId} ${response.statusCode} must have no Content-Type`).toBeUndefined();
    return undefined;
  }
  expect(type, `${operationId} ${response.statusCode} needs a Content-Type`).toBeDefined();
  const mediaType = String(type).split(";")[0]!.trim();
  expect(Object.keys(content), `${operationId} ${response.statusCode} answered ${type}`).toContain(mediaType);
  if (mediaType === "application/json" && spec.document === "app-services") {
    // realm-core reads JSON bodies only under exactly this header.
    expect(type).toBe("application/json");
  }
  const schema = content[mediaType]?.schema;
  const body = mediaType === "application/json" ? JSON.parse(response.body) : response.body;
  if (schema) {
    const validate = validatorFor(schema);
    expect(
      validate(body),
      `${operationId} ${response.statusCode} body ${response.body} breaks its schema: ${ajv.errorsText(validate.errors)}`,
    ).toBe(true);
  }
  return body;
}
