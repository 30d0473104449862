/** The URLs of a browser sign-in: the provider's authorization request, and where the flow ends. */
import type { OAuth2ProviderName } from "../config/app-config.ts";
import type { ProviderEndpoints } from "./endpoints.ts";
import { providerRequests } from "./settings.ts";

/** The callback the providers send the browser back to (the hosted service's path). */
export const callbackPath = "/api/client/v2.0/auth/callback";

export function authorizationUrl(
  endpoints: ProviderEndpoints,
  provider: OAuth2ProviderName,
  request: { clientId: string; redirectUri: string; state: string; nonce: string; codeChallenge?: string | undefined },
): string {
  const url = new URL(endpoints.authorizationEndpoint);
  const { scope, responseMode } = providerRequests[provider];
  const params: Record<string, string> = {
    client_id: request.clientId,
    redirect_uri: request.redirectUri,
    response_type: "code",
    scope,
    state: request.state,
  };
  if (endpoints.kind === "oidc") params.nonce = request.nonce;
  if (responseMode) params.response_mode = responseMode;
  if (request.codeChallenge) {
    params.code_challenge = request.codeChallenge;
    params.code_challenge_method = "S256";
  }
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
  return url.href;
}

export interface FlowResult {
  appId: string;
  state: string;
  /** `<accessToken>$<refreshToken>$<userId>$<deviceId>`. */
  userAuth?: string;
  link?: boolean;
  error?: string;
}

/**
 * `<redirect>#_baas_client_app_id=…&_baas_state=…&_baas_ua=…` (or `_baas_error`): realm-web's
 * `handleAuthRedirect` splits the fragment on `&` and `=` and URI-decodes each value.
 */
export function resultUrl(redirect: string, result: FlowResult): string {
  const parts: [string, string][] = [
    ["_baas_client_app_id", result.appId],
    ["_baas_state", result.state],
  ];
  if (result.userAuth !== undefined) parts.push(["_baas_ua", result.userAuth]);
  if (result.link) parts.push(["_baas_link", "ok"]);
  if (result.error !== undefined) parts.push(["_baas_error", result.error]);
  const base = redirect.split("#")[0];
  return `${base}#${parts.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&")}`;
}
