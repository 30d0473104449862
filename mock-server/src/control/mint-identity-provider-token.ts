/**
 * A token of the fake identity provider, as a provider's own SDK would hand it to a client app
 * (Google Identity Services' ID token or code, Apple's ID token, the Facebook SDK's access token),
 * or one made to be refused (another audience or issuer, a nonce, expired, signed by a stranger).
 */
import { controlErrors } from "../errors/catalogue.ts";
import { idpBasePath } from "../idp/fake-identity-provider.ts";
import { idpTenantOf } from "./identity-provider.ts";
import { defineControlRoute, iso } from "./route.ts";

export default defineControlRoute("mintIdentityProviderToken", async (request, reply) => {
  const tenant = await idpTenantOf(request);
  const { provider, kind, email, name } = request.body;
  const audience = request.body.audience ?? tenant.client(provider)?.clientId;
  if (audience === undefined)
    throw controlErrors.validation(`the app has no clientId for ${provider}: give an audience`);
  if (kind === "accessToken" && provider !== "oauth2-facebook")
    throw controlErrors.validation("access tokens are Facebook's: use id_token or authCode");
  if (kind === "id_token" && provider === "oauth2-facebook")
    throw controlErrors.validation("Facebook signs in with access tokens: use accessToken");
  const account = tenant.upsertAccount({ email, name }).account;
  const issuer =
    request.body.issuer ?? `${request.server.idpHost.origin(request)}${idpBasePath(tenant.name, provider)}`;
  const lifetimeSeconds = request.body.expiresInSeconds;
  let minted: { token: string; sub: string; expiresAt: number };
  if (kind === "id_token") {
    minted = await tenant.idToken({
      provider,
      account,
      issuer,
      audience,
      nonce: request.body.nonce,
      lifetimeSeconds,
      signedBy: request.body.signedBy,
    });
  } else if (kind === "authCode") {
    const code = tenant.issueCode({
      provider,
      account,
      clientId: audience,
      redirectUri: request.body.redirectUri ?? "postmessage",
      nonce: request.body.nonce,
      codeChallenge: request.body.codeChallenge,
      scope: "openid email profile",
    });
    minted = { token: code, sub: tenant.subject(provider, account), expiresAt: tenant.codeExpiry() };
  } else {
    const access = tenant.issueAccessToken({ provider, account, clientId: audience, lifetimeSeconds });
    minted = { token: access.token, sub: tenant.subject(provider, account), expiresAt: access.expiresAt };
  }
  return reply
    .code(201)
    .send({ provider, kind, token: minted.token, sub: minted.sub, expiresAt: iso(minted.expiresAt) });
});
