/**
 * Registers route files (each naming an operationId of a document) with their method, URL and
 * schemas from the documents, the area's error shapes, and the auth mode where one is given.
 */
import type { FastifyInstance } from "fastify";
import type { AuthMode } from "../app-services/auth-context.ts";
import type { Area } from "../errors/catalogue.ts";
import { sendError } from "../http/error-handler.ts";
import { ignoreRequestBodies } from "../http/json-body.ts";
import { operation } from "./operations.ts";

export interface DocumentedRoute {
  operationId: string;
  auth?: AuthMode;
  handler: unknown;
}

export function registerDocumentedRoutes(app: FastifyInstance, routes: readonly DocumentedRoute[], area: Area): void {
  const add = (scope: FastifyInstance, route: DocumentedRoute) => {
    const spec = operation(route.operationId);
    scope.route({
      method: spec.method,
      url: spec.url,
      schema: spec.schema,
      config: { operationId: route.operationId, area, ...(route.auth ? { auth: route.auth } : {}) },
      handler: route.handler as never,
      errorHandler: (error, request, reply) => sendError(request, reply, error),
    });
  };
  const takesBody = (route: DocumentedRoute) => operation(route.operationId).operation.requestBody !== undefined;
  for (const route of routes.filter(takesBody)) add(app, route);
  // Operations without a request body ignore a stray one, in a scope of their own (see ignoreRequestBodies).
  void app.register(async (scope) => {
    ignoreRequestBodies(scope);
    for (const route of routes.filter((r) => !takesBody(r))) add(scope, route);
  });
}
