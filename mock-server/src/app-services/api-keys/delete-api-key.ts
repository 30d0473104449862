import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { defineRoute, sendEmpty } from "../route.ts";

/** Deletes a key and ends the sessions it opened; an unknown id is a no-op (as on the service). */
export default defineRoute("deleteApiKey", "refresh", async (request, reply) => {
  const { app, user, session } = request.caller!;
  const key = await app.apiKeys.get(request.params.apiKeyId);
  if (key && key.userId === user.id) {
    if (session.apiKeyId === key.id) throw errors.apiKeyOwnSession("delete");
    // (Deleted meanwhile by another request: that one announces it.)
    if (await app.apiKeys.remove(key.id))
      request.server.emulator.events.emit({ type: "user", appId: app.appId, action: "api-key-deleted", id: user.id });
  }
  return sendEmpty(reply, 204);
});
