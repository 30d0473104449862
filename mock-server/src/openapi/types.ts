/**
 * Type helpers that read request and response shapes out of the generated operation types, so
 * handlers are typed by the documents alone (no hand-written copies of API shapes).
 */
import type { operations as AppServicesOperations } from "@harness/openapi/types/app-services";
import type { operations as EmailJsOperations } from "@harness/openapi/types/emailjs";
import type {
  components as ControlComponents,
  operations as ControlOperations,
} from "@harness/openapi/types/mock-control";

export type { AppServicesOperations, ControlOperations, EmailJsOperations };
export type ControlSchemas = ControlComponents["schemas"];
export type AppServicesSchemas = import("@harness/openapi/types/app-services").components["schemas"];

export type JsonBody<O> = O extends { requestBody: { content: { "application/json": infer B } } }
  ? B
  : O extends { requestBody?: { content: { "application/json": infer B } } }
    ? B | undefined
    : undefined;

export type PathParams<O> = O extends { parameters: { path: infer P } } ? (P extends object ? P : object) : object;

export type QueryParams<O> = O extends { parameters: { query?: infer Q } } ? (Q extends object ? Q : object) : object;

export type JsonReply<O, S extends number> = O extends {
  responses: { [K in S]: { content: { "application/json": infer R } } };
}
  ? R
  : never;

/** The Fastify route generic for an operation: typed params, query and JSON body. */
export interface RouteTypes<O> {
  Params: PathParams<O>;
  Querystring: QueryParams<O>;
  Body: JsonBody<O>;
}
