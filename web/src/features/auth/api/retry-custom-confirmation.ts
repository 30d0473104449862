import { appId, appServices } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";

/**
 * retryCustomConfirmation: runs the app's confirmation function again for a pending address. The
 * reply is the same whether the function approved the address or left it pending.
 */
export async function retryCustomConfirmation(email: string): Promise<void> {
  await expectOk(
    appServices.POST("/api/client/v2.0/app/{appId}/auth/providers/local-userpass/confirm/call", {
      params: { path: { appId } },
      body: { email },
    }),
  );
}
