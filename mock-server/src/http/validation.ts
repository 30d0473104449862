/**
 * Request validation from the documents' JSON Schemas (OpenAPI 3.1 = JSON Schema 2020-12).
 * Bodies are validated exactly (no type coercion: a number is not a string); path and query
 * parameters, which are always text on the wire, are coerced to their documented types.
 */
import { _, Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import fastJson from "fast-json-stringify";
import type { FastifyInstance } from "fastify";

/**
 * An Ajv for the documents' schemas (JSON Schema 2020-12 with formats). `standalone`: one whose
 * validators can be written out as code (`ajv/dist/standalone`), their formats required from
 * ajv-formats by that code (config/start-validators.ts).
 */
export function createAjv(coerceTypes = false, { standalone = false } = {}) {
  // strict: false lets the documents carry their `x-` extensions and `examples`; strictNumbers
  // refuses Infinity and NaN where a number is documented (`1e400` parses as Infinity). Compiling is
  // part of each route's first request (and of a start from the sources: a --config file's and a
  // --data-dir state's validators, which the bundle carries precompiled), so it does the least it
  // can: the schemas are the documents' own, checked against JSON Schema 2020-12's meta-schema by
  // the tests (test/http/document-schemas.test.ts) rather than by compiling the meta-schema in
  // every Ajv (~140 ms each); and the generated code is not optimized (a third of a large schema's
  // compile; the validators run as fast: 24–31 ns a body either way).
  const ajv = new Ajv2020({
    validateSchema: false,
    code: {
      optimize: false,
      ...(standalone ? { source: true, esm: true, formats: _`require("ajv-formats/dist/formats").fullFormats` } : {}),
    },
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

/**
 * What the routes' schemas compile to, once per schema in a process. The schemas are the documents'
 * objects (openapi/operations.ts builds them once), so every emulator built in a process — tests
 * build one per file, many per file at times — reuses the validators and serializers the first one
 * compiled instead of compiling them again (Ajv's code generation was a tenth of the unit tests'
 * CPU). Both are pure functions of their schema: nothing of a request or an emulator is kept here.
 */
const compiled = {
  ajv: undefined as { bodies: Ajv2020; parameters: Ajv2020 } | undefined,
  bodies: new WeakMap<object, ValidateFunction>(),
  parameters: new WeakMap<object, ValidateFunction>(),
  serializers: new WeakMap<object, (data: unknown) => string>(),
};

function validatorOf(schema: Record<string, unknown>, body: boolean): ValidateFunction {
  const cache = body ? compiled.bodies : compiled.parameters;
  let validate = cache.get(schema);
  if (!validate) {
    compiled.ajv ??= { bodies: createAjv(false), parameters: createAjv(true) };
    validate = (body ? compiled.ajv.bodies : compiled.ajv.parameters).compile(schema);
    cache.set(schema, validate);
  }
  return validate;
}

function serializerOf(schema: Parameters<typeof fastJson>[0]): (data: unknown) => string {
  let serialize = compiled.serializers.get(schema as object);
  if (!serialize) {
    serialize = fastJson(schema);
    compiled.serializers.set(schema as object, serialize);
  }
  return serialize;
}

/**
 * Compiles each route's schemas on its first request, not at start-up: compiling every route's
 * schemas up front cost the emulator most of its start time (routes a test never calls then cost
 * nothing). `app.compileSchemas()` compiles the rest now, one schema a turn, and answers how many
 * it compiled (a schema a route's request compiled meanwhile counts too): the production server
 * calls it before it says it is ready, so no request of its users waits for a compilation.
 */
export function registerValidation(app: FastifyInstance): void {
  const uncompiled: (() => void)[] = [];
  app.decorate("compileSchemas", async () => {
    let count = 0;
    for (let compile = uncompiled.shift(); compile !== undefined; compile = uncompiled.shift()) {
      compile();
      count++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    return count;
  });
  app.setValidatorCompiler(({ schema, httpPart }) => {
    let validate: ValidateFunction | undefined;
    uncompiled.push(() => {
      validate ??= validatorOf(schema as Record<string, unknown>, httpPart === "body");
    });
    const run = (data: unknown) => {
      validate ??= validatorOf(schema as Record<string, unknown>, httpPart === "body");
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
    uncompiled.push(() => {
      serialize ??= serializerOf(schema as Parameters<typeof fastJson>[0]);
    });
    return (data: unknown) => {
      serialize ??= serializerOf(schema as Parameters<typeof fastJson>[0]);
      return serialize(data);
    };
  });
}
