import { afterEach, describe, expect, it, vi } from "vitest";
import { errorMessage } from "./error-message.ts";
import { AppServicesRequestError, EmailSendError } from "./service-errors.ts";

const appServices = (status: number, error: string, error_code?: string) =>
  new AppServicesRequestError(status, { error, ...(error_code ? { error_code } : {}), link: "http://x/logs" });

afterEach(() => vi.unstubAllGlobals());

describe("errorMessage: App Services replies in plain words", () => {
  it.each([
    [
      "wrong password",
      appServices(401, "unauthorized", "InvalidPassword"),
      "sign-in",
      /e-mail address or password is wrong/,
    ],
    ["invalid API key", appServices(401, "invalid API key", "AuthError"), "api-key-sign-in", /API key is not valid/],
    [
      "e-mail already registered",
      appServices(409, "name already in use", "AccountNameInUse"),
      "default",
      /already registered/,
    ],
    [
      "password too short",
      appServices(400, "password must be between 6 and 128 characters", "BadRequest"),
      "default",
      /between 6 and 128/,
    ],
    ["malformed e-mail", appServices(400, "email invalid", "BadRequest"), "default", /valid e-mail address/],
    [
      "link used or unknown",
      appServices(400, "invalid token data", "BadRequest"),
      "confirm",
      /confirmation link has expired or has already been used/,
    ],
    [
      "link expired",
      appServices(400, "userpass token is expired or invalid", "UserpassTokenInvalid"),
      "reset",
      /reset link has expired/,
    ],
    [
      "already confirmed",
      appServices(400, "already confirmed", "UserAlreadyConfirmed"),
      "default",
      /already confirmed/,
    ],
    ["unknown user", appServices(404, "user not found", "UserNotFound"), "default", /couldn't find an account/],
    [
      "rejected registration",
      appServices(400, 'failed to confirm user "a@b.co"', "BadRequest"),
      "default",
      /not approved/,
    ],
    [
      "confirmation by function",
      appServices(400, "cannot send a confirmation e-mail to a@b.co: confirmation runs a function", "BadRequest"),
      "default",
      /waiting for approval/,
    ],
    [
      "reset by function",
      appServices(400, "please use reset password via function", "BadRequest"),
      "reset",
      /security answer/,
    ],
    ["reset refused", appServices(400, 'failed to reset password for user "a@b.co"'), "reset", /could not be reset/],
    ["rate limited", appServices(429, "too many requests", "TooManyRequests"), "default", /Too many requests/],
    ["server error", appServices(500, "internal server error", "InternalServerError"), "default", /on our side/],
    [
      "session over",
      appServices(401, "invalid session: failed to find refresh token", "InvalidSession"),
      "default",
      /session has ended/,
    ],
    [
      "no bearer",
      appServices(401, "expected Authorization header with JWT (Bearer schema)"),
      "default",
      /session has ended/,
    ],
    [
      "key name",
      appServices(400, "can only contain ASCII letters, numbers, underscores, and hyphens", "InvalidParameter"),
      "default",
      /only contain letters/,
    ],
    [
      "duplicate key",
      appServices(409, "API key with name 'ci' already exists", "APIKeyAlreadyExists"),
      "default",
      /already have an API key/,
    ],
    [
      "guest keys",
      appServices(403, "anonymous users cannot create API keys", "InvalidParameter"),
      "default",
      /Guest accounts cannot have API keys/,
    ],
    [
      "link taken",
      appServices(401, "a user already exists with the specified provider", "AuthError"),
      "link",
      /belongs to another account/,
    ],
    [
      "second e-mail identity",
      appServices(
        401,
        "linking a local-userpass identity is not allowed when one is already linked",
        "InternalServerError",
      ),
      "link",
      /already has an e-mail address and password/,
    ],
    [
      "anonymous link",
      appServices(401, "linking an anonymous identity is not allowed", "InternalServerError"),
      "link",
      /guest account cannot be linked/,
    ],
    ["rule denied", appServices(400, "insert not permitted", "MongoDBError"), "default", /not allowed/],
    [
      "unknown app",
      new AppServicesRequestError(404, { error: "cannot find app using Client App ID 'x'" }),
      "default",
      /could not be found/,
    ],
  ] as const)("%s", (_, error, context, expected) => {
    expect(errorMessage(error, context)).toMatch(expected);
  });

  it("never shows the service's text or JSON, even for replies it does not know", () => {
    const message = errorMessage(new AppServicesRequestError(400, { error: '{"weird":true}', error_code: "Whatever" }));
    expect(message).toBe("Something went wrong. Please try again.");
    expect(errorMessage(new AppServicesRequestError(502, "<html>Bad gateway</html>"))).toBe(
      "The service is unavailable right now. Please try again in a moment.",
    );
  });

  it("says the service is unavailable for a moment when it or the proxy in front of it says so (502, 503, 504)", () => {
    const unavailable = "The service is unavailable right now. Please try again in a moment.";
    const database = appServices(
      503,
      "service temporarily unavailable: the database cannot be reached; try again shortly",
      "ServiceUnavailable",
    );
    expect(errorMessage(database)).toBe(unavailable);
    expect(errorMessage(new AppServicesRequestError(504, "<html>Gateway Time-out</html>"))).toBe(unavailable);
    expect(errorMessage(appServices(500, "internal server error", "InternalServerError"))).toMatch(/on our side/);
  });
});

describe("AppServicesRequestError", () => {
  it("keeps the reply's Retry-After (seconds or a date) as milliseconds", () => {
    const seconds = new Response(null, { status: 503, headers: { "retry-after": "2" } });
    expect(AppServicesRequestError.fromResponse(seconds, undefined).retryAfterMs).toBe(2000);
    const date = new Response(null, {
      status: 503,
      headers: { "retry-after": new Date(Date.now() + 3_000).toUTCString() },
    });
    expect(AppServicesRequestError.fromResponse(date, undefined).retryAfterMs).toBeGreaterThan(1000);
    const none = new Response(null, { status: 503 });
    expect(AppServicesRequestError.fromResponse(none, undefined).retryAfterMs).toBeUndefined();
    expect(AppServicesRequestError.fromResponse(none, undefined).unavailable).toBe(true);
    expect(new AppServicesRequestError(500, undefined).unavailable).toBe(false);
  });
});

describe("errorMessage: connection problems", () => {
  it("says offline when the browser is offline", () => {
    vi.stubGlobal("navigator", { onLine: false });
    expect(errorMessage(new TypeError("Failed to fetch"))).toMatch(/offline/);
  });

  it("says the server cannot be reached when online", () => {
    vi.stubGlobal("navigator", { onLine: true });
    expect(errorMessage(new TypeError("Failed to fetch"))).toMatch(/couldn't reach the server/);
  });
});

describe("errorMessage: EmailJS", () => {
  it.each([
    [new EmailSendError(429, "Too Many Requests"), /too quickly/],
    [new EmailSendError(422, "The recipients address is empty"), /recipient's e-mail address/],
    [new EmailSendError(413, "Variables size limit. The maximum allowed variables size is 50Kb"), /too long/],
    [
      new EmailSendError(
        400,
        "The Public Key is invalid. To find this ID, visit https://dashboard.emailjs.com/admin/account",
      ),
      /not set up correctly/,
    ],
    [
      new EmailSendError(0, "The public key is required. Visit https://dashboard.emailjs.com/admin/account"),
      /not set up correctly/,
    ],
    [new EmailSendError(412, "Gmail_API: Request had insufficient authentication scopes."), /mail provider refused/],
    [new EmailSendError(500, "Internal Server Error"), /on our side/],
  ])("%o", (error, expected) => {
    const message = errorMessage(error);
    expect(message).toMatch(expected);
    expect(message).not.toMatch(/dashboard|Gmail_API/);
  });
});
