import { describe, expect, it } from "vitest";
import { AppServicesRequestError } from "../../../lib/errors/service-errors.ts";
import { OAuthWindowError } from "../hooks/oauth-window.ts";
import { OAuthSignInError } from "../hooks/session-actions.ts";
import { oauthErrorMessage } from "./oauth-messages.ts";

const signIn = (error: unknown) => oauthErrorMessage(error, "oauth2-google", "sign-in");
const fromService = (text: string) => signIn(new OAuthSignInError("oauth2-google", text));

describe("sign-in with a provider, in plain words", () => {
  it("tells a blocked or closed window, a cancelled sign-in and a provider's refusal apart", () => {
    expect(signIn(new OAuthWindowError("blocked"))).toBe(
      "Your browser blocked the sign-in window. Allow pop-up windows for this site and try again.",
    );
    expect(signIn(new OAuthWindowError("closed"))).toBe(
      "The Google window was closed before you finished signing in. Try again when you are ready.",
    );
    expect(fromService("error from OAuth2 provider: access_denied")).toBe(
      "You cancelled signing in with Google. Nothing was changed.",
    );
    expect(
      oauthErrorMessage(
        new OAuthSignInError("oauth2-apple", "error from OAuth2 provider: user_cancelled_authorize"),
        "oauth2-apple",
        "sign-in",
      ),
    ).toBe("You cancelled signing in with Apple. Nothing was changed.");
    expect(fromService("error from OAuth2 provider: server_error")).toBe(
      "Google could not sign you in. Try again, or choose another way to sign in.",
    );
    expect(fromService("error exchanging access code with OAuth2 provider")).toBe(
      "Google did not confirm who you are. Try again in a moment.",
    );
    expect(fromService("invalid OAuth 2.0 token: token is expired")).toBe(
      "Google did not confirm who you are. Try again in a moment.",
    );
  });

  it("names the service's answers, never shows their text", () => {
    expect(fromService("user disabled")).toBe(
      "This account has been disabled. Contact us if you think this is a mistake.",
    );
    expect(
      oauthErrorMessage(
        new OAuthSignInError("oauth2-google", "a user already exists with the specified provider"),
        "oauth2-google",
        "link",
      ),
    ).toBe("This Google account already belongs to another account here. Sign in with it instead.");
    expect(fromService("something new")).toBe("Signing in with Google did not work. Try again.");
    expect(fromService("accounts of the e-mail domain 'example.com' may not sign in to this app")).toBe(
      "This Google account's e-mail domain cannot sign in here. Use an account of your organisation.",
    );
    const notSetUp = new AppServicesRequestError(400, {
      error: "redirect URI 'https://x/' is not one of the redirect_uris of 'oauth2-google'",
      error_code: "BadRequest",
    });
    expect(oauthErrorMessage(notSetUp, "oauth2-google", "link")).toBe(
      "Signing in with Google is not set up for this site.",
    );
  });
});
