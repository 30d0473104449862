/**
 * Signing in and linking, as the official SDK does them: log in, keep the tokens, then read the
 * profile (whether the user is anonymous, and the e-mail of an API-key user).
 */
import { getProfile, isAnonymousProfile, profileEmail } from "../../../lib/api/get-profile.ts";
import { sessionStore } from "../../../lib/api-clients.ts";
import { AppServicesRequestError } from "../../../lib/errors/service-errors.ts";
import { type Credentials, login } from "../api/login.ts";

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
