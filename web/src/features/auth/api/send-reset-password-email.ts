import { appId, appServices } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";

/** sendResetPasswordEmail: e-mails a password reset link. */
export async function sendResetPasswordEmail(email: string): Promise<void> {
  await expectOk(
    appServices.POST("/api/client/v2.0/app/{appId}/auth/providers/local-userpass/reset/send", {
      params: { path: { appId } },
      body: { email },
    }),
  );
}
