import { defineRoute, sendEmpty } from "../route.ts";
import { ownKey } from "./api-key-view.ts";

export default defineRoute("enableApiKey", "refresh", async (request, reply) => {
  const key = await ownKey(request.caller!, request.params.apiKeyId);
  await request.caller!.app.apiKeys.setDisabled(key.id, false);
  return sendEmpty(reply, 204);
});
