import { defineRoute, sendEmpty } from "../route.ts";
import { ownKey } from "./api-key-view.ts";

export default defineRoute("enableApiKey", "refresh", async (request, reply) => {
  ownKey(request.caller!, request.params.apiKeyId).disabled = false;
  return sendEmpty(reply, 204);
});
