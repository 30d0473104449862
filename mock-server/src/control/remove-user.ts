import { fireAuthTriggers, providersOf } from "../runtime/auth-triggers.ts";
import { findUser } from "./find-user.ts";
import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("removeUser", async (request, reply) => {
  const app = await appOf(request);
  const found = await findUser(app, request.params.userId);
  // The user's sessions end with it, and so its change streams (on every instance).
  if (found.user) {
    await app.store.deleteUser(found.user.id);
    fireAuthTriggers(app, "DELETE", found.user, providersOf(found.user), request.log);
  } else await app.users.removeAccount(found.account.id);
  request.server.emulator.events.emit({ type: "user", appId: app.appId, action: "deleted", id: request.params.userId });
  return reply.code(204).send();
});
