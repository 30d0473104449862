import { appServices } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";

/** enableApiKey: the key can log in again. */
export async function enableApiKey(apiKeyId: string): Promise<void> {
  await expectOk(
    appServices.PUT("/api/client/v2.0/auth/api_keys/{apiKeyId}/enable", { params: { path: { apiKeyId } } }),
  );
}
