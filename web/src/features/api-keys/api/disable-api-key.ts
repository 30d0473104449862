import { appServices } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";

/** disableApiKey: the key can no longer log in (it is kept). */
export async function disableApiKey(apiKeyId: string): Promise<void> {
  await expectOk(
    appServices.PUT("/api/client/v2.0/auth/api_keys/{apiKeyId}/disable", { params: { path: { apiKeyId } } }),
  );
}
