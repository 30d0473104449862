/**
 * In the emulator the fake identity provider has one tenant per app: its clients are the app's
 * provider settings (client id and secret, as they are now) and its clock is the app's clock, so a
 * test that moves the app's clock expires the provider's tokens and codes too.
 */
import type { OAuth2ProviderName } from "../config/app-config.ts";
import type { AppRuntime } from "../runtime/app-runtime.ts";
import type { FakeIdentityProvider } from "./fake-identity-provider.ts";
import type { IdpClient, IdpTenant } from "./tenant.ts";

export function clientOf(app: AppRuntime, provider: OAuth2ProviderName): IdpClient | undefined {
  const settings = app.config.providers?.[provider];
  if (!settings?.clientId) return undefined;
  return { clientId: settings.clientId, clientSecret: settings.clientSecret, teamId: settings.teamId };
}

export function appTenant(idp: FakeIdentityProvider, app: AppRuntime): IdpTenant {
  return idp.tenant(app.appId, { now: () => app.clock.now(), client: (provider) => clientOf(app, provider) });
}
