/** The fake provider's OpenID Connect discovery document (its issuer: this path without the suffix). */
import { FakeIdentityProvider } from "../fake-identity-provider.ts";
import { defineIdpRoute, sendReply, where } from "../route.ts";

export default defineIdpRoute("getIdpConfiguration", async (request, reply) => {
  const { issuer, provider } = await where(request);
  return sendReply(reply, { status: 200, body: FakeIdentityProvider.configuration(issuer, provider) });
});
