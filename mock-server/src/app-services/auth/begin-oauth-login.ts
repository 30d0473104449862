/**
 * The start of a browser sign-in with Google, Apple or Facebook (realm-web's
 * `Credentials.google({redirectUrl})` and friends): checks the redirect against the provider's
 * `redirect_uris`, seals the flow into the provider's `state`, and sends the browser to the
 * provider's sign-in page (or, for realm-web's link, names it in `X-BAAS-Location`).
 */
import { createHash, randomBytes } from "node:crypto";
import { isOAuth2Provider, providerEnabled } from "../../config/app-config.ts";
import { type AppServicesError, appServicesErrors as errors } from "../../errors/catalogue.ts";
import { publicOrigin } from "../../http/areas.ts";
import { ProviderUnreachableError } from "../../oauth2/endpoints.ts";
import { flowLifetimeMs, sealFlow } from "../../oauth2/flow-state.ts";
import { authorizationUrl, callbackPath, resultUrl } from "../../oauth2/redirect-urls.ts";
import { oauth2Settings } from "../../oauth2/settings.ts";
import { defineRoute } from "../route.ts";
import { deviceIdFrom } from "../session-tokens.ts";

/** realm-web's `device` parameter: its device information as base64 JSON (the device id as EJSON). */
function deviceIdOf(device: string | undefined): string {
  if (!device) return deviceIdFrom(undefined);
  try {
    return deviceIdFrom({ options: { device: JSON.parse(Buffer.from(device, "base64").toString("utf8")) } });
  } catch {
    return deviceIdFrom(undefined);
  }
}

export default defineRoute("beginOAuthLogin", "login", async (request, reply) => {
  const app = request.appRuntime!;
  const { provider } = request.params;
  const { redirect, state, device, providerRedirectHeader } = request.query;
  const linking = request.query.link === "true";
  const asHeader = providerRedirectHeader === "true";
  if (!isOAuth2Provider(provider)) throw errors.oauth2NotRedirected(provider);
  const settings = oauth2Settings(app.config, provider);
  // Never redirect anywhere the app did not allow (an open redirect would hand tokens to anyone).
  if (!settings?.redirectUris.includes(redirect)) throw errors.oauth2RedirectNotAllowed(redirect, provider);
  // From here on a failure goes back to the allowed redirect, where the SDK reads it; realm-web's
  // link asks with fetch, which reads the error reply instead.
  const fail = (error: AppServicesError) => {
    if (asHeader) throw error;
    return reply.redirect(resultUrl(redirect, { appId: app.appId, state, error: error.message }), 302);
  };
  if (!settings.enabled || !providerEnabled(app.config, provider)) return fail(errors.providerNotEnabled(provider));

  const origin = publicOrigin(request);
  let endpoints: Awaited<ReturnType<typeof request.server.emulator.oauth2.endpoints>>;
  try {
    endpoints = await request.server.emulator.oauth2.endpoints(provider, { app, origin });
  } catch (error) {
    if (!(error instanceof ProviderUnreachableError)) throw error;
    request.log.warn({ reason: error.message, appId: app.appId }, "OAuth 2.0 provider failed");
    return fail(errors.oauth2FetchInfoFailed());
  }
  const caller = request.caller;
  const nonce = randomBytes(16).toString("base64url");
  const codeVerifier = endpoints.kind === "oidc" && endpoints.pkce ? randomBytes(32).toString("base64url") : undefined;
  const callback = `${origin}${callbackPath}`;
  const sealed = await sealFlow(request.server.emulator.signingSecret, {
    appId: app.appId,
    provider,
    redirect,
    state,
    callback,
    origin,
    nonce,
    ...(codeVerifier ? { codeVerifier } : {}),
    deviceId: linking && caller ? caller.session.deviceId : deviceIdOf(device),
    ...(linking && caller ? { link: { userId: caller.user.id, sessionId: caller.sessionId } } : {}),
    expiresAt: app.clock.now() + flowLifetimeMs,
  });
  const location = authorizationUrl(endpoints, provider, {
    clientId: settings.clientId,
    redirectUri: callback,
    state: sealed,
    nonce,
    codeChallenge: codeVerifier ? createHash("sha256").update(codeVerifier).digest("base64url") : undefined,
  });
  if (asHeader) return reply.code(200).header("x-baas-location", location).send();
  return reply.redirect(location, 302);
});
