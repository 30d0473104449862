import { userpassSettings } from "../../config/app-config.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { addressKey } from "../../http/client-address.ts";
import { newObjectIdHex } from "../../state/ids.ts";
import { admitMail, admitRegistration } from "../counted-limits.ts";
import { defineRoute, sendEmpty } from "../route.ts";
import { runStatusFunction } from "./confirmation-function.ts";
import { checkEmail, checkPassword, hash, issueToken, requireProvider, sendTokenMail } from "./userpass.ts";

/**
 * Registers an address: auto-confirmed, confirmed by a function, or pending until the link of the
 * confirmation e-mail is followed. The store reserves the address in one step (a unique
 * constraint), so of many concurrent registrations of one address, on any instances, exactly one
 * succeeds.
 */
export default defineRoute("registerUser", "none", async (request, reply) => {
  const { emulator } = request.server;
  const app = request.appRuntime!;
  requireProvider(app);
  const { email, password } = request.body;
  checkEmail(email);
  checkPassword(password);
  // One client address may ask for so many a day: pending registrations count toward the app's users.
  await admitRegistration(reply, emulator.store, app, request.ip);
  const passwordHash = await hash(emulator, addressKey(request.ip), "other", password);
  const settings = userpassSettings(app.config);
  const account = {
    id: newObjectIdHex(),
    email,
    passwordHash,
    confirmed: settings.autoConfirm,
    userId: null,
    createdAt: app.clock.now(),
  };
  if (!(await app.withRoomForUsers(() => app.users.addAccount(account)))) throw errors.accountNameInUse();
  emulator.events.emit({ type: "user", appId: app.appId, action: "registered", id: account.id });
  if (settings.autoConfirm) return sendEmpty(reply, 201);

  if (settings.runConfirmationFunction) {
    const token = await issueToken(app, "confirm", account, null);
    // The registration gone meanwhile (deleted, or the app reset): registered before that.
    if (!token) return sendEmpty(reply, 201);
    let status: Awaited<ReturnType<typeof runStatusFunction>>;
    try {
      status = await runStatusFunction(app, settings.confirmationFunctionName, [
        { token: token.token, tokenId: token.tokenId, username: email },
      ]);
    } catch (error) {
      await app.users.removeAccount(account.id, "pending");
      throw error;
    }
    if (status === "fail") {
      // A failed confirmation creates no account: the address can register again.
      await app.users.removeAccount(account.id, "pending");
      throw errors.confirmationFailed(email);
    }
    if (status === "success") {
      await app.users.confirmAccount(account.id);
      await app.authTokens.markUsed(token.tokenId);
    }
    return sendEmpty(reply, 201);
  }

  // The address may be sent so many mails an hour: past it nothing is kept.
  try {
    await admitMail(reply, emulator.store, app, email);
  } catch (error) {
    await app.users.removeAccount(account.id, "pending");
    throw error;
  }
  const token = await issueToken(app, "confirm", account, settings.emailConfirmationUrl);
  if (token) await sendTokenMail(emulator, app, token);
  return sendEmpty(reply, 201);
});
