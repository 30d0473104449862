import { defineRoute, sendJson } from "../route.ts";
import { apiKeyView, ownKey } from "./api-key-view.ts";

export default defineRoute("getApiKey", "refresh", async (request, reply) =>
  sendJson(reply, 200, apiKeyView(await ownKey(request.caller!, request.params.apiKeyId))),
);
