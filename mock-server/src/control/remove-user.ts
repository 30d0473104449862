import { findUser } from "./find-user.ts";
import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("removeUser", async (request, reply) => {
  const app = appOf(request);
  const found = findUser(app, request.params.userId);
  if (found.user) app.deleteUser(found.user.id);
  else app.users.removeAccount(found.account.id);
  request.server.emulator.events.emit({ type: "user", appId: app.appId, action: "deleted", id: request.params.userId });
  return reply.code(204).send();
});
