/**
 * The origins a browser may call an App Services route from, for CORS (http/cors.ts): the app's
 * `allowedRequestOrigins` (App Services' allowed_request_origins; any origin when empty). Routes
 * without an app id in the path find the app from the bearer token. Logins may be sent with
 * credentials (realm-web's provider link).
 */

import { appServicesPrefix, withOneLeadingSlash } from "../http/areas.ts";
import type { AllowedOrigins, Credentialed } from "../http/cors.ts";
import type { AppRuntime } from "../runtime/app-runtime.ts";
import type { Emulator } from "../runtime/emulator.ts";
import { appOfToken } from "./auth-context.ts";

const appIdInPath = new RegExp(`^${appServicesPrefix.replace(/\./g, "\\.")}/app/([^/?]+)`);
const anyOrigin: readonly string[] = [];
const loginPath = new RegExp(
  `^${appServicesPrefix.replace(/\./g, "\\.")}/app/[^/?]+/auth/providers/[^/?]+/login(\\?|$)`,
);
const linkHeaders: readonly string[] = ["X-BAAS-Location"];

/**
 * realm-web links an OAuth 2.0 identity with `fetch(…/login?link=true, {credentials: "include"})`
 * and reads the provider's URL from X-BAAS-Location. No cookie ever authenticates here.
 */
export const credentialedLogin: Credentialed = (request) => (loginPath.test(request.url) ? linkHeaders : undefined);

export function allowedRequestOrigins(emulator: Emulator): AllowedOrigins {
  function appOf(url: string, authorization: string | undefined): Promise<AppRuntime | undefined> {
    const match = appIdInPath.exec(withOneLeadingSlash(url));
    if (match?.[1]) return emulator.apps.get(decodeURIComponent(match[1]));
    const bearer = /^Bearer\s+(\S+)/i.exec(authorization ?? "")?.[1];
    return bearer ? appOfToken(emulator, bearer) : Promise.resolve(undefined);
  }
  // An app the store cannot be asked about now (an outage) is treated as unknown: the request
  // itself then answers the outage.
  return (request) =>
    appOf(request.url, request.headers.authorization).then(
      (found) => found?.config.allowedRequestOrigins ?? anyOrigin,
      () => anyOrigin,
    );
}
