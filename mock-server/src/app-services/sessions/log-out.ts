import { defineRoute, sendEmpty } from "../route.ts";

/** Ends the refresh token's session; access tokens already issued run out on their own. */
export default defineRoute("logOut", "refresh", async (request, reply) => {
  const { app, user, session } = request.caller!;
  await app.sessions.remove(session!.id);
  request.server.emulator.events.emit({ type: "user", appId: app.appId, action: "logged-out", id: user.id });
  return sendEmpty(reply, 204);
});
