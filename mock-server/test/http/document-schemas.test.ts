/**
 * Every schema the emulator compiles — the documents' components and each operation's parameters,
 * bodies and replies — is a valid JSON Schema 2020-12. The emulator's Ajv does not check its schemas
 * against the meta-schema (http/validation.ts: compiling the meta-schema took each new Ajv ~140 ms of
 * a start), so this file does, once per run.
 */
import { documents } from "@harness/openapi/documents";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";

type Json = Record<string, unknown>;

/** Each schema of a document, named by where it is. */
function schemasOf(document: Json): [string, unknown][] {
  const found: [string, unknown][] = [];
  const components = (document.components as { schemas?: Json } | undefined)?.schemas ?? {};
  for (const [name, schema] of Object.entries(components)) found.push([`#/components/schemas/${name}`, schema]);
  const content = (where: string, media: Json | undefined) => {
    for (const [type, entry] of Object.entries(media ?? {}))
      if ((entry as Json).schema !== undefined) found.push([`${where} ${type}`, (entry as Json).schema]);
  };
  for (const [path, item] of Object.entries(document.paths as Json)) {
    for (const [method, operation] of Object.entries(item as Json)) {
      if (typeof operation !== "object" || operation === null || !("responses" in operation)) continue;
      const op = operation as { parameters?: Json[]; requestBody?: { content?: Json }; responses: Json };
      const where = `${method.toUpperCase()} ${path}`;
      for (const parameter of op.parameters ?? [])
        found.push([`${where} ${parameter.in} ${parameter.name}`, parameter.schema]);
      content(`${where} body`, op.requestBody?.content);
      for (const [status, response] of Object.entries(op.responses))
        content(`${where} ${status}`, (response as { content?: Json }).content);
    }
  }
  return found;
}

const ajv = new Ajv2020({ strict: false });
addFormats(ajv);
const problems = (schema: unknown) => (ajv.validateSchema(schema as object) ? [] : (ajv.errors ?? []));

describe("the documents' schemas", () => {
  it("are checked against the meta-schema here (a broken one is caught)", () => {
    expect(problems({ type: "strin" })).not.toEqual([]);
    expect(problems({ type: "object", properties: { a: { minLength: -1 } } })).not.toEqual([]);
  });

  for (const [name, document] of Object.entries(documents)) {
    it(`of ${name} are valid JSON Schema 2020-12`, () => {
      const schemas = schemasOf(document as unknown as Json);
      expect(schemas.length).toBeGreaterThan(10);
      const invalid = schemas
        .map(([where, schema]) => [where, problems(schema).map((e) => `${e.instancePath} ${e.message}`)] as const)
        .filter(([, errors]) => errors.length > 0);
      expect(invalid).toEqual([]);
    });
  }
});

/** The object schemas of a (dereferenced) document's JSON replies, named by where they are. */
function replyObjects(document: Json): [string, Json][] {
  const found: [string, Json][] = [];
  const visit = (where: string, schema: unknown) => {
    if (typeof schema !== "object" || schema === null) return;
    const node = schema as Json;
    if (node.type === "object" || node.properties !== undefined) found.push([where, node]);
    for (const [key, child] of Object.entries((node.properties as Json | undefined) ?? {}))
      visit(`${where}.${key}`, child);
    if (node.items !== undefined) visit(`${where}[]`, node.items);
  };
  for (const [path, item] of Object.entries(document.paths as Json))
    for (const [method, operation] of Object.entries(item as Json))
      for (const [status, response] of Object.entries((operation as { responses?: Json }).responses ?? {})) {
        const json = ((response as Json).content as Json | undefined)?.["application/json"] as Json | undefined;
        if (json) visit(`${method.toUpperCase()} ${path} ${status}`, json.schema);
      }
  return found;
}

describe("App Services replies", () => {
  it("document every object's properties: none takes more unless it says so (profile data)", () => {
    const objects = replyObjects(documents["app-services"] as unknown as Json);
    expect(objects.length).toBeGreaterThan(50);
    const open = objects.filter(([, schema]) => schema.additionalProperties !== false).map(([where]) => where);
    expect(open).toEqual(["GET /api/client/v2.0/auth/profile 200.data"]);
  });
});
