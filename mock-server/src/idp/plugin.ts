/**
 * The fake identity provider's endpoints (`/_mock/idp/{appId}/{provider}/…`), open like a
 * provider's: browsers navigate to its pages, servers call its token endpoint and Graph API. In
 * the emulator only outside production mode; the standalone process (`cli.js idp`) serves the
 * same routes.
 */
import type { FastifyInstance } from "fastify";
import { registerFormParser } from "../http/form-body.ts";
import { registerDocumentedRoutes } from "../openapi/register-routes.ts";
import type { FakeIdentityProvider } from "./fake-identity-provider.ts";
import debugIdpToken from "./routes/debug-idp-token.ts";
import exchangeIdpCode from "./routes/exchange-idp-code.ts";
import exchangeIdpFacebookCode from "./routes/exchange-idp-facebook-code.ts";
import getIdpConfiguration from "./routes/get-idp-configuration.ts";
import getIdpKeys from "./routes/get-idp-keys.ts";
import getIdpUser from "./routes/get-idp-user.ts";
import showIdpAuthorization from "./routes/show-idp-authorization.ts";
import submitIdpAuthorization from "./routes/submit-idp-authorization.ts";

export const idpRoutes = [
  getIdpConfiguration,
  getIdpKeys,
  showIdpAuthorization,
  submitIdpAuthorization,
  exchangeIdpCode,
  exchangeIdpFacebookCode,
  debugIdpToken,
  getIdpUser,
];

declare module "fastify" {
  interface FastifyInstance {
    fakeIdentityProvider: FakeIdentityProvider;
  }
}

export async function identityProviderPlugin(
  app: FastifyInstance,
  options: { provider: FakeIdentityProvider },
): Promise<void> {
  app.decorate("fakeIdentityProvider", options.provider);
  registerFormParser(app);
  registerDocumentedRoutes(app, idpRoutes, "identity-provider");
}
