import { idpTenantOf } from "./identity-provider.ts";
import { defineControlRoute } from "./route.ts";

export default defineControlRoute("createIdentityProviderAccount", async (request, reply) => {
  const tenant = await idpTenantOf(request);
  const { account, created } = tenant.upsertAccount(request.body);
  return reply.code(created ? 201 : 200).send(tenant.accountView(account));
});
