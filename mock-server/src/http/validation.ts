/**
 * Request validation from the documents' JSON Schemas (OpenAPI 3.1 = JSON Schema 2020-12).
 * Bodies are validated exactly (no type coercion: a number is not a string); path and query
 * parameters, which are always text on the wire, are coerced to their documented types.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { FastifyInstance } from "fastify";

function createAjv(coerceTypes: boolean) {
  // strict: false lets the documents carry their `x-` extensions and `examples`.
  const ajv = new Ajv2020({ strict: false, allErrors: false, coerceTypes, useDefaults: true, removeAdditional: false });
  addFormats(ajv);
  return ajv;
}

export function registerValidation(app: FastifyInstance): void {
  const bodies = createAjv(false);
  const parameters = createAjv(true);
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === "body" ? bodies : parameters).compile(schema as Record<string, unknown>),
  );
}
