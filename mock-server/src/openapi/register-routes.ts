/**
 * Registers route files (each naming an operationId of a document) with their method, URL and
 * schemas from the documents, the area's error shapes, and what else the area's plugin keeps in
 * each route's config (App Services: the auth mode).
 */
import type { FastifyContextConfig, FastifyInstance } from "fastify";
import type { Area } from "../errors/catalogue.ts";
import { sendError } from "../http/error-handler.ts";
import { ignoreRequestBodies } from "../http/json-body.ts";
import { operation } from "./operations.ts";

export interface DocumentedRoute {
  operationId: string;
  handler: unknown;
}

export function registerDocumentedRoutes<R extends DocumentedRoute>(
  app: FastifyInstance,
  routes: readonly R[],
  area: Area,
  configOf?: (route: R) => Omit<FastifyContextConfig, "operationId" | "area">,
): void {
  const add = (scope: FastifyInstance, route: R) => {
    const spec = operation(route.operationId);
    scope.route({
      method: spec.method,
      url: spec.url,
      schema: spec.schema,
      config: { operationId: route.operationId, area, ...configOf?.(route) },
      handler: route.handler as never,
      errorHandler: (error, request, reply) => sendError(request, reply, error),
    });
  };
  const takesBody = (route: R) => operation(route.operationId).operation.requestBody !== undefined;
  for (const route of routes.filter(takesBody)) add(app, route);
  // Operations without a request body ignore a stray one, in a scope of their own (see ignoreRequestBodies).
  void app.register(async (scope) => {
    ignoreRequestBodies(scope);
    for (const route of routes.filter((r) => !takesBody(r))) add(scope, route);
  });
}
