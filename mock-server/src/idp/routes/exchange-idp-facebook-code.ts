/** Facebook's code exchange (`GET /oauth/access_token`): an authorization code for an access token. */
import { defineIdpRoute, sendReply, where } from "../route.ts";

export default defineIdpRoute("exchangeIdpFacebookCode", async (request, reply) => {
  const { tenant } = await where(request);
  return sendReply(reply, tenant.facebookAccessToken(request.query));
});
