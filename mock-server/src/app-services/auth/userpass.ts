/**
 * E-mail/password rules and side effects shared by the local-userpass operations: the service's
 * own password and address checks, token issue, and the e-mails the service would send.
 */
import { userpassSettings } from "../../config/app-config.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import type { AppRuntime } from "../../runtime/app-runtime.ts";
import type { Emulator } from "../../runtime/emulator.ts";
import { newObjectIdHex, randomHex } from "../../state/ids.ts";
import type { PasswordCheck } from "../../state/password-work.ts";
import { hashPassword, verifyPassword } from "../../state/passwords.ts";
import {
  AppGoneError,
  type AuthTokenKind,
  authTokenLifetimeMs,
  type StoredAuthToken,
  type StoredUserpassAccount,
} from "../../store/store.ts";

export const passwordMinLength = 6;
export const passwordMaxLength = 128;

export function checkPassword(password: string): void {
  if (password.length < passwordMinLength || password.length > passwordMaxLength) throw errors.passwordLength();
}

// One @ with something on both sides and a dot in the domain: what the service's check accepts.
const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const emailMaxLength = 254;
export function checkEmail(email: string): void {
  if (!emailPattern.test(email) || email.length > emailMaxLength) throw errors.emailInvalid();
}

/**
 * Refuses, as a wrong password, a login no registration can match — an address or a password
 * longer than registration takes — before any work on it: a body-sized password would otherwise
 * be hashed (the address's length says nothing of whether it is registered).
 */
export function refuseUnregistrable(username: string, password: string, refusal = errors.invalidPassword): void {
  if (username.length > emailMaxLength || password.length > passwordMaxLength) throw refusal();
}

export function requireProvider(app: AppRuntime): void {
  if (!(app.config.providers?.["local-userpass"]?.enabled ?? false)) throw errors.providerNotEnabled("local-userpass");
}

/**
 * A new password's hash, made in `lane`'s turn of the instance's password work (the client
 * address's key, or `trustedLane` for the control API): refused with `PasswordWorkBusyError` (429)
 * when it could not start soon; `held` for one that proved a right to it (a reset's token), which
 * goes before the rest (state/password-work.ts).
 */
export function hash(emulator: Emulator, lane: string | null, check: PasswordCheck, password: string): Promise<string> {
  return emulator.passwords.run(lane, check, () => hashPassword(password, emulator.options.passwordHashCost));
}

/** Whether `password` is the one of `stored`, checked in `lane`'s turn as `hash` is. */
export function verify(
  emulator: Emulator,
  lane: string,
  check: PasswordCheck,
  password: string,
  stored: string,
): Promise<boolean> {
  return emulator.passwords.run(lane, check, () => verifyPassword(password, stored));
}

/**
 * A new single-use `{token, tokenId}` pair for a registration, valid for 30 minutes of the app's
 * clock; undefined when the registration went meanwhile (deleted, or the app reset): none kept.
 */
export async function issueToken(
  app: AppRuntime,
  kind: AuthTokenKind,
  account: Pick<StoredUserpassAccount, "id" | "email">,
  linkBase: string | null,
): Promise<StoredAuthToken | undefined> {
  const now = app.clock.now();
  const token = randomHex(64);
  const tokenId = newObjectIdHex();
  const link = linkBase === null ? null : withTokenQuery(linkBase, token, tokenId);
  const stored: StoredAuthToken = {
    tokenId,
    token,
    kind,
    email: account.email,
    accountId: account.id,
    link,
    createdAt: now,
    expiresAt: now + authTokenLifetimeMs,
    used: false,
  };
  return (await app.authTokens.add(stored)) ? stored : undefined;
}

function withTokenQuery(base: string, token: string, tokenId: string): string {
  const separator = base.includes("?") ? "&" : "?";
  return `${base}${separator}token=${encodeURIComponent(token)}&tokenId=${encodeURIComponent(tokenId)}`;
}

