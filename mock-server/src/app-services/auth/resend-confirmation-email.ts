import { userpassSettings } from "../../config/app-config.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { admitMail } from "../counted-limits.ts";
import { defineRoute, sendEmpty } from "../route.ts";
import { accountOrNotFound, issueTokenOrNotFound, requireProvider, sendTokenMail } from "./userpass.ts";

/** A new confirmation e-mail with a new link (earlier links stay valid until they expire). */
export default defineRoute("resendConfirmationEmail", "none", async (request, reply) => {
  const app = request.appRuntime!;
  requireProvider(app);
  const { email } = request.body;
  const account = await accountOrNotFound(app, email);
  if (account.confirmed) throw errors.alreadyConfirmed();
  const settings = userpassSettings(app.config);
  if (settings.runConfirmationFunction) throw errors.confirmationByFunction(account.email);
  await admitMail(reply, request.server.emulator.store, app, account.email);
  await sendTokenMail(
    request.server.emulator,
    app,
    await issueTokenOrNotFound(app, "confirm", account, settings.emailConfirmationUrl),
  );
  return sendEmpty(reply, 200);
});
