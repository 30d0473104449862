import { defineRoute, sendJson } from "../route.ts";
import { apiKeyView } from "./api-key-view.ts";

export default defineRoute("listApiKeys", "refresh", async (request, reply) => {
  const { app, user } = request.caller!;
  return sendJson(reply, 200, (await app.apiKeys.forUser(user.id)).map(apiKeyView));
});
