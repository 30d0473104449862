/**
 * The harness's providers: the built-in fake identity provider, called in process. Its pages are
 * on the emulator's own origin (`/_mock/idp/{appId}/{provider}`), where the browser goes; the
 * server-side calls (code exchange, key set, Graph API) go straight to the same objects that
 * answer those routes over HTTP, so every check is the one a remote provider's answer gets.
 */
import type { OAuth2ProviderName } from "../config/app-config.ts";
import { appTenant } from "../idp/app-tenant.ts";
import { FakeIdentityProvider, idpBasePath } from "../idp/fake-identity-provider.ts";
import type { EndpointContext, EndpointSource, ProviderEndpoints } from "./endpoints.ts";

export class BuiltinEndpoints implements EndpointSource {
  constructor(private readonly idp: FakeIdentityProvider) {}

  async endpoints(provider: OAuth2ProviderName, { app, origin }: EndpointContext): Promise<ProviderEndpoints> {
    const issuer = `${origin}${idpBasePath(app.appId, provider)}`;
    const tenant = () => appTenant(this.idp, app);
    const answer = <T>(value: T) => Promise.resolve(value);
    if (provider === "oauth2-facebook") {
      return {
        kind: "graph",
        authorizationEndpoint: `${issuer}/authorize`,
        accessToken: (query) => answer(tenant().facebookAccessToken(query)),
        debugToken: (query) => answer(tenant().debugToken(query)),
        me: (query) => answer(tenant().me(query)),
      };
    }
    const discovery = FakeIdentityProvider.configuration(issuer, provider);
    return {
      kind: "oidc",
      issuer,
      acceptedIssuers: [issuer],
      authorizationEndpoint: discovery.authorization_endpoint,
      pkce: "code_challenge_methods_supported" in discovery,
      algorithms: discovery.id_token_signing_alg_values_supported,
      // The key is made when a token is first checked, not when a sign-in starts.
      keys: async (header, token) => (await this.idp.keys.localKeySet())(header, token),
      token: (form) => tenant().token(provider, form, issuer),
    };
  }
}
