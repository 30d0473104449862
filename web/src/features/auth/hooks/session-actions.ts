/**
 * Signing in and linking, as the official SDK does them: log in, keep the tokens, then read the
 * profile (whether the user is anonymous, and the e-mail of an API-key user).
 */
import { getProfile, isAnonymousProfile, profileEmail } from "../../../lib/api/get-profile.ts";
import { sessionStore } from "../../../lib/api-clients.ts";
import { AppServicesRequestError } from "../../../lib/errors/service-errors.ts";
import { beginOAuthLink, type OAuthProviderType, oauthLoginUrl } from "../api/begin-oauth-login.ts";
import { type Credentials, login } from "../api/login.ts";
import { decodeUserAuth, newState, type OAuthResult } from "./oauth-result.ts";
import { openSignInWindow, waitForResult } from "./oauth-window.ts";

export async function signIn(credentials: Credentials): Promise<void> {
  const reply = await login(credentials);
  sessionStore.signIn(reply, {
    providerType: credentials.provider,
    email: credentials.provider === "local-userpass" ? credentials.username : null,
  });
  try {
    const profile = await getProfile();
    sessionStore.updateUser({ email: profileEmail(profile), anonymous: isAnonymousProfile(profile) });
  } catch {
    // The session works without the profile; the account page reads it again.
  }
}

/** Adds an e-mail/password identity to the signed-in (anonymous) user. */
export async function linkEmailPassword(email: string, password: string): Promise<void> {
  const session = sessionStore.getSnapshot();
  if (session.status !== "signed-in")
    throw new AppServicesRequestError(401, { error: "must authenticate first", error_code: "MissingAuthReq" });
  const reply = await login({ provider: "local-userpass", username: email, password }, { link: true });
  if (reply.user_id !== session.userId) throw new Error("The service linked the address to another user.");
  sessionStore.setAccessToken(reply.access_token);
  sessionStore.updateUser({ email, anonymous: false });
}

/** A wrong password here means "not confirmed yet" for an address that was just registered. */
export function isNotConfirmedYet(error: unknown): boolean {
  return error instanceof AppServicesRequestError && error.code === "InvalidPassword";
}

/** The service ended a browser sign-in with an error (`_baas_error`): its text, and the provider. */
export class OAuthSignInError extends Error {
  constructor(
    readonly provider: OAuthProviderType,
    readonly serviceMessage: string,
  ) {
    super(serviceMessage);
    this.name = "OAuthSignInError";
  }
}

/** Where the service ends a browser sign-in: this app's redirect page (one of the provider's redirect_uris). */
export const redirectUrl = () => `${window.location.origin}/auth/callback`;

/** Opens the window, runs the flow in it, and answers the tokens it ends with. */
async function browserFlow(provider: OAuthProviderType, start: (state: string) => Promise<string>) {
  const popup = openSignInWindow();
  const state = newState();
  let url: string;
  try {
    url = await start(state);
  } catch (error) {
    popup.close();
    throw error;
  }
  const result: OAuthResult = await waitForResult(popup, url, state);
  if (result.error !== undefined) throw new OAuthSignInError(provider, result.error);
  const tokens = decodeUserAuth(result.userAuth);
  if (!tokens || result.state !== state) throw new OAuthSignInError(provider, "the sign-in answer is incomplete");
  return { tokens, linked: result.link === "ok" };
}

async function afterSignIn(): Promise<void> {
  try {
    const profile = await getProfile();
    sessionStore.updateUser({ email: profileEmail(profile), anonymous: isAnonymousProfile(profile) });
  } catch {
    // The session works without the profile; the account page reads it again.
  }
}

/** "Continue with Google" (Apple, Facebook): the official SDK's browser flow. */
export async function signInWithProvider(provider: OAuthProviderType): Promise<void> {
  const { tokens } = await browserFlow(provider, (state) => oauthLoginUrl(provider, redirectUrl(), state));
  sessionStore.signIn(
    {
      access_token: tokens.accessToken,
      refresh_token: tokens.refreshToken,
      user_id: tokens.userId,
      device_id: tokens.deviceId,
    },
    { providerType: provider, email: null },
  );
  await afterSignIn();
}

/** Adds a provider's identity to the signed-in user (a guest stops being one). */
export async function linkProvider(provider: OAuthProviderType): Promise<void> {
  const session = sessionStore.getSnapshot();
  if (session.status !== "signed-in")
    throw new AppServicesRequestError(401, { error: "must authenticate first", error_code: "MissingAuthReq" });
  const { tokens, linked } = await browserFlow(provider, (state) => beginOAuthLink(provider, redirectUrl(), state));
  if (!linked || tokens.userId !== session.userId) throw new Error("The service linked the sign-in to another user.");
  sessionStore.setAccessToken(tokens.accessToken);
  await afterSignIn();
}
