import { appServices } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";
import type { ApiKey } from "./list-api-keys.ts";

/** getApiKey: one key as the service now has it (used to show a key's state after a change). */
export function getApiKey(apiKeyId: string): Promise<ApiKey> {
  return expectOk(appServices.GET("/api/client/v2.0/auth/api_keys/{apiKeyId}", { params: { path: { apiKeyId } } }));
}
