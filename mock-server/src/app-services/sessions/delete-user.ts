import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { fireAuthTriggers, providersOf } from "../../runtime/auth-triggers.ts";
import { defineRoute, sendEmpty } from "../route.ts";

/** Deletes the calling user with its identities' registrations, sessions and API keys (its change streams end). */
export default defineRoute("deleteUser", "access", async (request, reply) => {
  const { app, user } = request.caller!;
  // Deleted meanwhile by another request (here or on another instance): answered as a moment
  // later, and its events and triggers are that request's alone.
  if (!(await app.store.deleteUser(user.id))) throw errors.sessionUserGone();
  request.server.emulator.events.emit({ type: "user", appId: app.appId, action: "deleted", id: user.id });
  fireAuthTriggers(app, "DELETE", user, providersOf(user), request.log);
  return sendEmpty(reply, 204);
});
