/** Facebook's `/me`: the fields of the account an access token belongs to. */
import { defineIdpRoute, sendReply, where } from "../route.ts";

export default defineIdpRoute("getIdpUser", async (request, reply) => {
  const { tenant } = await where(request);
  return sendReply(reply, tenant.me(request.query));
});
