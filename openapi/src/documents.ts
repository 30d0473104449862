/**
 * The three OpenAPI documents, fully dereferenced (generated from the YAML sources by
 * `npm run generate`). The emulator derives its routes, validators and serializers from these;
 * tests validate responses against them. Not for browser bundles: import types instead.
 */
import appServices from "./generated/app-services.json" with { type: "json" };
import emailjs from "./generated/emailjs.json" with { type: "json" };
import mockControl from "./generated/mock-control.json" with { type: "json" };

export type DocumentName = "app-services" | "emailjs" | "mock-control";

/** The parts of an OpenAPI 3.1 document the harness reads (the JSON is structurally this). */
export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, unknown>>;
  components?: Record<string, unknown>;
}

export const documents: Record<DocumentName, OpenApiDocument> = {
  "app-services": appServices as OpenApiDocument,
  emailjs: emailjs as OpenApiDocument,
  "mock-control": mockControl as OpenApiDocument,
};
