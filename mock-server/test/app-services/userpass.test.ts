/** The e-mail/password provider: register, confirm, resend, retry, reset, and their errors. */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { hashPassword } from "../../src/state/passwords.ts";
import type { AppStore } from "../../src/store/store.ts";
import { base, bearer, beforeNext, call, getProfile, newApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

const userpass = (appId: string, path: string) => `${base}/app/${appId}/auth/providers/local-userpass/${path}`;

async function register(appId: string, email: string, password = "secret-1") {
  return call(app, "registerUser", { method: "POST", url: userpass(appId, "register"), payload: { email, password } });
}

async function login(appId: string, username: string, password = "secret-1") {
  return call(app, "login", { method: "POST", url: userpass(appId, "login"), payload: { username, password } });
}

async function tokens(appId: string, email: string, kind: "confirm" | "reset") {
  const { body } = await call(app, "listAuthTokens", {
    method: "GET",
    url: `/_mock/v1/apps/${appId}/auth/tokens?email=${encodeURIComponent(email)}&kind=${kind}`,
  });
  return body.tokens as { token: string; tokenId: string; link: string | null; status: string }[];
}

async function firstToken(appId: string, email: string, kind: "confirm" | "reset") {
  const [first] = await tokens(appId, email, kind);
  if (!first) throw new Error(`no ${kind} token for ${email}`);
  return first;
}

const refresh = (token: string) =>
  call(app, "refreshAccessToken", { method: "POST", url: `${base}/auth/session`, headers: bearer(token) });

/** The app's users' (and registrations') records, whichever store runs the tests. */
const usersOf = (appId: string) =>
  Object.getPrototypeOf(app.emulator.store.apps.scope(appId).users) as AppStore["users"];

/** Runs `meanwhile` just before the app's next confirmation or reset token is kept. */
const beforeNextToken = (appId: string, meanwhile: () => Promise<void>) =>
  beforeNext(Object.getPrototypeOf(app.emulator.store.apps.scope(appId).authTokens), "add", meanwhile);

/** Removes a user or registration (control API), which must be there. */
async function removeUser(appId: string, userId: string) {
  const removed = await call(app, "removeUser", { method: "DELETE", url: `/_mock/v1/apps/${appId}/users/${userId}` });
  expect(removed.response.statusCode).toBe(204);
}

/** Resets the app (control API) just before its next message is kept (after the request's token is). */
const resetBeforeNextMail = (appId: string) =>
  beforeNext(app.emulator, "sendMail", async () => {
    const reset = await call(app, "resetApp", { method: "POST", url: `/_mock/v1/apps/${appId}/reset` });
    expect(reset.response.statusCode).toBe(204);
  });

/** Deletes the user (control API) just before the next registration update (a reset's password write). */
const deleteBeforeAccountUpdate = (appId: string, userId: string) =>
  beforeNext(usersOf(appId), "updateAccount", () => removeUser(appId, userId));

async function advance(appId: string, seconds: number) {
  await call(app, "advanceClock", {
    method: "POST",
    url: `/_mock/v1/apps/${appId}/clock`,
    payload: { advanceBy: seconds },
  });
}

describe("registerUser", () => {
  it("creates a pending registration (201, empty, no Content-Type) and sends the confirmation e-mail", async () => {
    const appId = await newApp(app);
    const { response } = await register(appId, "ada@example.com");
    expect(response.statusCode).toBe(201);
    const [token] = await tokens(appId, "ada@example.com", "confirm");
    expect(token?.link).toBe(`http://127.0.0.1:5173/confirm?token=${token?.token}&tokenId=${token?.tokenId}`);
    const mail = await app.emulator.store.mail.list({ appId, to: "ada@example.com" });
    expect(mail).toHaveLength(1);
    expect(mail[0]).toMatchObject({ source: "app-services", kind: "confirm", subject: "Confirm your Notes account" });
    expect(mail[0]?.links).toEqual([token?.link]);
    expect(mail[0]?.token).toBe(token?.token);
    // A pending registration cannot log in yet.
    const { response: refused, body } = await login(appId, "ada@example.com");
    expect(refused.statusCode).toBe(401);
    expect(body).toMatchObject({ error: "unauthorized", error_code: "InvalidPassword" });
  });

  it("keeps no mail of a registration whose app is deleted while it runs (404, as a moment later)", async () => {
    const appId = await newApp(app);
    const emulator = app.emulator;
    const sendMail = emulator.sendMail.bind(emulator);
    // The app deleted (its mail cleared) after the registration was kept, before its mail is.
    emulator.sendMail = async (mail) => {
      const deleted = await call(app, "deleteApp", { method: "DELETE", url: `/_mock/v1/apps/${appId}` });
      expect(deleted.response.statusCode).toBe(204);
      return sendMail(mail);
    };
    try {
      const { response, body } = await register(appId, "late@example.com");
      expect(response.statusCode).toBe(404);
      expect(body).toEqual({ error: `cannot find app using Client App ID '${appId}'` });
    } finally {
      emulator.sendMail = sendMail;
    }
    expect(await app.emulator.store.mail.list({ appId })).toEqual([]);
  });

  it("keeps no mail of a registration whose app is reset while it runs (201: registered before the reset)", async () => {
    const appId = await newApp(app);
    resetBeforeNextMail(appId);
    const { response } = await register(appId, "reset@example.com");
    vi.restoreAllMocks();
    expect(response.statusCode).toBe(201);
    expect(await app.emulator.store.mail.list({ appId })).toEqual([]);
    expect(await app.emulator.store.apps.scope(appId).users.accounts()).toEqual([]);
    // Mail after the reset is kept.
    expect((await register(appId, "reset@example.com")).response.statusCode).toBe(201);
    expect(await app.emulator.store.mail.list({ appId })).toHaveLength(1);
  });

  it("keeps no token or mail of a registration its app's reset cleared before its link was made (201)", async () => {
    const appId = await newApp(app);
    beforeNextToken(appId, async () => {
      const reset = await call(app, "resetApp", { method: "POST", url: `/_mock/v1/apps/${appId}/reset` });
      expect(reset.response.statusCode).toBe(204);
    });
    const { response } = await register(appId, "early@example.com");
    vi.restoreAllMocks();
    expect(response.statusCode).toBe(201);
    expect(await tokens(appId, "early@example.com", "confirm")).toEqual([]);
    expect(await app.emulator.store.mail.list({ appId })).toEqual([]);
  });

  it("refuses an address already registered, whatever its case (409 AccountNameInUse)", async () => {
    const appId = await newApp(app);
    await register(appId, "Bob@Example.com");
    const { response, body } = await register(appId, "bob@example.COM");
    expect(response.statusCode).toBe(409);
    expect(body).toMatchObject({ error: "name already in use", error_code: "AccountNameInUse" });
    expect(body.link).toContain("/_mock/");
  });

  it.each([
    ["too short", "12345"],
    ["too long", "x".repeat(129)],
  ])("refuses a password %s", async (_label, password) => {
    const appId = await newApp(app);
    const { response, body } = await register(appId, "pw@example.com", password);
    expect(response.statusCode).toBe(400);
    expect(body.error).toBe("password must be between 6 and 128 characters");
    expect(await (await app.emulator.apps.get(appId))?.users.accountByEmail("pw@example.com")).toBeUndefined();
  });

  it("accepts 6 and 128 characters", async () => {
    const appId = await newApp(app);
    expect((await register(appId, "six@example.com", "123456")).response.statusCode).toBe(201);
    expect((await register(appId, "max@example.com", "y".repeat(128))).response.statusCode).toBe(201);
  });

  it("refuses a malformed address and a missing field", async () => {
    const appId = await newApp(app);
    const { response } = await register(appId, "not-an-address");
    expect(response.statusCode).toBe(400);
    const { response: missing, body } = await call(app, "registerUser", {
      method: "POST",
      url: userpass(appId, "register"),
      payload: { email: "a@b.co" },
    });
    expect(missing.statusCode).toBe(400);
    expect(body).toEqual({ error: "'password' is a required string", link: expect.any(String) });
  });

  it("confirms at once with autoConfirm (no e-mail)", async () => {
    const appId = await newApp(app, { providers: { "local-userpass": { autoConfirm: true } } });
    await register(appId, "auto@example.com");
    expect(await app.emulator.store.mail.list({ appId })).toHaveLength(0);
    expect((await login(appId, "auto@example.com")).response.statusCode).toBe(200);
  });

  it("ignores the Authorization header realm-web sends on these calls", async () => {
    const appId = await newApp(app);
    const { response } = await call(app, "registerUser", {
      method: "POST",
      url: userpass(appId, "register"),
      headers: { authorization: "Bearer not-a-token" },
      payload: { email: "hdr@example.com", password: "secret-1" },
    });
    expect(response.statusCode).toBe(201);
  });

  it("answers the provider error when e-mail/password is off", async () => {
    const appId = await newApp(app, { providers: { "local-userpass": { enabled: false } } });
    const { response, body } = await register(appId, "off@example.com");
    expect(response.statusCode).toBe(400);
    expect(body).toMatchObject({
      error: "authentication via 'local-userpass' is unsupported",
      error_code: "AuthProviderNotFound",
    });
  });

  it("lets exactly one of 100 concurrent registrations of one address succeed", async () => {
    const appId = await newApp(app);
    const results = await Promise.all(Array.from({ length: 100 }, () => register(appId, "race@example.com")));
    const statuses = results.map((r) => r.response.statusCode);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(99);
    const runtime = (await app.emulator.apps.get(appId))!;
    expect((await runtime.users.accounts()).filter((a) => a.email === "race@example.com")).toHaveLength(1);
    expect(await tokens(appId, "race@example.com", "confirm")).toHaveLength(1);
  });
});

describe("confirmUser", () => {
  it("confirms once; the used link then answers an error, as does an unknown one", async () => {
    const appId = await newApp(app);
    await register(appId, "c@example.com");
    const { token, tokenId } = await firstToken(appId, "c@example.com", "confirm");
    const ok = await call(app, "confirmUser", {
      method: "POST",
      url: userpass(appId, "confirm"),
      payload: { token, tokenId },
    });
    expect(ok.response.statusCode).toBe(200);
    expect(ok.response.body).toBe("");
    const again = await call(app, "confirmUser", {
      method: "POST",
      url: userpass(appId, "confirm"),
      payload: { token, tokenId },
    });
    expect(again.response.statusCode).toBe(400);
    expect(again.body).toMatchObject({ error_code: "UserpassTokenInvalid" });
    const unknown = await call(app, "confirmUser", {
      method: "POST",
      url: userpass(appId, "confirm"),
      payload: { token: "x", tokenId: "y" },
    });
    expect(unknown.body).toMatchObject({ error: "invalid token data", error_code: "BadRequest" });
    expect((await tokens(appId, "c@example.com", "confirm"))[0]?.status).toBe("used");
    expect((await login(appId, "c@example.com")).response.statusCode).toBe(200);
  });

  it("refuses a link older than 30 minutes of the app's clock", async () => {
    const appId = await newApp(app);
    await register(appId, "late@example.com");
    const { token, tokenId } = await firstToken(appId, "late@example.com", "confirm");
    await advance(appId, 30 * 60);
    expect((await tokens(appId, "late@example.com", "confirm"))[0]?.status).toBe("expired");
    const { response, body } = await call(app, "confirmUser", {
      method: "POST",
      url: userpass(appId, "confirm"),
      payload: { token, tokenId },
    });
    expect(response.statusCode).toBe(400);
    expect(body.error_code).toBe("UserpassTokenInvalid");
  });

  it("answers a confirmation whose registration is deleted meanwhile as an unknown link's, not already confirmed", async () => {
    const appId = await newApp(app);
    await register(appId, "gone-pending@example.com");
    const { token, tokenId } = await firstToken(appId, "gone-pending@example.com", "confirm");
    const [pending] = (await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` })).body
      .users;
    beforeNext(usersOf(appId), "confirmAccount", () => removeUser(appId, pending.id));
    const { response, body } = await call(app, "confirmUser", {
      method: "POST",
      url: userpass(appId, "confirm"),
      payload: { token, tokenId },
    });
    vi.restoreAllMocks();
    expect([response.statusCode, body]).toEqual([
      400,
      expect.objectContaining({ error: "invalid token data", error_code: "BadRequest" }),
    ]);
  });
  it("answers a link of a registration deleted since, whose address registered again, as an unknown one's", async () => {
    const appId = await newApp(app);
    await register(appId, "again@example.com");
    const old = await firstToken(appId, "again@example.com", "confirm");
    const [pending] = (await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` })).body
      .users;
    await removeUser(appId, pending.id);
    expect((await register(appId, "again@example.com")).response.statusCode).toBe(201);
    const { response, body } = await call(app, "confirmUser", {
      method: "POST",
      url: userpass(appId, "confirm"),
      payload: { token: old.token, tokenId: old.tokenId },
    });
    expect([response.statusCode, body]).toEqual([
      400,
      expect.objectContaining({ error: "invalid token data", error_code: "BadRequest" }),
    ]);
    // The new registration is still pending, and its own link confirms it.
    expect((await login(appId, "again@example.com")).response.statusCode).toBe(401);
    const fresh = (await tokens(appId, "again@example.com", "confirm")).at(-1)!;
    const confirmed = await call(app, "confirmUser", {
      method: "POST",
      url: userpass(appId, "confirm"),
      payload: { token: fresh.token, tokenId: fresh.tokenId },
    });
    expect(confirmed.response.statusCode).toBe(200);
  });
});

