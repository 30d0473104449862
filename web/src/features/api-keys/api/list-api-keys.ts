import type { AppServicesComponents } from "@harness/openapi/app-services";
import { appServices } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";

export type ApiKey = AppServicesComponents["schemas"]["ApiKey"];

/** listApiKeys: the user's keys, oldest first, without secrets. */
export function listApiKeys(signal?: AbortSignal): Promise<ApiKey[]> {
  return expectOk(appServices.GET("/api/client/v2.0/auth/api_keys", signal ? { signal } : {}));
}
