/**
 * Who a provider says the user is, from what the client sends (`POST …/login`: Google's or
 * Apple's ID token, a Google authorization code, a Facebook access token) or from the code the
 * provider hands the callback. Google and Apple: OpenID Connect (the code exchanged at the token
 * endpoint with the client secret, Apple's a JWT, and the PKCE verifier; the ID token verified).
 * Facebook: its Graph API (the code exchanged at `/oauth/access_token`; the access token checked
 * with `debug_token` against the app's id and secret; the profile from `/me`).
 */
import type { FastifyBaseLogger } from "fastify";
import { AppServicesError, appServicesErrors as errors } from "../errors/catalogue.ts";
import type { AppRuntime } from "../runtime/app-runtime.ts";
import { AppleSecretConfigError, appleClientSecret } from "./apple-client-secret.ts";
import {
  type EndpointReply,
  type EndpointSource,
  type GraphEndpoints,
  type OidcEndpoints,
  ProviderUnreachableError,
} from "./endpoints.ts";
import type { FlowState } from "./flow-state.ts";
import { appleUser, type ProviderAccount, profileFromClaims, profileFromGraph } from "./profile.ts";
import type { OAuth2Settings } from "./settings.ts";
import { verifyIdToken } from "./verify-id-token.ts";

export interface SignInContext {
  app: AppRuntime;
  /** The browser-facing origin of this server (where the built-in provider's pages are). */
  origin: string;
  source: EndpointSource;
  log: FastifyBaseLogger;
}

/** Google Identity Services' code flow (a popup) binds its codes to this redirect URI. */
export const googleCodeRedirectUri = "postmessage";

const graphFields = "id,name,email,first_name,last_name,picture";

/**
 * Runs a provider call: a provider that cannot be reached, answers nonsense, or an Apple key that
 * cannot sign is logged (with its cause) and answered as the service answered a provider failure.
 */
async function guarded<T>(context: SignInContext, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof AppServicesError) throw error;
    if (error instanceof ProviderUnreachableError || error instanceof AppleSecretConfigError) {
      context.log.warn({ reason: error.message, appId: context.app.appId }, "OAuth 2.0 provider failed");
      throw errors.oauth2FetchInfoFailed();
    }
    throw error;
  }
}

function oidc(endpoints: Awaited<ReturnType<EndpointSource["endpoints"]>>): OidcEndpoints {
  if (endpoints.kind !== "oidc") throw new ProviderUnreachableError("expected an OpenID Connect provider");
  return endpoints;
}

function graph(endpoints: Awaited<ReturnType<EndpointSource["endpoints"]>>): GraphEndpoints {
  if (endpoints.kind !== "graph") throw new ProviderUnreachableError("expected Facebook's Graph API");
  return endpoints;
}

const bodyOf = (reply: EndpointReply) =>
  reply.body !== null && typeof reply.body === "object" ? (reply.body as Record<string, unknown>) : {};

async function clientSecretFor(settings: OAuth2Settings, endpoints: OidcEndpoints, now: number): Promise<string> {
  return settings.provider === "oauth2-apple"
    ? appleClientSecret(settings, endpoints.issuer, now)
    : (settings.clientSecret ?? "");
}

/** Exchanges a code at an OpenID Connect token endpoint and verifies the ID token it gives. */
async function exchangeOidcCode(
  context: SignInContext,
  settings: OAuth2Settings,
  endpoints: OidcEndpoints,
  grant: { code: string; redirectUri: string; codeVerifier?: string | undefined; nonce?: string | undefined },
  apple: { first?: string; last?: string },
): Promise<ProviderAccount> {
  const now = context.app.clock.now();
  const form: Record<string, string> = {
    grant_type: "authorization_code",
    code: grant.code,
    redirect_uri: grant.redirectUri,
    client_id: settings.clientId,
    client_secret: await clientSecretFor(settings, endpoints, now),
  };
  if (grant.codeVerifier) form.code_verifier = grant.codeVerifier;
  const reply = await endpoints.token(form);
  const idToken = bodyOf(reply).id_token;
  if (reply.status !== 200 || typeof idToken !== "string") {
    context.log.info({ status: reply.status, reply: reply.body }, "OAuth 2.0 code exchange refused");
    throw errors.oauth2ExchangeFailed();
  }
  const claims = await verifyIdToken(idToken, endpoints, { audience: settings.clientId, now, nonce: grant.nonce });
  return { sub: claims.sub, profile: profileFromClaims(claims, apple) };
}

