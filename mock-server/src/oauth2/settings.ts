/**
 * An app's settings of one OAuth 2.0 provider (Google, Apple, Facebook), as the sign-in code
 * needs them, and what each provider asks for.
 */
import type { AppConfig, OAuth2ProviderName } from "../config/app-config.ts";

export interface OAuth2Settings {
  provider: OAuth2ProviderName;
  enabled: boolean;
  clientId: string;
  clientSecret: string | undefined;
  teamId: string | undefined;
  keyId: string | undefined;
  redirectUris: string[];
  metadataFields: { name: string; required: boolean }[];
  domainRestrictions: string[];
}

/** The provider's settings, or undefined when the app has none with a client id. */
export function oauth2Settings(config: AppConfig, provider: OAuth2ProviderName): OAuth2Settings | undefined {
  const c = config.providers?.[provider];
  if (!c?.clientId) return undefined;
  return {
    provider,
    enabled: c.enabled ?? false,
    clientId: c.clientId,
    clientSecret: c.clientSecret,
    teamId: c.teamId,
    keyId: c.keyId,
    redirectUris: c.redirectUris ?? [],
    metadataFields: (c.metadataFields ?? []).map((f) => ({ name: f.name, required: f.required === true })),
    domainRestrictions: (c.domainRestrictions ?? []).map((d) => d.toLowerCase()),
  };
}

/** The scopes each provider is asked for (profile and e-mail), and how it answers. */
export const providerRequests: Record<OAuth2ProviderName, { scope: string; responseMode?: "form_post" }> = {
  "oauth2-google": { scope: "openid email profile" },
  // Apple sends the name only in a form post, and asks for one whenever a scope is requested.
  "oauth2-apple": { scope: "openid name email", responseMode: "form_post" },
  "oauth2-facebook": { scope: "email public_profile" },
};
