import { appServices } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";

/** deleteUser: deletes the signed-in user, its identities, keys and sessions (access token). */
export async function deleteUser(): Promise<void> {
  await expectOk(appServices.DELETE("/api/client/v2.0/auth/delete"));
}