const escapeHtml = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

function mailFrom(app: AppRuntime): string {
  return app.config.mailFrom ?? `no-reply@${app.appId}.mongodbstitch.com`;
}

/** `issueToken` for a registration found just before: gone meanwhile, it is `user not found`. */
export async function issueTokenOrNotFound(...args: Parameters<typeof issueToken>): Promise<StoredAuthToken> {
  const token = await issueToken(...args);
  if (!token) throw errors.userNotFound();
  return token;
}

/**
 * The registration a token was issued for, while it is there: a registration deleted since is
 * gone for its tokens, also when its address has registered again (a token without `accountId`,
 * from before it was kept, is for its address's registration).
 */
export function accountOfToken(app: AppRuntime, token: StoredAuthToken): Promise<StoredUserpassAccount | undefined> {
  return token.accountId === undefined ? app.users.accountByEmail(token.email) : app.users.account(token.accountId);
}

/** Records the e-mail the service would send with a confirmation or reset link. */
export async function sendTokenMail(emulator: Emulator, app: AppRuntime, token: StoredAuthToken): Promise<void> {
  const settings = userpassSettings(app.config);
  const link = token.link ?? "";
  const confirm = token.kind === "confirm";
  const subject = confirm ? settings.confirmEmailSubject : settings.resetPasswordSubject;
  const action = confirm ? "confirm your e-mail address" : "reset your password";
  const text = `Hello,\n\nFollow this link to ${action}:\n${link}\n\nThe link is valid for 30 minutes.\n`;
  const html = `<p>Hello,</p><p>Follow this link to ${action}:</p><p><a href="${escapeHtml(link)}">${escapeHtml(
    confirm ? "Confirm e-mail address" : "Reset password",
  )}</a></p><p>The link is valid for 30 minutes.</p>`;
  const sent = await emulator.sendMail({
    source: "app-services",
    appId: app.appId,
    kind: token.kind,
    to: token.email,
    from: mailFrom(app),
    subject,
    html,
    text,
    createdAtMs: app.clock.now(),
    forToken: token.tokenId,
  });
  // Not kept: the app deleted while the request ran, answered as a request a moment later is (404);
  // or reset, which cleared the token (and would have cleared the mail): done before the reset.
  if (!sent && !(await emulator.store.apps.get(app.appId))) throw new AppGoneError(app.appId);
}

/** The registration of an address, which must exist (else `user not found`). */
export async function accountOrNotFound(app: AppRuntime, email: string): Promise<StoredUserpassAccount> {
  const account = await registrationOf(app, email);
  if (!account) throw errors.userNotFound();
  return account;
}

/** The registration of an address; none, unlooked-up, for one longer than registration takes. */
export async function registrationOf(app: AppRuntime, email: string): Promise<StoredUserpassAccount | undefined> {
  return email.length > emailMaxLength ? undefined : app.users.accountByEmail(email);
}

/** The longest token or token id taken from a link (this server's are 128 and 24 characters). */
const maxLinkPartLength = 1024;

/** Refuses a link's pair longer than any link's, as an unknown one, before it is looked up. */
export function refuseUnknownLink(token: string, tokenId: string): void {
  if (token.length > maxLinkPartLength || tokenId.length > maxLinkPartLength) throw errors.invalidTokenData();
}

/**
 * After a password reset every session of the account's user ends — refresh and access tokens,
 * change streams — whoever held them (the hosted service's behaviour is not recorded: the safe
 * side, docs/decisions/0011-revocation.md). A registration not yet used to log in has none.
 */
export async function endSessionsAfterReset(app: AppRuntime, account: StoredUserpassAccount): Promise<void> {
  if (account.userId !== null) await app.sessions.removeForUser(account.userId);
}

export function tokenError(reason: "unknown" | "expired" | "used") {
  return reason === "unknown" ? errors.invalidTokenData() : errors.userpassTokenInvalid();
}