describe("resendConfirmationEmail", () => {
  it("sends a new link; unknown and confirmed addresses get the service's errors", async () => {
    const appId = await newApp(app);
    await register(appId, "r@example.com");
    const { response } = await call(app, "resendConfirmationEmail", {
      method: "POST",
      url: userpass(appId, "confirm/send"),
      payload: { email: "R@example.com" },
    });
    expect(response.statusCode).toBe(200);
    expect(await tokens(appId, "r@example.com", "confirm")).toHaveLength(2);
    expect(await app.emulator.store.mail.list({ appId, to: "r@example.com" })).toHaveLength(2);

    const unknown = await call(app, "resendConfirmationEmail", {
      method: "POST",
      url: userpass(appId, "confirm/send"),
      payload: { email: "x@example.com" },
    });
    expect(unknown.response.statusCode).toBe(404);
    expect(unknown.body).toMatchObject({ error: "user not found", error_code: "UserNotFound" });

    const { token, tokenId } = await firstToken(appId, "r@example.com", "confirm");
    await call(app, "confirmUser", { method: "POST", url: userpass(appId, "confirm"), payload: { token, tokenId } });
    const confirmed = await call(app, "resendConfirmationEmail", {
      method: "POST",
      url: userpass(appId, "confirm/send"),
      payload: { email: "r@example.com" },
    });
    expect(confirmed.body).toMatchObject({ error: "already confirmed", error_code: "UserAlreadyConfirmed" });
  });

  it("answers user not found, and keeps no token or mail, when the registration is deleted meanwhile", async () => {
    const appId = await newApp(app);
    await register(appId, "late-resend@example.com");
    const [pending] = (await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` })).body
      .users;
    beforeNextToken(appId, () => removeUser(appId, pending.id));
    const { response, body } = await call(app, "resendConfirmationEmail", {
      method: "POST",
      url: userpass(appId, "confirm/send"),
      payload: { email: "late-resend@example.com" },
    });
    vi.restoreAllMocks();
    expect([response.statusCode, body.error_code]).toEqual([404, "UserNotFound"]);
    expect(await tokens(appId, "late-resend@example.com", "confirm")).toHaveLength(1);
    expect(await app.emulator.store.mail.list({ appId })).toHaveLength(1);
  });

  it("answers user not found when the registration is deleted and its address registers again meanwhile", async () => {
    const appId = await newApp(app);
    await register(appId, "re-resend@example.com");
    const [pending] = (await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` })).body
      .users;
    beforeNextToken(appId, async () => {
      await removeUser(appId, pending.id);
      expect((await register(appId, "re-resend@example.com")).response.statusCode).toBe(201);
    });
    const { response, body } = await call(app, "resendConfirmationEmail", {
      method: "POST",
      url: userpass(appId, "confirm/send"),
      payload: { email: "re-resend@example.com" },
    });
    vi.restoreAllMocks();
    expect([response.statusCode, body.error_code]).toEqual([404, "UserNotFound"]);
    // The first registration's link and the second's: no link of the removed registration's resend.
    expect(await tokens(appId, "re-resend@example.com", "confirm")).toHaveLength(2);
    expect(await app.emulator.store.mail.list({ appId })).toHaveLength(2);
  });
});

