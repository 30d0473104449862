import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { defineRoute, sendEmpty } from "../route.ts";
import { ownKey } from "./api-key-view.ts";

/**
 * A disabled key can no longer log in, and the sessions it opened end (their refresh and access
 * tokens are refused, their change streams close); enabling it again does not bring them back.
 * Not from one of those sessions (403, as for delete).
 */
export default defineRoute("disableApiKey", "refresh", async (request, reply) => {
  const { app, user, session } = request.caller!;
  const key = await ownKey(request.caller!, request.params.apiKeyId);
  if (session.apiKeyId === key.id) throw errors.apiKeyOwnSession("disable");
  // Deleted meanwhile (here or on another instance): as a moment later.
  if (!(await app.apiKeys.setDisabled(key.id, true))) throw errors.apiKeyNotFound();
  request.server.emulator.events.emit({ type: "user", appId: app.appId, action: "api-key-disabled", id: user.id });
  return sendEmpty(reply, 204);
});
