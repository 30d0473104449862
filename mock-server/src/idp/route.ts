/**
 * How a fake identity provider route file declares itself (an operationId of the control
 * document, like the control API's), and what every such route needs: its tenant and issuer.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { isOAuth2Provider, type OAuth2ProviderName } from "../config/app-config.ts";
import { identityProviderErrors } from "../errors/catalogue.ts";
import type { ControlOperations, RouteTypes } from "../openapi/types.ts";
import { idpBasePath } from "./fake-identity-provider.ts";
import type { IdpTenant, JsonReply } from "./tenant.ts";

export type IdpOperationId = keyof ControlOperations;
export type IdpRouteRequest<K extends IdpOperationId> = FastifyRequest<RouteTypes<ControlOperations[K]>>;

export interface IdpRoute<K extends IdpOperationId = IdpOperationId> {
  operationId: K;
  handler: (request: IdpRouteRequest<K>, reply: FastifyReply) => Promise<unknown>;
}

export function defineIdpRoute<K extends IdpOperationId>(operationId: K, handler: IdpRoute<K>["handler"]): IdpRoute<K> {
  return { operationId, handler };
}

interface Where {
  tenant: IdpTenant;
  provider: OAuth2ProviderName;
  /** `<origin>/_mock/idp/{tenant}/{provider}`. */
  issuer: string;
}

/** The tenant and provider of the path (404 when there is no such tenant or provider). */
export async function where(request: FastifyRequest): Promise<Where> {
  const { appId, provider } = request.params as { appId: string; provider: string };
  if (!isOAuth2Provider(provider)) throw identityProviderErrors.noProvider(provider);
  const tenant = await request.server.idpHost.tenant(appId);
  if (!tenant) throw identityProviderErrors.noTenant(appId);
  return { tenant, provider, issuer: `${request.server.idpHost.origin(request)}${idpBasePath(appId, provider)}` };
}

export function sendReply(reply: FastifyReply, answer: JsonReply): FastifyReply {
  return reply.code(answer.status).type("application/json").send(JSON.stringify(answer.body));
}

/** A form body's fields (a body that is not a form, or none, has none). */
export function formFields(body: unknown): Record<string, string> {
  if (body === null || typeof body !== "object") return {};
  return Object.fromEntries(
    Object.entries(body as Record<string, unknown>).filter(
      (entry): entry is [string, string] => typeof entry[1] === "string",
    ),
  );
}
