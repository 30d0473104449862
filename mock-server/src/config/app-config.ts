/**
 * An app's settings (the control document's AppConfig) and the defaults the hosted service uses
 * where a setting is absent. Overrides deep-merge over a template; arrays replace.
 */
import type { ControlSchemas } from "../openapi/types.ts";

export type AppConfig = ControlSchemas["AppConfig"];
export type LocalUserpassConfig = ControlSchemas["LocalUserpassConfig"];
export type CustomTokenConfig = ControlSchemas["CustomTokenConfig"];
export type CollectionRule = ControlSchemas["CollectionRule"];

/** The service name of the app's linked cluster (functions' `context.services.get`, clients' `mongoClient`). */
export const mongoServiceOf = (config: AppConfig): string => config.dataSource?.name ?? "mongodb-atlas";

export type OAuth2ProviderConfig = ControlSchemas["OAuth2ProviderConfig"];

/** The providers that sign in through Google, Apple or Facebook (OAuth 2.0 / OpenID Connect). */
export const oauth2ProviderNames = ["oauth2-google", "oauth2-apple", "oauth2-facebook"] as const;
export type OAuth2ProviderName = (typeof oauth2ProviderNames)[number];
export const isOAuth2Provider = (name: string): name is OAuth2ProviderName =>
  (oauth2ProviderNames as readonly string[]).includes(name);

export const providerNames = [
  "anon-user",
  "local-userpass",
  "api-key",
  "custom-token",
  "custom-function",
  ...oauth2ProviderNames,
] as const;
export type ProviderName = (typeof providerNames)[number];

export const tokenDefaults = {
  accessTokenTtlSeconds: 30 * 60,
  refreshTokenTtlSeconds: 60 * 24 * 60 * 60,
  // "effectively do not expire": the hosted service issues anonymous refresh tokens for 50 years;
  // they end with their user, 90 days after its creation (store.ts `anonymousUserLifetimeMs`)
  anonRefreshTokenTtlSeconds: 1_576_800_000,
} as const;

export const defaultMaxConcurrentRequests = 10_000;
/**
 * Change streams open at once per user and per app, on each instance (they do not count toward
 * the concurrency cap); past either one a new stream is refused with 429. See decision 0011.
 */
export const defaultMaxStreamsPerUser = 100;
export const defaultMaxStreamsPerApp = 1_000;
/**
 * Streams of one anonymous user, and from one client address whatever its users: ten anonymous
 * users hold at most a tenth of the app's, one address a fifth (docs/decisions/0018-fair-shares.md).
 */
export const defaultMaxStreamsPerAnonymousUser = 10;
export const defaultMaxStreamsPerAddress = 200;
/**
 * Calls of the app's functions running at once on an instance, per user, anonymous user and client
 * address: what they share is the instance's function process (its memory, its turn, its
 * `context.http` budget), so that no user or address can take it (docs/decisions/0018-fair-shares.md).
 */
export const defaultMaxFunctionCallsPerUser = 20;
export const defaultMaxFunctionCallsPerAnonymousUser = 5;
export const defaultMaxFunctionCallsPerAddress = 100;
/**
 * A client's MongoDB actions one user, and one client address whatever its users, has running at
 * once on an instance; more wait their turn, up to `maxMongoActionsWaiting` in each line
 * (runtime/action-turns.ts).
 */
export const defaultMaxMongoActionsPerUser = 8;
export const defaultMaxMongoActionsPerAddress = 32;
export const maxMongoActionsWaiting = 256;
/**
 * Bytes of events a change stream may hold unsent for a client that does not keep up: an event due
 * while more wait is not written; the stream ends with an error event instead (decision 0011).
 */
export const defaultMaxStreamBufferBytes = 8 * 1024 * 1024;
/**
 * Documents one MongoDB action may read from the store (those its filter cannot rule out there):
 * bounds what one read holds in memory and costs the database (docs/decisions/0018-fair-shares.md).
 */
export const defaultDocsExaminedLimit = 100_000;

export type AppLimits = Required<NonNullable<AppConfig["limits"]>>;

/**
 * What one app may hold when its config sets no `limits` (harness and production alike): far above
 * what a test, the e2e suite or a small production app reaches, low enough that an anonymous client
 * looping on login or insertOne cannot fill the disk. docs/decisions/0012-quotas.md.
 */
