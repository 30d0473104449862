/** The public keys of the fake provider's ID tokens (one per run). */
import { defineIdpRoute, sendReply, where } from "../route.ts";

export default defineIdpRoute("getIdpKeys", async (request, reply) => {
  await where(request);
  return sendReply(reply, { status: 200, body: await request.server.fakeIdentityProvider.keys.jwks() });
});
