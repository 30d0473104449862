/**
 * Turns the OpenAPI documents into Fastify route options, by operationId: method, URL, and the
 * request (params, querystring, JSON body) and response schemas. Route files name an operationId;
 * everything else about the route comes from here, so the emulator cannot drift from the contract.
 */
import { type DocumentName, documents } from "@harness/openapi/documents";
import type { FastifySchema, HTTPMethods } from "fastify";

type JsonSchema = Record<string, unknown>;

interface ParameterObject {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required?: boolean;
  schema?: JsonSchema;
  /** A path parameter that takes the rest of the path, slashes included (Fastify's `*`). */
  "x-rest-of-path"?: boolean;
}

interface OperationObject {
  operationId: string;
  parameters?: ParameterObject[];
  requestBody?: { required?: boolean; content: Record<string, { schema?: JsonSchema }> };
  responses: Record<string, { content?: Record<string, { schema?: JsonSchema }> }>;
}

export interface OperationSpec {
  document: DocumentName;
  operationId: string;
  method: HTTPMethods;
  /** The OpenAPI path template, e.g. `/api/client/v2.0/app/{appId}/location`. */
  path: string;
  /** The Fastify URL, e.g. `/api/client/v2.0/app/:appId/location`. */
  url: string;
  schema: FastifySchema;
  /** The media types of the request body the document allows. */
  requestMediaTypes: string[];
  operation: OperationObject;
}

const httpMethods = ["get", "put", "post", "delete", "patch"] as const;

function objectSchema(parameters: ParameterObject[]): JsonSchema | undefined {
  if (parameters.length === 0) return undefined;
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const p of parameters) {
    properties[p.name] = p.schema ?? {};
    if (p.required) required.push(p.name);
  }
  return { type: "object", properties, ...(required.length > 0 ? { required } : {}) };
}

function optional(schema: JsonSchema): JsonSchema {
  return schema.type === "object" ? { ...schema, type: ["object", "null"] } : schema;
}

function responseSchemas(operation: OperationObject): Record<string, unknown> {
  const response: Record<string, unknown> = {};
  for (const [status, spec] of Object.entries(operation.responses)) {
    // Only JSON replies are serialized from schemas; text and event streams are written as they are.
    const json = spec.content?.["application/json"]?.schema;
    if (json && /^\d{3}$/.test(status)) response[status] = json;
  }
  return response;
}

function build(): Map<string, OperationSpec> {
  const specs = new Map<string, OperationSpec>();
  for (const document of Object.keys(documents) as DocumentName[]) {
    for (const [path, item] of Object.entries(documents[document].paths)) {
      const shared = (item.parameters as ParameterObject[] | undefined) ?? [];
      for (const method of httpMethods) {
        const operation = item[method] as OperationObject | undefined;
        if (!operation) continue;
        const parameters = [...shared, ...(operation.parameters ?? [])];
        const schema: FastifySchema = {};
        // Path parameters (all strings) are looked up, not validated: an id outside the document's
        // lengths is simply not found, the error the document lists (it lists no 400 for them).
        const querystring = objectSchema(parameters.filter((p) => p.in === "query"));
        const body = operation.requestBody?.content["application/json"]?.schema;
        if (querystring) schema.querystring = querystring;
        // Fastify validates an absent body as null: an optional body (createApp, createEmailJsAccount) may be absent.
        if (body) schema.body = operation.requestBody?.required ? body : optional(body);
        const response = responseSchemas(operation);
        if (Object.keys(response).length > 0) schema.response = response;
        specs.set(operation.operationId, {
          document,
          operationId: operation.operationId,
          method: method.toUpperCase() as HTTPMethods,
          path,
          url: path.replace(/\{([^}]+)\}/g, (_, name: string) =>
            parameters.some((p) => p.name === name && p["x-rest-of-path"]) ? "*" : `:${name}`,
          ),
          schema,
          requestMediaTypes: Object.keys(operation.requestBody?.content ?? {}),
          operation,
        });
      }
    }
  }
  return specs;
}

export const operations: ReadonlyMap<string, OperationSpec> = build();

export function operation(operationId: string): OperationSpec {
  const spec = operations.get(operationId);
  if (!spec) throw new Error(`No operation ${operationId} in the OpenAPI documents`);
  return spec;
}

export function operationIdsOf(document: DocumentName): string[] {
  return [...operations.values()].filter((o) => o.document === document).map((o) => o.operationId);
}
