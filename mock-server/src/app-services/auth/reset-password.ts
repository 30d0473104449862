import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { addressKey } from "../../http/client-address.ts";
import { defineRoute, sendEmpty } from "../route.ts";
import {
  accountOfToken,
  checkPassword,
  endSessionsAfterReset,
  hash,
  refuseUnknownLink,
  requireProvider,
  tokenError,
} from "./userpass.ts";

/** Sets a new password with a reset link's token (single use, 30 minutes); the user's sessions end. */
export default defineRoute("resetPassword", "none", async (request, reply) => {
  const { emulator } = request.server;
  const app = request.appRuntime!;
  requireProvider(app);
  const { token, tokenId, password } = request.body;
  checkPassword(password);
  refuseUnknownLink(token, tokenId);
  const check = await app.authTokens.check("reset", token, tokenId, app.clock.now());
  if (!check.ok) throw tokenError(check.reason);
  const passwordHash = await hash(emulator, addressKey(request.ip), "held", password);
  // Use the token up only now (after the await), atomically: a racing request may have used it.
  const result = await app.authTokens.consume("reset", token, tokenId, app.clock.now());
  if (!result.ok) throw tokenError(result.reason);
  const account = await accountOfToken(app, result.token);
  // Its user deleted before the password is written (here or on another instance): as a moment later.
  const updated = account && (await app.users.updateAccount(account.id, { passwordHash }));
  if (!updated) throw errors.invalidTokenData();
  await endSessionsAfterReset(app, updated);
  emulator.events.emit({ type: "user", appId: app.appId, action: "password-reset", id: updated.id });
  return sendEmpty(reply, 200);
});
