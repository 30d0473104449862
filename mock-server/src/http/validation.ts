/**
 * Request validation from the documents' JSON Schemas (OpenAPI 3.1 = JSON Schema 2020-12).
 * Bodies are validated exactly (no type coercion: a number is not a string); path and query
 * parameters, which are always text on the wire, are coerced to their documented types.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import fastJson from "fast-json-stringify";
import type { FastifyInstance } from "fastify";

/** An Ajv for the documents' schemas (JSON Schema 2020-12 with formats). */
export function createAjv(coerceTypes = false) {
  // strict: false lets the documents carry their `x-` extensions and `examples`; strictNumbers
  // refuses Infinity and NaN where a number is documented (`1e400` parses as Infinity).
  const ajv = new Ajv2020({
    strict: false,
    strictNumbers: true,
    allErrors: false,
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
  });
  addFormats(ajv);
  return ajv;
}

/** The name of a coerced parameter that came out infinite (or NaN), if any. */
function infiniteParameter(data: unknown): string | undefined {
  if (data === null || typeof data !== "object") return undefined;
  for (const [name, value] of Object.entries(data)) {
    if (typeof value === "number" && !Number.isFinite(value)) return name;
  }
  return undefined;
}

export function registerValidation(app: FastifyInstance): void {
  const bodies = createAjv(false);
  const parameters = createAjv(true);
  // Compiled on a route's first request, not at start-up: compiling every route's schemas up front
  // cost the emulator most of its start time (routes a test never calls then cost nothing).
  app.setValidatorCompiler(({ schema, httpPart }) => {
    let validate: ValidateFunction | undefined;
    const run = (data: unknown) => {
      validate ??= (httpPart === "body" ? bodies : parameters).compile(schema as Record<string, unknown>);
      const valid = validate(data);
      run.errors = validate.errors;
      if (valid && httpPart !== "body") {
        // Coercion turns `1e400` into Infinity after the type check; no documented parameter is infinite.
        const infinite = infiniteParameter(data);
        if (infinite !== undefined) {
          run.errors = [
            {
              instancePath: `/${infinite}`,
              schemaPath: `#/properties/${infinite}/type`,
              keyword: "type",
              params: { type: "number" },
              message: "must be a finite number",
            },
          ];
          return false;
        }
      }
      return valid;
    };
    run.errors = null as ValidateFunction["errors"];
    return run;
  });
  // Response serializers likewise.
  app.setSerializerCompiler(({ schema }) => {
    let serialize: ((data: unknown) => string) | undefined;
    return (data: unknown) => {
      serialize ??= fastJson(schema as Parameters<typeof fastJson>[0]);
      return serialize(data);
    };
  });
}
