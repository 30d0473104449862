import type { AppServicesComponents } from "@harness/openapi/app-services";
import { appId, appServices } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";

type RegisterRequest = AppServicesComponents["schemas"]["RegisterRequest"];

/** registerUser: registers an e-mail address and password (pending until confirmed). */
export async function registerUser(body: RegisterRequest): Promise<void> {
  await expectOk(
    appServices.POST("/api/client/v2.0/app/{appId}/auth/providers/local-userpass/register", {
      params: { path: { appId } },
      body,
    }),
  );
}
