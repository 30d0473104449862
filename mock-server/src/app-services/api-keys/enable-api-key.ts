import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { defineRoute, sendEmpty } from "../route.ts";
import { ownKey } from "./api-key-view.ts";

export default defineRoute("enableApiKey", "refresh", async (request, reply) => {
  const key = await ownKey(request.caller!, request.params.apiKeyId);
  // Deleted meanwhile (here or on another instance): as a moment later.
  if (!(await request.caller!.app.apiKeys.setDisabled(key.id, false))) throw errors.apiKeyNotFound();
  return sendEmpty(reply, 204);
});
