import { fireAuthTriggers, providersOf } from "../runtime/auth-triggers.ts";
import { findUser, noSuchUser } from "./find-user.ts";
import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("removeUser", async (request, reply) => {
  const app = await appOf(request);
  const found = await findUser(app, request.params.userId);
  // The user's sessions end with it, and so its change streams (on every instance). Removed
  // meanwhile by another request: not found, as a moment later (its events and triggers are that
  // request's alone).
  const removed = found.user
    ? await app.store.deleteUser(found.user.id)
    : // (Only while no user has taken it: a first login meanwhile made its user, which this id does not name.)
      await app.users.removeAccount(found.account.id, "unclaimed");
  if (!removed) throw noSuchUser(app, request.params.userId);
  if (found.user) fireAuthTriggers(app, "DELETE", found.user, providersOf(found.user), request.log);
  request.server.emulator.events.emit({ type: "user", appId: app.appId, action: "deleted", id: request.params.userId });
  return reply.code(204).send();
});
