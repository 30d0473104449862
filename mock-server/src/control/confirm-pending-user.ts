import { controlErrors } from "../errors/catalogue.ts";
import { findUser } from "./find-user.ts";
import { appOf, defineControlRoute } from "./route.ts";
import { registrationView } from "./views.ts";

/** Confirms a pending registration as if its link had been followed. */
export default defineControlRoute("confirmPendingUser", async (request) => {
  const app = await appOf(request);
  const { account } = await findUser(app, request.params.userId);
  if (!account) throw controlErrors.conflict("the user is not pending confirmation");
  if (!(await app.users.confirmAccount(account.id))) {
    // Confirmed, or removed, meanwhile (here or on another instance): as a moment later.
    await findUser(app, request.params.userId);
    throw controlErrors.conflict("the user is not pending confirmation");
  }
  request.server.emulator.events.emit({ type: "user", appId: app.appId, action: "confirmed", id: account.id });
  return registrationView({ ...account, confirmed: true });
});
