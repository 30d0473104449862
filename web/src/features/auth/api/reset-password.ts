import type { AppServicesComponents } from "@harness/openapi/app-services";
import { appId, appServices } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";

type ResetPasswordRequest = AppServicesComponents["schemas"]["ResetPasswordRequest"];

/** resetPassword: sets a new password with the token pair of the reset link. */
export async function resetPassword(body: ResetPasswordRequest): Promise<void> {
  await expectOk(
    appServices.POST("/api/client/v2.0/app/{appId}/auth/providers/local-userpass/reset", {
      params: { path: { appId } },
      body,
    }),
  );
}
