/**
 * Signing in with Google, Apple and Facebook in tests: tokens minted by the fake identity
 * provider (control API), and the browser flow stepped through with inject(), every reply
 * contract-checked: the start, the provider's picker and its answer, the callback.
 */
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import { base, call } from "./app.ts";

export type OAuthProvider = "oauth2-google" | "oauth2-apple" | "oauth2-facebook";

/** The redirect every provider of the template app allows (the web app's redirect page). */
export const webRedirect = "http://127.0.0.1:5173/auth/callback";

export async function mint(
  app: FastifyInstance,
  appId: string,
  request: { provider: OAuthProvider; kind: "id_token" | "authCode" | "accessToken"; email: string } & Record<
    string,
    unknown
  >,
) {
  const { body } = await call(app, "mintIdentityProviderToken", {
    method: "POST",
    url: `/_mock/v1/apps/${appId}/identity-provider/tokens`,
    payload: request,
  });
  return body as { token: string; sub: string; expiresAt: string };
}

export const loginUrl = (appId: string, provider: string, link = false) =>
  `${base}/app/${appId}/auth/providers/${provider}/login${link ? "?link=true" : ""}`;

/** `GET …/login?redirect&state`: the start of the browser flow. */
export function beginUrl(
  appId: string,
  provider: string,
  query: { redirect?: string; state?: string; link?: string; providerRedirectHeader?: string; device?: string } = {},
) {
  const params = new URLSearchParams({ redirect: webRedirect, state: "abcdefghijkl", ...query });
  return `${base}/app/${appId}/auth/providers/${provider}/login?${params}`;
}

/** A URL of the emulator as inject() takes it (path and query), from an absolute one. */
export const local = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};

/** The fragment of the flow's end: `_baas_*` values, URI-decoded as realm-web decodes them. */
export function fragmentOf(location: string): Record<string, string> {
  const hash = new URL(location).hash.slice(1);
  return Object.fromEntries(
    hash
      .split("&")
      .map((kv) => kv.split("="))
      .map(([k, v]) => [k!, decodeURIComponent(v!)]),
  );
}

export function userAuthOf(fragment: Record<string, string>) {
  const parts = fragment._baas_ua!.split("$");
  expect(parts).toHaveLength(4);
  const [accessToken, refreshToken, userId, deviceId] = parts as [string, string, string, string];
  return { accessToken, refreshToken, userId, deviceId };
}

export const location = (response: LightMyRequestResponse) => String(response.headers.location);

/** The fields of the fake provider's authorization request, for the picker's form. */
function authorizationFields(authorizeUrl: string): Record<string, string> {
  return Object.fromEntries(new URL(authorizeUrl).searchParams);
}

/**
 * From the provider's authorization URL to the emulator's answer at the callback: the picker is
 * shown, the account chosen (or added, or cancelled), the answer followed to the callback.
 */
export async function throughProvider(
  app: FastifyInstance,
  authorizeUrl: string,
  choice: { email: string; name?: string } | "cancel",
  /** Changes Sign in with Apple's form post before it is sent (a client tampering with it). */
  editPost: (posted: Record<string, string>) => void = () => undefined,
): Promise<LightMyRequestResponse> {
  const page = await call(app, "showIdpAuthorization", { method: "GET", url: local(authorizeUrl) });
  expect(page.response.statusCode).toBe(200);
  const fields = authorizationFields(authorizeUrl);
  const form =
    choice === "cancel"
      ? { ...fields, choice: "cancel" }
      : { ...fields, choice: "new", email: choice.email, ...(choice.name ? { name: choice.name } : {}) };
  const answer = await call(app, "submitIdpAuthorization", {
    method: "POST",
    url: new URL(authorizeUrl).pathname,
    headers: { "content-type": "application/x-www-form-urlencoded" },
    payload: new URLSearchParams(form).toString(),
  });
  if (answer.response.statusCode === 302) {
    return (await call(app, "finishOAuthLogin", { method: "GET", url: local(location(answer.response)) })).response;
  }
  // Sign in with Apple: a page that posts the answer to the callback.
  expect(answer.response.statusCode).toBe(200);
  const html = answer.response.body as string;
  const action = /<form method="post" action="([^"]+)">/.exec(html)?.[1];
  expect(action).toBeDefined();
  const posted = Object.fromEntries(
    [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
      m[1]!,
      unescapeHtml(m[2]!),
    ]),
  );
  editPost(posted);
  return (
    await call(app, "finishOAuthLoginForm", {
      method: "POST",
      url: local(action!.replaceAll("&amp;", "&")),
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams(posted).toString(),
    })
  ).response;
}

const unescapeHtml = (value: string) =>
  value
    .replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&amp;", "&");

/** The whole browser flow: start, provider, callback; the end's fragment. */
export async function browserSignIn(
  app: FastifyInstance,
  appId: string,
  provider: OAuthProvider,
  choice: { email: string; name?: string } | "cancel",
  query: Parameters<typeof beginUrl>[2] = {},
) {
  const begin = await call(app, "beginOAuthLogin", { method: "GET", url: beginUrl(appId, provider, query) });
  expect(begin.response.statusCode).toBe(302);
  const end = await throughProvider(app, location(begin.response), choice);
  expect(end.statusCode).toBe(302);
  return { location: location(end), fragment: fragmentOf(location(end)) };
}
