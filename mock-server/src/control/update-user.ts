import { controlErrors } from "../errors/catalogue.ts";
import { findUser } from "./find-user.ts";
import { appOf, defineControlRoute } from "./route.ts";
import { userView } from "./views.ts";

/** Disables (ending every session) or enables a user object. */
export default defineControlRoute("updateUser", async (request) => {
  const app = appOf(request);
  const { user } = findUser(app, request.params.userId);
  if (!user) throw controlErrors.conflict("a registration without a user object cannot be disabled");
  user.disabled = request.body.disabled;
  if (user.disabled) app.sessions.removeForUser(user.id);
  request.server.emulator.events.emit({
    type: "user",
    appId: app.appId,
    action: user.disabled ? "disabled" : "enabled",
    id: user.id,
  });
  return userView(app, user);
});
