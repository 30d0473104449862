import type { AppServicesComponents } from "@harness/openapi/app-services";
import { appServices } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";

export type ApiKeyWithSecret = AppServicesComponents["schemas"]["ApiKeyWithSecret"];

/** createApiKey: a new key; its secret `key` is in this reply only. */
export function createApiKey(name: string): Promise<ApiKeyWithSecret> {
  return expectOk(appServices.POST("/api/client/v2.0/auth/api_keys", { body: { name } }));
}
