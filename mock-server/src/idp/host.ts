/**
 * Where the fake identity provider's routes find their tenant: in the emulator, the app of the
 * path's `{appId}` (none in production mode: the fake provider is a testing feature); in the
 * standalone process (`cli.js idp`), any name, made on first use, with the clients it was started
 * with. The routes (the protocol's and the control API's) know only this.
 */
import type { FastifyRequest } from "fastify";
import type { OAuth2ProviderName } from "../config/app-config.ts";
import { controlErrors } from "../errors/catalogue.ts";
import { publicOrigin } from "../http/areas.ts";
import type { Emulator } from "../runtime/emulator.ts";
import { appTenant } from "./app-tenant.ts";
import type { FakeIdentityProvider } from "./fake-identity-provider.ts";
import type { IdpClient, IdpTenant } from "./tenant.ts";

export interface IdpHost {
  /** The tenant of this name, or null when there is none. */
  tenant(name: string): Promise<IdpTenant | null>;
  /** The origin browsers and servers reach the provider at (its issuers begin with it). */
  origin(request: FastifyRequest): string;
}

declare module "fastify" {
  interface FastifyInstance {
    idpHost: IdpHost;
  }
}

export function emulatorIdpHost(emulator: Emulator): IdpHost {
  return {
    async tenant(name) {
      const idp = emulator.fakeIdentityProvider;
      if (!idp) throw controlErrors.notInProduction("the fake identity provider");
      const app = await emulator.apps.get(name);
      return app ? appTenant(idp, app) : null;
    },
    origin: publicOrigin,
  };
}

/** The standalone provider's: tenants on demand, the clients given at start, real time. */
export function standaloneIdpHost(
  idp: FakeIdentityProvider,
  clients: Partial<Record<OAuth2ProviderName, IdpClient>>,
  publicUrl: string | null,
): IdpHost {
  return {
    tenant: async (name) => idp.tenant(name, { now: Date.now, client: (provider) => clients[provider] }),
    origin: (request) => publicUrl ?? `${request.protocol}://${request.host}`,
  };
}
