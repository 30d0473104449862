import { controlErrors } from "../errors/catalogue.ts";
import { findUser } from "./find-user.ts";
import { appOf, defineControlRoute } from "./route.ts";
import { registrationView } from "./views.ts";

/** Confirms a pending registration as if its link had been followed. */
export default defineControlRoute("confirmPendingUser", async (request) => {
  const app = appOf(request);
  const { account } = findUser(app, request.params.userId);
  if (!account || account.confirmed) throw controlErrors.conflict("the user is not pending confirmation");
  account.confirmed = true;
  request.server.emulator.events.emit({ type: "user", appId: app.appId, action: "confirmed", id: account.id });
  return registrationView(account);
});
