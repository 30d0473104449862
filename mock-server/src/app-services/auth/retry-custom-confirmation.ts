import { userpassSettings } from "../../config/app-config.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { defineRoute, sendEmpty } from "../route.ts";
import { runStatusFunction } from "./confirmation-function.ts";
import { accountOrNotFound, issueTokenOrNotFound, requireProvider } from "./userpass.ts";

/** Runs the confirmation function again for a pending registration. */
export default defineRoute("retryCustomConfirmation", "none", async (request, reply) => {
  const { emulator } = request.server;
  const app = request.appRuntime!;
  requireProvider(app);
  const { email } = request.body;
  const settings = userpassSettings(app.config);
  if (settings.autoConfirm) throw errors.autoConfirmEnabled(email);
  const account = await accountOrNotFound(app, email);
  if (account.confirmed) throw errors.alreadyConfirmed();
  if (!settings.runConfirmationFunction) throw errors.confirmationNotFunction(account.email);
  const token = await issueTokenOrNotFound(app, "confirm", account, null);
  const status = await runStatusFunction(app, settings.confirmationFunctionName, [
    { token: token.token, tokenId: token.tokenId, username: account.email },
  ]);
  if (status === "fail") throw errors.confirmationFailed(account.email);
  if (status === "success") {
    if (!(await app.users.confirmAccount(account.id))) {
      // Confirmed or deleted while the function ran (here or on another instance): as a moment later.
      const now = await app.users.accountByEmail(account.email);
      throw now?.id === account.id ? errors.alreadyConfirmed() : errors.userNotFound();
    }
    await app.authTokens.markUsed(token.tokenId);
    emulator.events.emit({ type: "user", appId: app.appId, action: "confirmed", id: account.id });
  }
  return sendEmpty(reply, 200);
});
