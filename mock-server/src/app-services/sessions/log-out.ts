import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { defineRoute, sendEmpty } from "../route.ts";

/**
 * Ends the refresh token's session: its refresh and access tokens are refused from now on and its
 * change streams close, on every instance (docs/decisions/0011-revocation.md).
 */
export default defineRoute("logOut", "refresh", async (request, reply) => {
  const { app, user, session } = request.caller!;
  // Ended meanwhile by another request (here or on another instance): as a moment later.
  if (!(await app.sessions.remove(session.id))) throw errors.refreshTokenNotFound();
  request.server.emulator.events.emit({ type: "user", appId: app.appId, action: "logged-out", id: user.id });
  return sendEmpty(reply, 204);
});
