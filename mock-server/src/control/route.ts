/**
 * How a control route file declares itself: an operationId of the control document and a handler
 * typed by the generated operation types. Replies are JSON (`{error, code}` on errors).
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { controlErrors } from "../errors/catalogue.ts";
import type { ControlOperations, RouteTypes } from "../openapi/types.ts";
import type { AppRuntime } from "../runtime/app-runtime.ts";

export type ControlOperationId = keyof ControlOperations;
export type ControlRequest<K extends ControlOperationId> = FastifyRequest<RouteTypes<ControlOperations[K]>>;

export interface ControlRoute<K extends ControlOperationId = ControlOperationId> {
  operationId: K;
  handler: (request: ControlRequest<K>, reply: FastifyReply) => Promise<unknown>;
}

export function defineControlRoute<K extends ControlOperationId>(
  operationId: K,
  handler: ControlRoute<K>["handler"],
): ControlRoute<K> {
  return { operationId, handler };
}

/** The app named by the `appId` path parameter, or the control API's 404. */
export async function appOf(request: FastifyRequest): Promise<AppRuntime> {
  const appId = (request.params as { appId: string }).appId;
  const app = await request.server.emulator.apps.get(appId);
  if (!app) throw noSuchApp(appId);
  return app;
}

export const noSuchApp = (appId: string) => controlErrors.notFound(`no app with id '${appId}'`);

export const iso = (ms: number) => new Date(ms).toISOString();
