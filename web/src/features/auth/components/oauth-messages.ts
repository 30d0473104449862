/**
 * What went wrong with a sign-in through Google, Apple or Facebook, in plain words: the window
 * blocked or closed, the sign-in cancelled, the provider refusing, or the service's own answer.
 * The service's text only chooses the sentence.
 */

import { errorMessage } from "../../../lib/errors/error-message.ts";
import { AppServicesRequestError } from "../../../lib/errors/service-errors.ts";
import type { OAuthProviderType } from "../api/begin-oauth-login.ts";
import { OAuthWindowError } from "../hooks/oauth-window.ts";
import { OAuthSignInError } from "../hooks/session-actions.ts";

export const providerLabels: Record<OAuthProviderType, string> = {
  "oauth2-google": "Google",
  "oauth2-apple": "Apple",
  "oauth2-facebook": "Facebook",
};

export function oauthErrorMessage(error: unknown, provider: OAuthProviderType, purpose: "sign-in" | "link"): string {
  const label = providerLabels[provider];
  if (error instanceof OAuthWindowError) {
    return error.reason === "blocked"
      ? "Your browser blocked the sign-in window. Allow pop-up windows for this site and try again."
      : `The ${label} window was closed before you finished signing in. Try again when you are ready.`;
  }
  if (error instanceof OAuthSignInError) {
    const text = error.serviceMessage;
    if (/^error from OAuth2 provider: (access_denied|user_cancelled_authorize)\b/.test(text))
      return `You cancelled signing in with ${label}. Nothing was changed.`;
    if (text.startsWith("error from OAuth2 provider"))
      return `${label} could not sign you in. Try again, or choose another way to sign in.`;
    if (text === "user disabled") return "This account has been disabled. Contact us if you think this is a mistake.";
    if (text.includes("already exists with the specified provider"))
      return `This ${label} account already belongs to another account here. Sign in with it instead.`;
    if (text.includes("unsupported")) return `Signing in with ${label} is not available.`;
    if (text.includes("signed out or was removed")) return "Your session has ended. Please sign in again.";
    if (text.includes("maximum number of users")) return "New accounts cannot be created right now.";
    if (text.includes("may not sign in to this app"))
      return `This ${label} account's e-mail domain cannot sign in here. Use an account of your organisation.`;
    if (text.includes("OAuth2 provider") || text.includes("OAuth 2.0 token"))
      return `${label} did not confirm who you are. Try again in a moment.`;
    return purpose === "link"
      ? `${label} could not be added to your account. Try again.`
      : `Signing in with ${label} did not work. Try again.`;
  }
  if (error instanceof AppServicesRequestError && error.serviceMessage.includes("redirect_uris"))
    return `Signing in with ${label} is not set up for this site.`;
  return errorMessage(error, purpose === "link" ? "link" : "default");
}
