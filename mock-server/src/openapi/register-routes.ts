/**
 * Registers route files (each naming an operationId of a document) with their method, URL and
 * schemas from the documents, the area's error shapes, and the auth mode where one is given.
 */
import type { FastifyInstance } from "fastify";
import type { AuthMode } from "../app-services/auth-context.ts";
import type { Area } from "../errors/catalogue.ts";
import { sendError } from "../http/error-handler.ts";
import { operation } from "./operations.ts";

export interface DocumentedRoute {
  operationId: string;
  auth?: AuthMode;
  handler: unknown;
}

export function registerDocumentedRoutes(app: FastifyInstance, routes: readonly DocumentedRoute[], area: Area): void {
  for (const route of routes) {
    const spec = operation(route.operationId);
    app.route({
      method: spec.method,
      url: spec.url,
      schema: spec.schema,
      config: { operationId: route.operationId, area, ...(route.auth ? { auth: route.auth } : {}) },
      handler: route.handler as never,
      errorHandler: (error, request, reply) => sendError(request, reply, error),
    });
  }
}
