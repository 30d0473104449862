/** The OpenID Connect token endpoint: an authorization code for an ID token (and an access token). */
import { defineIdpRoute, formFields, sendReply, where } from "../route.ts";

export default defineIdpRoute("exchangeIdpCode", async (request, reply) => {
  const { tenant, provider, issuer } = await where(request);
  return sendReply(reply, await tenant.token(provider, formFields(request.body), issuer));
});
