import { findUser } from "./find-user.ts";
import { appOf, defineControlRoute } from "./route.ts";

/** Ends all of a user's sessions: their refresh and access tokens stop working, their change streams close. */
export default defineControlRoute("revokeUserSessions", async (request, reply) => {
  const app = await appOf(request);
  const { user } = await findUser(app, request.params.userId);
  if (user) await app.sessions.removeForUser(user.id);
  request.server.emulator.events.emit({
    type: "user",
    appId: app.appId,
    action: "sessions-revoked",
    id: request.params.userId,
  });
  return reply.code(204).send();
});
