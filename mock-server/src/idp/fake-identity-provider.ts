/**
 * The fake identity provider: one signing key per run and its tenants (in the emulator, one per
 * app; in the standalone process, any name). It stands in for Google, Apple and Facebook: an
 * OpenID Connect provider for the first two (discovery, JWKS, authorization and token endpoints),
 * Facebook's dialog and Graph API (`/oauth/access_token`, `/debug_token`, `/me`) for the third.
 * Nothing here knows HTTP: `routes/` serve it, and the emulator's built-in providers call it in
 * process (oauth2/builtin-endpoints.ts).
 */
import type { OAuth2ProviderName } from "../config/app-config.ts";
import { type IdpKeys, idTokenAlgorithm, processKeys } from "./keys.ts";
import { IdpTenant, type TenantContext } from "./tenant.ts";

/** The path of the fake provider's endpoints for one tenant and provider, below its origin. */
export const idpPrefix = "/_mock/idp";
export const idpBasePath = (tenant: string, provider: OAuth2ProviderName) =>
  `${idpPrefix}/${encodeURIComponent(tenant)}/${provider}`;

const maxTenants = 10_000;

export const providerLabels: Record<OAuth2ProviderName, string> = {
  "oauth2-google": "Google",
  "oauth2-apple": "Apple",
  "oauth2-facebook": "Facebook",
};

export class FakeIdentityProvider {
  private readonly tenants = new Map<string, IdpTenant>();

  constructor(readonly keys: IdpKeys = processKeys) {}

  /** The tenant of this name (made on first use), answering with the given settings and clock. */
  tenant(name: string, context: TenantContext): IdpTenant {
    const existing = this.tenants.get(name);
    if (existing) return existing.setContext(context);
    const tenant = new IdpTenant(name, this.keys, context);
    // The standalone provider makes a tenant for any name asked: the oldest go past a bound.
    if (this.tenants.size >= maxTenants) this.tenants.delete(this.tenants.keys().next().value!);
    this.tenants.set(name, tenant);
    return tenant;
  }

  /** Forgets a tenant's accounts, codes and tokens (its app was reset or deleted). */
  drop(name: string): void {
    this.tenants.delete(name);
  }

  /** The OpenID Connect discovery document of a tenant's provider at this issuer. */
  static configuration(issuer: string, provider: OAuth2ProviderName) {
    const scopes =
      provider === "oauth2-apple" ? ["openid", "email", "name"] : ["openid", "email", "profile", "public_profile"];
    return {
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
      jwks_uri: `${issuer}/jwks`,
      response_types_supported: ["code"],
      response_modes_supported: ["query", "form_post"],
      subject_types_supported: ["public"],
      id_token_signing_alg_values_supported: [idTokenAlgorithm],
      scopes_supported: scopes,
      claims_supported: ["sub", "email", "email_verified", "name", "given_name", "family_name", "picture", "nonce"],
      // Like Apple's own document, Apple's names no PKCE method, so the emulator's Apple flow goes
      // without one (as it must with Apple), while Google's uses it.
      ...(provider === "oauth2-apple" ? {} : { code_challenge_methods_supported: ["S256"] }),
      token_endpoint_auth_methods_supported: ["client_secret_post"],
    };
  }
}