export const limitDefaults = {
  users: 100_000,
  sessionsPerUser: 100,
  documents: 1_000_000,
  documentBytes: 1024 * 1024 * 1024,
  // Empty ones too (a client could make them without end, one insert and delete at a time).
  collections: 10_000,
  // What one user may take of it, and anonymous users (alone and together): no user, and no client
  // address within days, can fill or starve the app. docs/decisions/0018-fair-shares.md.
  documentsPerUser: 10_000,
  documentBytesPerUser: 32 * 1024 * 1024,
  writesPerSecondPerUser: 200,
  documentsPerAnonymousUser: 1_000,
  documentBytesPerAnonymousUser: 1024 * 1024,
  writesPerSecondPerAnonymousUser: 100,
  anonymousUsersPerAddress: 100,
  // Pending registrations count toward `users`, and each sends a mail: a client address may ask
  // for so many a day, and the app mails one address so often — by default in production only
  // (app-services/counted-limits.ts). docs/decisions/0018-fair-shares.md.
  registrationsPerAddress: 100,
  mailsPerRecipientPerHour: 5,
} satisfies Omit<AppLimits, "anonymousDocuments" | "anonymousDocumentBytes">;

/** An app's limits, defaults filled in (anonymous users' share: half the app's, unless set). */
export function appLimits(config: AppConfig): AppLimits {
  const limits = { ...limitDefaults, ...config.limits };
  return {
    ...limits,
    anonymousDocuments: limits.anonymousDocuments ?? Math.floor(limits.documents / 2),
    anonymousDocumentBytes: limits.anonymousDocumentBytes ?? Math.floor(limits.documentBytes / 2),
  };
}

/** What one writer may hold and write, by whether it is anonymous. */
export interface WriterLimits {
  documents: number;
  documentBytes: number;
  writesPerSecond: number;
}

export function writerLimits(limits: AppLimits, anonymous: boolean): WriterLimits {
  return anonymous
    ? {
        documents: limits.documentsPerAnonymousUser,
        documentBytes: limits.documentBytesPerAnonymousUser,
        writesPerSecond: limits.writesPerSecondPerAnonymousUser,
      }
    : {
        documents: limits.documentsPerUser,
        documentBytes: limits.documentBytesPerUser,
        writesPerSecond: limits.writesPerSecondPerUser,
      };
}
// Shorter than the hosted 300 s, so a stuck function fails a test quickly; apps can raise it.
export const defaultFunctionTimeoutMs = 30_000;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Deep merge: objects merge key by key, everything else (arrays included) replaces. */
export function deepMerge<T>(base: T, override: unknown): T {
  if (!isPlainObject(base) || !isPlainObject(override)) return (override === undefined ? base : override) as T;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) {
    if (value === undefined) continue;
    out[key] = isPlainObject(value) && isPlainObject(out[key]) ? deepMerge(out[key], value) : structuredClone(value);
  }
  return out as T;
}

export function providerEnabled(config: AppConfig, name: string): boolean {
  if (!(providerNames as readonly string[]).includes(name)) return false;
  const provider = config.providers?.[name as ProviderName];
  return provider?.enabled ?? false;
}

export interface UserpassSettings {
  autoConfirm: boolean;
  emailConfirmationUrl: string;
  confirmEmailSubject: string;
  runConfirmationFunction: boolean;
  confirmationFunctionName: string | undefined;
  resetPasswordUrl: string;
  resetPasswordSubject: string;
  runResetFunction: boolean;
  resetFunctionName: string | undefined;
}

export function userpassSettings(config: AppConfig): UserpassSettings {
  const c: LocalUserpassConfig = config.providers?.["local-userpass"] ?? {};
  return {
    autoConfirm: c.autoConfirm ?? false,
    emailConfirmationUrl: c.emailConfirmationUrl ?? "http://127.0.0.1:5173/confirm",
    confirmEmailSubject: c.confirmEmailSubject || "Confirm your e-mail address",
    runConfirmationFunction: c.runConfirmationFunction ?? false,
    confirmationFunctionName: c.confirmationFunctionName,
    resetPasswordUrl: c.resetPasswordUrl ?? "http://127.0.0.1:5173/reset-password",
    resetPasswordSubject: c.resetPasswordSubject || "Reset your password",
    runResetFunction: c.runResetFunction ?? false,
    resetFunctionName: c.resetFunctionName,
  };
}

export function tokenLifetimes(config: AppConfig) {
  return { ...tokenDefaults, ...config.tokens };
}
