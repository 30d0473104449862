/**
 * How an App Services route file declares itself: an operationId of the document (the join key),
 * the token it needs, and a handler typed by the generated operation types.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { AppServicesOperations, RouteTypes } from "../openapi/types.ts";
import type { AuthMode } from "./auth-context.ts";

export type AppServicesOperationId = keyof AppServicesOperations;

export type AppServicesRequest<K extends AppServicesOperationId> = FastifyRequest<RouteTypes<AppServicesOperations[K]>>;

export interface AppServicesRoute<K extends AppServicesOperationId = AppServicesOperationId> {
  operationId: K;
  auth: AuthMode;
  handler: (request: AppServicesRequest<K>, reply: FastifyReply) => Promise<unknown>;
}

export function defineRoute<K extends AppServicesOperationId>(
  operationId: K,
  auth: AuthMode,
  handler: AppServicesRoute<K>["handler"],
): AppServicesRoute<K> {
  return { operationId, auth, handler };
}

/** Sends a JSON reply with exactly `Content-Type: application/json` (realm-core needs the exact value). */
export function sendJson(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).type("application/json").send(body);
}

/** An empty success: no body and no Content-Type (realm-web then returns null). */
export function sendEmpty(reply: FastifyReply, status: number): FastifyReply {
  return reply.code(status).send();
}
