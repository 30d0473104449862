/**
 * Every failure of the two services in plain words. The service's own text is matched only to
 * choose a sentence; it is never shown, and neither is any JSON.
 */
import { AppServicesRequestError, EmailSendError, isNetworkError } from "./service-errors.ts";

/** Where the error happened, when the same reply means different things to the user. */
export type ErrorContext = "sign-in" | "api-key-sign-in" | "link" | "confirm" | "reset" | "default";

const offline = "You appear to be offline. Check your connection and try again.";
const unreachable = "We couldn't reach the server. Check your connection and try again.";
const serverError = "Something went wrong on our side. Please try again in a moment.";
const unavailable = "The service is unavailable right now. Please try again in a moment.";
const rateLimited = "Too many requests right now. Wait a moment and try again.";
const sessionEnded = "Your session has ended. Please sign in again.";
const unknown = "Something went wrong. Please try again.";

function isOffline(): boolean {
  return typeof navigator !== "undefined" && navigator.onLine === false;
}

function usedLink(context: ErrorContext): string {
  if (context === "reset") return "This password reset link has expired or has already been used.";
  if (context === "confirm")
    return "This confirmation link has expired or has already been used. You can ask for a new one.";
  return "This link has expired or has already been used. Ask for a new one.";
}

function appServicesMessage(error: AppServicesRequestError, context: ErrorContext): string {
  const code = error.code;
  const text = error.serviceMessage;
  const has = (fragment: string) => text.toLowerCase().includes(fragment.toLowerCase());

  if (error.status === 429 || code === "TooManyRequests") return rateLimited;
  if (error.unavailable) return unavailable;
  if (error.status >= 500) return serverError;
  if (error.status === 413 || code === "ReadSizeLimitExceeded") return "That is too much data to send at once.";

  switch (code) {
    case "InvalidPassword":
      if (has("API key") || context === "api-key-sign-in") return "This API key is not valid, or it has been disabled.";
      if (context === "link") return "The e-mail address or password is wrong, or the address is not confirmed yet.";
      return "The e-mail address or password is wrong. If you just signed up, confirm your address first.";
    case "AccountNameInUse":
      return "This e-mail address is already registered. Sign in, or reset your password if you forgot it.";
    case "UserAlreadyConfirmed":
      return "This e-mail address is already confirmed. You can sign in.";
    case "UserNotFound":
      return "We couldn't find an account with this e-mail address.";
    case "UserpassTokenInvalid":
      return usedLink(context);
    case "UserDisabled":
      return "This account has been disabled. Contact us if you think this is a mistake.";
    case "AuthProviderNotFound":
      return "This way of signing in is not available.";
    case "InvalidSession":
    case "MissingAuthReq":
      return sessionEnded;
    // AuthError: an API key or custom token refused, an identity that belongs to another user;
    // the service's code for a link it refuses outright (a second e-mail identity, a guest one)
    // is InternalServerError (answered 401, so not a server fault).
    case "AuthError":
    case "InternalServerError":
      if (has("API key") || context === "api-key-sign-in") return "This API key is not valid, or it has been disabled.";
      if (has("already exists")) return "This e-mail address already belongs to another account.";
      if (has("already linked")) return "This account already has an e-mail address and password.";
      if (has("anonymous")) return "A guest account cannot be linked to another guest account.";
      return "This sign-in could not be added to your account.";
    case "APIKeyNotFound":
      return "This API key no longer exists.";
    case "APIKeyAlreadyExists":
      return "You already have an API key with this name. Choose another name.";
    case "InvalidParameter":
      if (has("anonymous")) return "Guest accounts cannot have API keys. Add an e-mail address and password first.";
      if (has("maximum number")) return "You have reached the maximum number of API keys. Delete one first.";
      if (has("current session")) return "You cannot delete the API key you are signed in with.";
      if (has("letters")) return "Key names may only contain letters, digits, underscores (_) and hyphens (-).";
      return "Some of the information you entered is not valid.";
    case "FunctionNotFound":
    case "ServiceNotFound":
      return "This feature is not available right now.";
    case "FunctionExecutionError":
    case "ExecutionTimeLimitExceeded":
      return "The server could not finish this action. Please try again.";
    case "MongoDBError":
      if (has("not permitted")) return "You are not allowed to change this note.";
      return "Your notes could not be saved or loaded. Please try again.";
    default:
      break;
  }

  // Replies the service sends without (or with a generic) error_code: recognised by their text.
  if (has("password must be between")) return "The password must be between 6 and 128 characters long.";
  if (has("email invalid")) return "Enter a valid e-mail address, like name@example.com.";
  if (has("invalid token data") || has("token is expired")) return usedLink(context);
  if (has("failed to confirm user"))
    return "Your registration was not approved. Contact us if you think this is a mistake.";
  if (has("automatic confirmation is enabled")) return "Your account does not need confirming. You can sign in.";
  if (has("confirmation function is not enabled")) {
    return "Accounts are confirmed by e-mail here. Open the link we sent you, or send a new one.";
  }
  if (has("confirmation runs a function")) {
    return "Accounts are approved without an e-mail here. Your account is waiting for approval.";
  }
  if (has("reset password via function")) return "Passwords are reset with a security answer here, not by e-mail.";
  if (has("reset password via email")) return "Passwords are reset by e-mail here. Ask for a reset link instead.";
  if (has("failed to reset password")) return "Your password could not be reset. Check your answer and try again.";
  if (has("'name' is a required string")) return "Enter a name for the key.";
  if (has("expected Authorization header") || has("must authenticate")) return sessionEnded;
  if (has("cannot find app")) return "This app could not be found on the server. Check the app's configuration.";
  if (error.status === 401) return context === "sign-in" ? "The e-mail address or password is wrong." : sessionEnded;
  if (error.status === 404) return "We couldn't find what you were looking for.";
  if (error.status === 403) return "You are not allowed to do this.";
  return unknown;
}

function emailMessage(error: EmailSendError): string {
  const text = error.text.toLowerCase();
  if (error.status === 0) return "E-mail sending is not set up correctly. Please contact us another way.";
  if (error.status === 429) return "You are sending messages too quickly. Wait a few seconds and try again.";
  if (error.status === 451) return "E-mail cannot be sent from an automated browser.";
  if (error.status === 422) return "The recipient's e-mail address is missing or not valid.";
  if (error.status === 413) return "The message is too long to send. Shorten it and try again.";
  if (error.status === 412) return "Our mail provider refused the message. Please try again later.";
  if (error.status === 400 || error.status === 403 || error.status === 404) {
    if (text.includes("recipients")) return "The recipient's e-mail address is missing or not valid.";
    return "E-mail sending is not set up correctly. Please contact us another way.";
  }
  if (error.status >= 500) return serverError;
  return "Your message could not be sent. Please try again.";
}

/** One sentence for the user, for any error a service call can throw. */
export function errorMessage(error: unknown, context: ErrorContext = "default"): string {
  if (error instanceof AppServicesRequestError) return appServicesMessage(error, context);
  if (error instanceof EmailSendError) return emailMessage(error);
  if (isNetworkError(error)) return isOffline() ? offline : unreachable;
  if (isOffline()) return offline;
  return unknown;
}