/** A Facebook user access token, checked with `debug_token` against the app, and its `/me`. */
async function facebookAccount(
  context: SignInContext,
  settings: OAuth2Settings,
  endpoints: GraphEndpoints,
  accessToken: string,
): Promise<ProviderAccount> {
  const debug = await endpoints.debugToken({
    input_token: accessToken,
    access_token: `${settings.clientId}|${settings.clientSecret ?? ""}`,
  });
  const data = bodyOf(debug).data as Record<string, unknown> | undefined;
  if (debug.status !== 200 || !data) {
    context.log.info({ status: debug.status, reply: debug.body }, "Facebook debug_token refused");
    throw errors.oauth2FetchInfoFailed();
  }
  if (data.is_valid !== true) throw errors.oauth2TokenInvalid("the access token is not valid");
  if (String(data.app_id) !== settings.clientId) throw errors.oauth2TokenInvalid("audience does not match");
  const expiresAt = typeof data.expires_at === "number" ? data.expires_at : 0;
  if (expiresAt !== 0 && expiresAt * 1000 <= context.app.clock.now())
    throw errors.oauth2TokenInvalid("token is expired");
  const userId = typeof data.user_id === "string" ? data.user_id : undefined;
  if (!userId) throw errors.oauth2TokenInvalid("the token names no user");
  const me = await endpoints.me({ access_token: accessToken, fields: graphFields });
  const profile = bodyOf(me);
  if (me.status !== 200 || profile.id !== userId) {
    context.log.info({ status: me.status, reply: me.body }, "Facebook /me refused");
    throw errors.oauth2FetchInfoFailed();
  }
  return { sub: userId, profile: profileFromGraph(profile) };
}

/**
 * The longest token or code a client may hand over (the providers' are 1–2 KB): a longer one is
 * refused before any work on it, and never sent on to the provider.
 */
export const maxProviderTokenLength = 16 * 1024;

/** The token flows of `POST …/auth/providers/{provider}/login`. */
export function authenticateToken(
  context: SignInContext,
  settings: OAuth2Settings,
  credentials: { id_token?: string; authCode?: string; accessToken?: string },
): Promise<ProviderAccount> {
  return guarded(context, async () => {
    if ((credentials.authCode?.length ?? 0) > maxProviderTokenLength) throw errors.oauth2ExchangeFailed();
    const token = credentials.id_token ?? credentials.accessToken ?? "";
    if (token.length > maxProviderTokenLength)
      throw errors.oauth2TokenInvalid(`the token is longer than ${maxProviderTokenLength} characters`);
    const endpoints = await context.source.endpoints(settings.provider, context);
    if (settings.provider === "oauth2-facebook")
      return facebookAccount(context, settings, graph(endpoints), credentials.accessToken!);
    const provider = oidc(endpoints);
    if (credentials.authCode !== undefined)
      return exchangeOidcCode(
        context,
        settings,
        provider,
        { code: credentials.authCode, redirectUri: googleCodeRedirectUri },
        {},
      );
    const now = context.app.clock.now();
    const claims = await verifyIdToken(credentials.id_token!, provider, { audience: settings.clientId, now });
    return { sub: claims.sub, profile: profileFromClaims(claims) };
  });
}

/** The browser flow's callback: the provider's code for the flow started earlier. */
export function authenticateCode(
  context: SignInContext,
  settings: OAuth2Settings,
  flow: FlowState,
  code: string,
  appleUserField?: string,
): Promise<ProviderAccount> {
  return guarded(context, async () => {
    const endpoints = await context.source.endpoints(settings.provider, context);
    if (endpoints.kind === "graph") {
      const reply = await endpoints.accessToken({
        client_id: settings.clientId,
        redirect_uri: flow.callback,
        client_secret: settings.clientSecret ?? "",
        code,
      });
      const accessToken = bodyOf(reply).access_token;
      if (reply.status !== 200 || typeof accessToken !== "string") {
        context.log.info({ status: reply.status, reply: reply.body }, "Facebook code exchange refused");
        throw errors.oauth2ExchangeFailed();
      }
      return facebookAccount(context, settings, endpoints, accessToken);
    }
    return exchangeOidcCode(
      context,
      settings,
      endpoints,
      { code, redirectUri: flow.callback, codeVerifier: flow.codeVerifier, nonce: flow.nonce },
      appleUser(appleUserField),
    );
  });
}
