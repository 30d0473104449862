import { defineRoute, sendEmpty } from "../route.ts";
import { ownKey } from "./api-key-view.ts";

/** A disabled key can no longer log in (sessions it opened keep working). */
export default defineRoute("disableApiKey", "refresh", async (request, reply) => {
  const key = await ownKey(request.caller!, request.params.apiKeyId);
  await request.caller!.app.apiKeys.setDisabled(key.id, true);
  return sendEmpty(reply, 204);
});
