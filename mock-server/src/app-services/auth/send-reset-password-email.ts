import { userpassSettings } from "../../config/app-config.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { admitMail } from "../counted-limits.ts";
import { defineRoute, sendEmpty } from "../route.ts";
import { issueTokenOrNotFound, registrationOf, requireProvider, sendTokenMail } from "./userpass.ts";

export default defineRoute("sendResetPasswordEmail", "none", async (request, reply) => {
  const app = request.appRuntime!;
  requireProvider(app);
  const settings = userpassSettings(app.config);
  if (settings.runResetFunction) throw errors.resetViaFunction();
  const account = await registrationOf(app, request.body.email);
  // A pending registration is not a user yet.
  if (!account?.confirmed) throw errors.userNotFound();
  await admitMail(reply, request.server.emulator.store, app, account.email);
  await sendTokenMail(
    request.server.emulator,
    app,
    await issueTokenOrNotFound(app, "reset", account, settings.resetPasswordUrl),
  );
  return sendEmpty(reply, 200);
});
