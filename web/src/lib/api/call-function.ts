import type { AppServicesComponents } from "@harness/openapi/app-services";
import { appId, appServices } from "../api-clients.ts";
import { expectOk } from "../errors/service-errors.ts";

export type FunctionCallRequest = AppServicesComponents["schemas"]["FunctionCallRequest"];
export type EJSONValue = AppServicesComponents["schemas"]["EJSONValue"];

/**
 * callFunction: runs an app function, or a MongoDB action when `service` is given. Arguments must
 * already be canonical Extended JSON; the reply is the raw Extended JSON value.
 */
export function callFunction(call: FunctionCallRequest, signal?: AbortSignal): Promise<EJSONValue> {
  return expectOk(
    appServices.POST("/api/client/v2.0/app/{appId}/functions/call", {
      params: { path: { appId } },
      body: call,
      ...(signal ? { signal } : {}),
    }),
  );
}
