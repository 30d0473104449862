import { appServices } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";

/** deleteApiKey: removes the key for good. */
export async function deleteApiKey(apiKeyId: string): Promise<void> {
  await expectOk(appServices.DELETE("/api/client/v2.0/auth/api_keys/{apiKeyId}", { params: { path: { apiKeyId } } }));
}
