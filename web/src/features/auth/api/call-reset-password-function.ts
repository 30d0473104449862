import type { AppServicesComponents } from "@harness/openapi/app-services";
import { appId, appServices } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";

type CallResetPasswordFunctionRequest = AppServicesComponents["schemas"]["CallResetPasswordFunctionRequest"];

/**
 * callResetPasswordFunction: asks the app's reset function to set a new password; the extra
 * arguments (here the security answer) go to the function. The reply is the same whether the
 * function reset the password at once or left the reset pending.
 */
export async function callResetPasswordFunction(body: CallResetPasswordFunctionRequest): Promise<void> {
  await expectOk(
    appServices.POST("/api/client/v2.0/app/{appId}/auth/providers/local-userpass/reset/call", {
      params: { path: { appId } },
      body,
    }),
  );
}
