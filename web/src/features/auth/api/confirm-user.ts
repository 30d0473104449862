import type { AppServicesComponents } from "@harness/openapi/app-services";
import { appId, appServices } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";

type TokenPair = AppServicesComponents["schemas"]["TokenPair"];

/** confirmUser: confirms a pending address with the token pair of the confirmation link. */
export async function confirmUser(body: TokenPair): Promise<void> {
  await expectOk(
    appServices.POST("/api/client/v2.0/app/{appId}/auth/providers/local-userpass/confirm", {
      params: { path: { appId } },
      body,
    }),
  );
}
