/** The fake identity provider's tenant of a control route's `{appId}` (the control API's 404 when none). */
import type { FastifyRequest } from "fastify";
import { controlErrors } from "../errors/catalogue.ts";
import type { IdpTenant } from "../idp/tenant.ts";

export async function idpTenantOf(request: FastifyRequest): Promise<IdpTenant> {
  const appId = (request.params as { appId: string }).appId;
  const tenant = await request.server.idpHost.tenant(appId);
  if (!tenant) throw controlErrors.notFound(`no app with id '${appId}'`);
  return tenant;
}
