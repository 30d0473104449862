import { appId, appServices } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";

/** resendConfirmationEmail: sends the confirmation e-mail again, with a new link. */
export async function resendConfirmationEmail(email: string): Promise<void> {
  await expectOk(
    appServices.POST("/api/client/v2.0/app/{appId}/auth/providers/local-userpass/confirm/send", {
      params: { path: { appId } },
      body: { email },
    }),
  );
}
