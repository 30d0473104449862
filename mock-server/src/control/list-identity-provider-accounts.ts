import { idpTenantOf } from "./identity-provider.ts";
import { defineControlRoute } from "./route.ts";

export default defineControlRoute("listIdentityProviderAccounts", async (request) => {
  const tenant = await idpTenantOf(request);
  return { accounts: tenant.accounts().map((a) => tenant.accountView(a)) };
});
