import { defineRoute, sendEmpty } from "../route.ts";
import { ownKey } from "./api-key-view.ts";

/** A disabled key can no longer log in (sessions it opened keep working). */
export default defineRoute("disableApiKey", "refresh", async (request, reply) => {
  ownKey(request.caller!, request.params.apiKeyId).disabled = true;
  return sendEmpty(reply, 204);
});
