import { controlErrors } from "../errors/catalogue.ts";
import { findUser, noSuchUser } from "./find-user.ts";
import { appOf, defineControlRoute } from "./route.ts";
import { userView } from "./views.ts";

/** Disables (ending every session) or enables a user object. */
export default defineControlRoute("updateUser", async (request) => {
  const app = await appOf(request);
  const { user: found } = await findUser(app, request.params.userId);
  if (!found) throw controlErrors.conflict("a registration without a user object cannot be disabled");
  const user = await app.users.update(found.id, { disabled: request.body.disabled });
  if (!user) throw noSuchUser(app, found.id);
  if (user.disabled) await app.sessions.removeForUser(user.id);
  request.server.emulator.events.emit({
    type: "user",
    appId: app.appId,
    action: user.disabled ? "disabled" : "enabled",
    id: user.id,
  });
  return await userView(app, user);
});
