/**
 * beginOAuthLogin: the start of a browser sign-in with Google, Apple or Facebook, as the official
 * SDK makes it. Signing in, the window opens at the operation's URL itself (the service redirects
 * it to the provider); linking, the app first asks with the signed-in user's access token (the
 * session middleware adds it for `link=true`) and opens the window at the provider's URL the
 * service names in `X-BAAS-Location`.
 */
import type { AppServicesPaths } from "@harness/openapi/app-services";
import { appId, appServices, appServicesBaseUrl, sessionStore } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";

const path = "/api/client/v2.0/app/{appId}/auth/providers/{provider}/login" satisfies keyof AppServicesPaths;

type Query = NonNullable<AppServicesPaths[typeof path]["get"]["parameters"]["query"]>;

export type OAuthProviderType = "oauth2-google" | "oauth2-apple" | "oauth2-facebook";

/** What the app tells the service about the device, as the SDK sends it here (base64 JSON). */
function device(): string {
  const deviceId = sessionStore.getDeviceId();
  const info = { appId: "notes-web", platform: "web", ...(deviceId ? { deviceId: { $oid: deviceId } } : {}) };
  return btoa(JSON.stringify(info));
}

/** The URL a sign-in window opens at. */
export async function oauthLoginUrl(provider: OAuthProviderType, redirect: string, state: string): Promise<string> {
  const query: Query = { redirect, state, device: device() };
  const url = new URL(
    `${await appServicesBaseUrl()}${path.replace("{appId}", encodeURIComponent(appId)).replace("{provider}", provider)}`,
  );
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, String(value));
  return url.href;
}

/** The provider's URL for linking it to the signed-in user. */
export async function beginOAuthLink(provider: OAuthProviderType, redirect: string, state: string): Promise<string> {
  const result = await appServices.GET(path, {
    params: { path: { appId, provider }, query: { redirect, state, link: "true", providerRedirectHeader: "true" } },
  });
  await expectOk(Promise.resolve(result));
  const location = result.response.headers.get("x-baas-location");
  if (!location) throw new Error("The service did not say where to sign in.");
  return location;
}
