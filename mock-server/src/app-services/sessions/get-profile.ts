import { defineRoute, sendJson } from "../route.ts";

export default defineRoute("getProfile", "access", async (request, reply) => {
  const { app, user } = request.caller!;
  return sendJson(reply, 200, {
    user_id: user.id,
    domain_id: app.domainId,
    identities: user.identities.map((i) => ({ id: i.id, provider_type: i.provider_type, provider_id: i.provider_id })),
    data: user.data,
    type: user.type,
  });
});
