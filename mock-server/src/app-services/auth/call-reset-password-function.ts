import { userpassSettings } from "../../config/app-config.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { addressKey } from "../../http/client-address.ts";
import { defineRoute, sendEmpty } from "../route.ts";
import { runStatusFunction } from "./confirmation-function.ts";
import {
  checkPassword,
  endSessionsAfterReset,
  hash,
  issueTokenOrNotFound,
  registrationOf,
  requireProvider,
  verify,
} from "./userpass.ts";

/**
 * Runs the reset function with `({username, password, token, tokenId, currentPasswordValid}, ...arguments)`:
 * `success` sets the password now (the user's sessions end), `pending` leaves the token for a later
 * `reset`, `fail` refuses.
 */
export default defineRoute("callResetPasswordFunction", "none", async (request, reply) => {
  const { emulator } = request.server;
  const app = request.appRuntime!;
  requireProvider(app);
  const settings = userpassSettings(app.config);
  if (!settings.runResetFunction) throw errors.resetViaEmail();
  const { email, password } = request.body;
  checkPassword(password);
  const account = await registrationOf(app, email);
  if (!account?.confirmed) throw errors.userNotFound();
  const lane = addressKey(request.ip);
  const currentPasswordValid = await verify(emulator, lane, "held", password, account.passwordHash);
  const token = await issueTokenOrNotFound(app, "reset", account, null);
  const args = request.body.arguments ?? [];
  let status: Awaited<ReturnType<typeof runStatusFunction>>;
  try {
    status = await runStatusFunction(app, settings.resetFunctionName, [
      { username: account.email, password, token: token.token, tokenId: token.tokenId, currentPasswordValid },
      ...args,
    ]);
  } catch (error) {
    await app.authTokens.markUsed(token.tokenId);
    // A function that throws is a failed reset; a missing one is the service's missing-function error.
    if ((error as { errorCode?: string }).errorCode === "FunctionNotFound") throw error;
    throw errors.resetFailed(account.email);
  }
  if (status === "fail") {
    await app.authTokens.markUsed(token.tokenId);
    throw errors.resetFailed(account.email);
  }
  if (status === "success") {
    await app.authTokens.markUsed(token.tokenId);
    const passwordHash = await hash(emulator, lane, "held", password);
    // Its user deleted while the function ran (here or on another instance): as a moment later.
    const updated = await app.users.updateAccount(account.id, { passwordHash });
    if (!updated) throw errors.userNotFound();
    await endSessionsAfterReset(app, updated);
    emulator.events.emit({ type: "user", appId: app.appId, action: "password-reset", id: account.id });
  }
  return sendEmpty(reply, 200);
});
