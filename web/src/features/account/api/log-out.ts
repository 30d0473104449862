import { appServices } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";

/** logOut: ends the session of the refresh token (the session middleware sends it). */
export async function logOut(): Promise<void> {
  await expectOk(appServices.DELETE("/api/client/v2.0/auth/session"));
}
