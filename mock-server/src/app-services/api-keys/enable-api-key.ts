import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { defineRoute, sendEmpty } from "../route.ts";
import { ownKey } from "./api-key-view.ts";

export default defineRoute("enableApiKey", "refresh", async (request, reply) => {
  const { app, user } = request.caller!;
  const key = await ownKey(request.caller!, request.params.apiKeyId);
  // Deleted meanwhile (here or on another instance): as a moment later.
  if (!(await app.apiKeys.setDisabled(key.id, false))) throw errors.apiKeyNotFound();
  request.server.emulator.events.emit({ type: "user", appId: app.appId, action: "api-key-enabled", id: user.id });
  return sendEmpty(reply, 204);
});
