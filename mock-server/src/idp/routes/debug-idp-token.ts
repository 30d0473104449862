/** Facebook's `debug_token`: what a user access token is, asked with the app's token. */
import { defineIdpRoute, sendReply, where } from "../route.ts";

export default defineIdpRoute("debugIdpToken", async (request, reply) => {
  const { tenant } = await where(request);
  return sendReply(reply, tenant.debugToken(request.query));
});