describe("confirmation by function", () => {
  const functionMode = {
    providers: { "local-userpass": { runConfirmationFunction: true, confirmationFunctionName: "confirmUser" } },
  };

  it("confirms at once on success, keeps pending, and refuses (freeing the address) on fail", async () => {
    const appId = await newApp(app, functionMode);
    expect((await register(appId, "yes@example.com")).response.statusCode).toBe(201);
    expect((await login(appId, "yes@example.com")).response.statusCode).toBe(200);

    expect((await register(appId, "wait+pending@example.com")).response.statusCode).toBe(201);
    expect((await login(appId, "wait+pending@example.com")).response.statusCode).toBe(401);
    const [pending] = await tokens(appId, "wait+pending@example.com", "confirm");
    expect(pending?.link).toBeNull();

    const fail = await register(appId, "no+reject@example.com");
    expect(fail.response.statusCode).toBe(400);
    expect(fail.body).toMatchObject({
      error: 'failed to confirm user "no+reject@example.com"',
      error_code: "BadRequest",
    });
    expect(await (await app.emulator.apps.get(appId))?.users.accountByEmail("no+reject@example.com")).toBeUndefined();
    expect(await app.emulator.store.mail.list({ appId })).toHaveLength(0);
    // The refused registration's token (the function was given it) confirms nothing, as an unknown
    // token, and a refused confirmation uses nothing up.
    const refused = await firstToken(appId, "no+reject@example.com", "confirm");
    const confirm = await call(app, "confirmUser", {
      method: "POST",
      url: userpass(appId, "confirm"),
      payload: { token: refused.token, tokenId: refused.tokenId },
    });
    expect([confirm.response.statusCode, confirm.body.error]).toEqual([400, "invalid token data"]);
    expect((await firstToken(appId, "no+reject@example.com", "confirm")).status).toBe(refused.status);
  });

  it("retries the function (confirm/call) and reports its outcome", async () => {
    const appId = await newApp(app, functionMode);
    await register(appId, "retry+pending@example.com");
    const retry = await call(app, "retryCustomConfirmation", {
      method: "POST",
      url: userpass(appId, "confirm/call"),
      payload: { email: "retry+pending@example.com" },
    });
    expect(retry.response.statusCode).toBe(200);
    const unknown = await call(app, "retryCustomConfirmation", {
      method: "POST",
      url: userpass(appId, "confirm/call"),
      payload: { email: "who@example.com" },
    });
    expect(unknown.body.error_code).toBe("UserNotFound");
  });

  it("answers a retry whose registration is deleted while the function runs user not found", async () => {
    const appId = await newApp(app, functionMode);
    const seeded = await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email: "retry-gone@example.com", password: "secret-1", confirmed: false },
    });
    beforeNext(usersOf(appId), "confirmAccount", () => removeUser(appId, seeded.body.id));
    const retry = await call(app, "retryCustomConfirmation", {
      method: "POST",
      url: userpass(appId, "confirm/call"),
      payload: { email: "retry-gone@example.com" },
    });
    vi.restoreAllMocks();
    expect([retry.response.statusCode, retry.body]).toEqual([
      404,
      expect.objectContaining({ error: "user not found", error_code: "UserNotFound" }),
    ]);
  });

  it("keeps a refused registration that was confirmed and signed in to meanwhile, with its user", async () => {
    const appId = await newApp(app, functionMode);
    const email = "raced+reject@example.com";
    // The function refused; before its registration is taken back, it is confirmed and its first
    // login makes its user (another request's doing).
    beforeNext(usersOf(appId), "removeAccount", async () => {
      const account = await (await app.emulator.apps.get(appId))!.users.accountByEmail(email);
      const confirm = `/_mock/v1/apps/${appId}/users/${account!.id}/confirm`;
      expect((await call(app, "confirmPendingUser", { method: "POST", url: confirm })).response.statusCode).toBe(200);
      expect((await login(appId, email)).response.statusCode).toBe(200);
    });
    const refused = await register(appId, email);
    vi.restoreAllMocks();
    expect(refused.body.error).toBe(`failed to confirm user "${email}"`);
    const { users } = (await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` })).body;
    expect(users.map((u: { email?: string; status: string }) => [u.email, u.status])).toEqual([[email, "active"]]);
    expect((await login(appId, email)).response.statusCode).toBe(200);
  });

  it("answers the missing-function error when the function does not exist", async () => {
    const appId = await newApp(app, {
      providers: { "local-userpass": { runConfirmationFunction: true, confirmationFunctionName: "missing" } },
    });
    const { response, body } = await register(appId, "m@example.com");
    expect(response.statusCode).toBe(404);
    expect(body).toMatchObject({ error: "function not found: 'missing'", error_code: "FunctionNotFound" });
  });

  it("refuses confirm/call when automatic confirmation is on, or confirmation is by e-mail", async () => {
    const auto = await newApp(app, { providers: { "local-userpass": { autoConfirm: true } } });
    const a = await call(app, "retryCustomConfirmation", {
      method: "POST",
      url: userpass(auto, "confirm/call"),
      payload: { email: "a@example.com" },
    });
    expect(a.body).toEqual({
      error: "cannot run confirmation for a@example.com: automatic confirmation is enabled",
      link: expect.any(String),
    });
    const email = await newApp(app);
    await register(email, "e@example.com");
    const e = await call(app, "retryCustomConfirmation", {
      method: "POST",
      url: userpass(email, "confirm/call"),
      payload: { email: "e@example.com" },
    });
    expect(e.response.statusCode).toBe(400);
  });
});

describe("password reset", () => {
  it("resets by e-mail: one use, 30 minutes, new password works and the old one does not", async () => {
    const appId = await newApp(app, { providers: { "local-userpass": { autoConfirm: true } } });
    await register(appId, "p@example.com", "old-secret");
    const sent = await call(app, "sendResetPasswordEmail", {
      method: "POST",
      url: userpass(appId, "reset/send"),
      payload: { email: "p@example.com" },
    });
    expect(sent.response.statusCode).toBe(200);
    const [reset] = await tokens(appId, "p@example.com", "reset");
    expect(reset?.link).toContain("http://127.0.0.1:5173/reset-password?token=");
    const mail = await app.emulator.store.mail.list({ appId, kind: "reset" });
    expect(mail[0]?.subject).toBe("Reset your Notes password");

    const short = await call(app, "resetPassword", {
      method: "POST",
      url: userpass(appId, "reset"),
      payload: { token: reset!.token, tokenId: reset!.tokenId, password: "123" },
    });
    expect(short.body.error).toBe("password must be between 6 and 128 characters");
    const ok = await call(app, "resetPassword", {
      method: "POST",
      url: userpass(appId, "reset"),
      payload: { token: reset!.token, tokenId: reset!.tokenId, password: "new-secret" },
    });
    expect(ok.response.statusCode).toBe(200);
    const reused = await call(app, "resetPassword", {
      method: "POST",
      url: userpass(appId, "reset"),
      payload: { token: reset!.token, tokenId: reset!.tokenId, password: "other-secret" },
    });
    expect(reused.body.error_code).toBe("UserpassTokenInvalid");
    expect((await login(appId, "p@example.com", "old-secret")).response.statusCode).toBe(401);
    expect((await login(appId, "p@example.com", "new-secret")).response.statusCode).toBe(200);

    await call(app, "sendResetPasswordEmail", {
      method: "POST",
      url: userpass(appId, "reset/send"),
      payload: { email: "p@example.com" },
    });
    const [, second] = await tokens(appId, "p@example.com", "reset");
    await advance(appId, 31 * 60);
    const late = await call(app, "resetPassword", {
      method: "POST",
      url: userpass(appId, "reset"),
      payload: { token: second!.token, tokenId: second!.tokenId, password: "late-secret" },
    });
    expect(late.response.statusCode).toBe(400);
  });

  it("keeps no reset mail of an app reset while it is sent (200: sent before the reset)", async () => {
    const appId = await newApp(app, { providers: { "local-userpass": { autoConfirm: true } } });
    await register(appId, "rr@example.com");
    resetBeforeNextMail(appId);
    const sent = await call(app, "sendResetPasswordEmail", {
      method: "POST",
      url: userpass(appId, "reset/send"),
      payload: { email: "rr@example.com" },
    });
    vi.restoreAllMocks();
    expect(sent.response.statusCode).toBe(200);
    expect(await app.emulator.store.mail.list({ appId })).toEqual([]);
    expect(await tokens(appId, "rr@example.com", "reset")).toEqual([]);
  });

  it("refuses a login whose password was reset while it was checked, and starts no session", async () => {
    const appId = await newApp(app, { providers: { "local-userpass": { autoConfirm: true } } });
    await register(appId, "raced@example.com", "old-secret");
    const userId = (await login(appId, "raced@example.com", "old-secret")).body.user_id as string;
    // (Whichever store runs the tests.)
    const stores = Object.getPrototypeOf(app.emulator.store.apps.scope(appId)) as AppStore;
    const original = stores.startRegistrationSession;
    vi.spyOn(stores, "startRegistrationSession").mockImplementationOnce(async function (this: AppStore, ...args) {
      // The reset lands between the password check and the session's start.
      await this.users.updateAccount(args[0], { passwordHash: await hashPassword("new-secret", 4) });
      return original.apply(this, args);
    });
    const raced = await login(appId, "raced@example.com", "old-secret");
    vi.restoreAllMocks();
    expect([raced.response.statusCode, raced.body.error_code]).toEqual([401, "InvalidPassword"]);
    expect(await app.emulator.store.apps.scope(appId).sessions.forUser(userId)).toHaveLength(1);
    expect((await login(appId, "raced@example.com", "new-secret")).response.statusCode).toBe(200);
  });

  it("answers a reset whose user is deleted while it runs as an unknown link's, and keeps no password", async () => {
    const appId = await newApp(app, { providers: { "local-userpass": { autoConfirm: true } } });
    await register(appId, "gone@example.com", "old-secret");
    const userId = (await login(appId, "gone@example.com", "old-secret")).body.user_id as string;
    await call(app, "sendResetPasswordEmail", {
      method: "POST",
      url: userpass(appId, "reset/send"),
      payload: { email: "gone@example.com" },
    });
    const reset = await firstToken(appId, "gone@example.com", "reset");
    deleteBeforeAccountUpdate(appId, userId);
    const raced = await call(app, "resetPassword", {
      method: "POST",
      url: userpass(appId, "reset"),
      payload: { token: reset.token, tokenId: reset.tokenId, password: "new-secret" },
    });
    vi.restoreAllMocks();
    expect([raced.response.statusCode, raced.body]).toEqual([
      400,
      expect.objectContaining({ error: "invalid token data", error_code: "BadRequest" }),
    ]);
    expect(await app.emulator.store.apps.scope(appId).users.accountByEmail("gone@example.com")).toBeUndefined();
  });
  it("answers a link of a user deleted since, whose address registered again, as an unknown one's", async () => {
    const appId = await newApp(app, { providers: { "local-userpass": { autoConfirm: true } } });
    await register(appId, "twice@example.com", "old-secret");
    const userId = (await login(appId, "twice@example.com", "old-secret")).body.user_id as string;
    await call(app, "sendResetPasswordEmail", {
      method: "POST",
      url: userpass(appId, "reset/send"),
      payload: { email: "twice@example.com" },
    });
    const old = await firstToken(appId, "twice@example.com", "reset");
    await removeUser(appId, userId);
    await register(appId, "twice@example.com", "own-secret");
    const { response, body } = await call(app, "resetPassword", {
      method: "POST",
      url: userpass(appId, "reset"),
      payload: { token: old.token, tokenId: old.tokenId, password: "taken-over" },
    });
    expect([response.statusCode, body]).toEqual([
      400,
      expect.objectContaining({ error: "invalid token data", error_code: "BadRequest" }),
    ]);
    expect((await login(appId, "twice@example.com", "taken-over")).response.statusCode).toBe(401);
    expect((await login(appId, "twice@example.com", "own-secret")).response.statusCode).toBe(200);
  });

  it("ends every session of the user: old refresh and access tokens are refused, the new login works", async () => {
    const appId = await newApp(app, { providers: { "local-userpass": { autoConfirm: true } } });
    await register(appId, "r@example.com", "old-secret");
    const before = (await login(appId, "r@example.com", "old-secret")).body;
    const other = (await login(appId, "r@example.com", "old-secret")).body;
    await call(app, "sendResetPasswordEmail", {
      method: "POST",
      url: userpass(appId, "reset/send"),
      payload: { email: "r@example.com" },
    });
    const reset = await firstToken(appId, "r@example.com", "reset");
    const ok = await call(app, "resetPassword", {
      method: "POST",
      url: userpass(appId, "reset"),
      payload: { token: reset.token, tokenId: reset.tokenId, password: "new-secret" },
    });
    expect(ok.response.statusCode).toBe(200);
    for (const session of [before, other]) {
      const refreshed = await refresh(session.refresh_token);
      expect(refreshed.response.statusCode).toBe(401);
      expect(refreshed.body).toMatchObject({
        error: "invalid session: failed to find refresh token",
        error_code: "InvalidSession",
      });
      expect((await getProfile(app, session.access_token)).response.statusCode).toBe(401);
    }
    const after = await login(appId, "r@example.com", "new-secret");
    expect(after.response.statusCode).toBe(200);
    expect((await refresh(after.body.refresh_token)).response.statusCode).toBe(201);
    expect((await getProfile(app, after.body.access_token)).response.statusCode).toBe(200);
  });

  it("ends every session of the user when the reset function succeeds, and none when it fails or waits", async () => {
    const appId = await newApp(app, {
      providers: {
        "local-userpass": { autoConfirm: true, runResetFunction: true, resetFunctionName: "resetPassword" },
      },
    });
    await register(appId, "g@example.com", "first-secret");
    const session = (await login(appId, "g@example.com", "first-secret")).body;
    for (const answer of ["red", "later"]) {
      await call(app, "callResetPasswordFunction", {
        method: "POST",
        url: userpass(appId, "reset/call"),
        payload: { email: "g@example.com", password: "other-secret", arguments: [answer] },
      });
      expect((await refresh(session.refresh_token)).response.statusCode, answer).toBe(201);
    }
    const ok = await call(app, "callResetPasswordFunction", {
      method: "POST",
      url: userpass(appId, "reset/call"),
      payload: { email: "g@example.com", password: "second-secret", arguments: ["blue"] },
    });
    expect(ok.response.statusCode).toBe(200);
    const refused = await refresh(session.refresh_token);
    expect(refused.response.statusCode).toBe(401);
    expect(refused.body.error).toBe("invalid session: failed to find refresh token");
    expect((await getProfile(app, session.access_token)).response.statusCode).toBe(401);
    expect((await login(appId, "g@example.com", "second-secret")).response.statusCode).toBe(200);
  });

  it("answers user not found for unknown and pending addresses", async () => {
    const appId = await newApp(app);
    await register(appId, "pending@example.com");
    for (const email of ["nobody@example.com", "pending@example.com"]) {
      const { response, body } = await call(app, "sendResetPasswordEmail", {
        method: "POST",
        url: userpass(appId, "reset/send"),
        payload: { email },
      });
      expect(response.statusCode).toBe(404);
      expect(body.error_code).toBe("UserNotFound");
    }
  });

  it("answers an address or a link longer than any registration's or link's without looking it up", async () => {
    const appId = await newApp(app);
    const users = usersOf(appId);
    const tokenStore = Object.getPrototypeOf(app.emulator.store.apps.scope(appId).authTokens) as AppStore["authTokens"];
    const lookups = [vi.spyOn(users, "accountByEmail"), vi.spyOn(tokenStore, "check"), vi.spyOn(tokenStore, "consume")];
    const long = `${"a".repeat(1_000_000)}@example.com`;
    try {
      for (const [operationId, path] of [
        ["sendResetPasswordEmail", "reset/send"],
        ["resendConfirmationEmail", "confirm/send"],
      ] as const) {
        const { response, body } = await call(app, operationId, {
          method: "POST",
          url: userpass(appId, path),
          payload: { email: long },
        });
        expect([response.statusCode, body.error_code], operationId).toEqual([404, "UserNotFound"]);
      }
      const pair = { token: "t".repeat(1_000_000), tokenId: "i".repeat(1_000_000) };
      const confirmed = await call(app, "confirmUser", {
        method: "POST",
        url: userpass(appId, "confirm"),
        payload: pair,
      });
      const reset = await call(app, "resetPassword", {
        method: "POST",
        url: userpass(appId, "reset"),
        payload: { ...pair, password: "new-secret" },
      });
      for (const { response, body } of [confirmed, reset])
        expect([response.statusCode, body.error]).toEqual([400, "invalid token data"]);
      for (const lookup of lookups) expect(lookup).not.toHaveBeenCalled();
    } finally {
      vi.restoreAllMocks();
    }
  });

  it("resets through the reset function: success now, pending then reset, fail refused", async () => {
    const appId = await newApp(app, {
      providers: {
        "local-userpass": { autoConfirm: true, runResetFunction: true, resetFunctionName: "resetPassword" },
      },
    });
    await register(appId, "f@example.com", "first-secret");
    const viaEmail = await call(app, "sendResetPasswordEmail", {
      method: "POST",
      url: userpass(appId, "reset/send"),
      payload: { email: "f@example.com" },
    });
    expect(viaEmail.body).toMatchObject({ error: "please use reset password via function" });

    const ok = await call(app, "callResetPasswordFunction", {
      method: "POST",
      url: userpass(appId, "reset/call"),
      payload: { email: "f@example.com", password: "second-secret", arguments: ["blue"] },
    });
    expect(ok.response.statusCode).toBe(200);
    expect((await login(appId, "f@example.com", "second-secret")).response.statusCode).toBe(200);

    const fail = await call(app, "callResetPasswordFunction", {
      method: "POST",
      url: userpass(appId, "reset/call"),
      payload: { email: "f@example.com", password: "third-secret", arguments: ["red"] },
    });
    expect(fail.response.statusCode).toBe(400);
    expect(fail.body).toEqual({ error: 'failed to reset password for user "f@example.com"', link: expect.any(String) });

    const pending = await call(app, "callResetPasswordFunction", {
      method: "POST",
      url: userpass(appId, "reset/call"),
      payload: { email: "f@example.com", password: "fourth-secret", arguments: ["later"] },
    });
    expect(pending.response.statusCode).toBe(200);
    expect((await login(appId, "f@example.com", "fourth-secret")).response.statusCode).toBe(401);
    const valid = (await tokens(appId, "f@example.com", "reset")).filter((t) => t.status === "valid");
    expect(valid).toHaveLength(1);
    await call(app, "resetPassword", {
      method: "POST",
      url: userpass(appId, "reset"),
      payload: { token: valid[0]!.token, tokenId: valid[0]!.tokenId, password: "fourth-secret" },
    });
    expect((await login(appId, "f@example.com", "fourth-secret")).response.statusCode).toBe(200);
  });

  it("answers a reset function's success whose user was deleted meanwhile user not found, and keeps no password", async () => {
    const appId = await newApp(app, {
      providers: {
        "local-userpass": { autoConfirm: true, runResetFunction: true, resetFunctionName: "resetPassword" },
      },
    });
    await register(appId, "h@example.com", "first-secret");
    const userId = (await login(appId, "h@example.com", "first-secret")).body.user_id as string;
    deleteBeforeAccountUpdate(appId, userId);
    const raced = await call(app, "callResetPasswordFunction", {
      method: "POST",
      url: userpass(appId, "reset/call"),
      payload: { email: "h@example.com", password: "second-secret", arguments: ["blue"] },
    });
    vi.restoreAllMocks();
    expect([raced.response.statusCode, raced.body]).toEqual([
      404,
      expect.objectContaining({ error: "user not found", error_code: "UserNotFound" }),
    ]);
    expect(await app.emulator.store.apps.scope(appId).users.accountByEmail("h@example.com")).toBeUndefined();
  });
});
