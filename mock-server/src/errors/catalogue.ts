/**
 * The one catalogue of every error the emulator answers, per service, in the service's own wire
 * shape. Handlers throw these; `error-handler.ts` writes them. Where the wire reference marks a
 * detail UNCONFIRMED, the choice is made here (and only here) and listed in
 * docs/decisions/0002-unconfirmed-wire-details.md; the OpenAPI documents carry `x-unconfirmed`.
 */

import type { ControlSchemas } from "../openapi/types.ts";
import type { Refusal } from "../runtime/large-requests.ts";
import type { Quota } from "../store/quotas.ts";

export type Area = "app-services" | "emailjs" | "control" | "identity-provider";

/** An App Services error: `{error, error_code?, link}` as `application/json`. */
export class AppServicesError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    /** Omitted where the real service omits it. */
    readonly errorCode?: string,
    /** The unknown-app reply carries no link (there is no app to link to). */
    readonly withLink = true,
  ) {
    super(message);
  }
}

/** An EmailJS error: a plain-text body. */
export class EmailJsError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** The fake identity provider's refusals, in OAuth 2.0's shape: `{error, error_description}`. */
export class IdentityProviderError extends Error {
  constructor(
    readonly statusCode: number,
    /** The OAuth 2.0 error code (`invalid_request`, `server_error`, …). */
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export const identityProviderErrors = {
  invalidRequest: (message: string) => new IdentityProviderError(400, "invalid_request", message),
  noTenant: (name: string) => new IdentityProviderError(404, "invalid_request", `no app with id '${name}'`),
  noProvider: (name: string) =>
    new IdentityProviderError(404, "invalid_request", `'${name}' is not a provider this one stands in for`),
  unavailable: () =>
    new IdentityProviderError(503, "temporarily_unavailable", "the database cannot be reached; try again shortly"),
  internal: () => new IdentityProviderError(500, "server_error", "internal error"),
} as const;

/** The codes the control document names (a code it does not name does not type-check). */
export type ControlErrorCode = ControlSchemas["ControlError"]["code"];

/** A control API error: `{error, code}`. */
export class ControlError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: ControlErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The Host allow-list's refusal, the same words in every service's shape (http/host-check.ts); null:
 * the header is not a host (a name or address and an optional port), and is not repeated.
 */
const hostNotAllowed = (host: string | null) =>
  host === null
    ? "the Host header is not a host name or address with an optional numeric port"
    : `the Host '${host}' is not allowed here: to answer it, start the emulator with --allowed-hosts ${host} ` +
      "(or name it in --public-url; --allowed-hosts '*' switches the check off)";

const as = (status: number, message: string, code?: string) => new AppServicesError(status, message, code);

export const appServicesErrors = {
  // [live message; 404 and no error_code from replies quoted by third parties]
  appNotFound: (appId: string) =>
    new AppServicesError(404, `cannot find app using Client App ID '${appId}'`, undefined, false),
  // [live]
  invalidPassword: () => as(401, "unauthorized", "InvalidPassword"),
  /**
   * A link's wrong password, unknown or unconfirmed address (decision 0002): the login's
   * `unauthorized` makes realm-web 2.0.1 refresh and send the link again without end (each one
   * hashing a password); the service's older text for the same refusal.
   */
  linkInvalidPassword: () => as(401, "invalid username/password", "InvalidPassword"),
  // [live message and 401; AuthError as realm-kotlin's error mapping reads this text] A disabled key answers the same (UNCONFIRMED).
  invalidApiKey: () => as(401, "invalid API key", "AuthError"),
  // [code live; status and message UNCONFIRMED]
  userDisabled: () => as(401, "user disabled", "UserDisabled"),
  // [message live; status and code UNCONFIRMED]
  providerNotEnabled: (provider: string) =>
    as(400, `authentication via '${provider}' is unsupported`, "AuthProviderNotFound"),
  // [live pattern: `'name' is a required string`, without error_code]
  requiredString: (field: string) => as(400, `'${field}' is a required string`),
  badRequest: (message: string) => as(400, message, "BadRequest"),
  // [live message and code; 409 from third-party client code]
  accountNameInUse: () => as(409, "name already in use", "AccountNameInUse"),
  // [live message; status and code UNCONFIRMED]
  passwordLength: () => as(400, "password must be between 6 and 128 characters", "BadRequest"),
  // UNCONFIRMED
  emailInvalid: () => as(400, "email invalid", "BadRequest"),
  // [live]
  confirmationFailed: (email: string) => as(400, `failed to confirm user "${email}"`, "BadRequest"),
  // [live]
  invalidTokenData: () => as(400, "invalid token data", "BadRequest"),
  // UNCONFIRMED: a used or expired token (UserpassTokenInvalid is in realm-core's code list)
  userpassTokenInvalid: () => as(400, "userpass token is expired or invalid", "UserpassTokenInvalid"),
  // [live message and code; status UNCONFIRMED]
  alreadyConfirmed: () => as(400, "already confirmed", "UserAlreadyConfirmed"),
  // [live message and code; status UNCONFIRMED]
  userNotFound: () => as(404, "user not found", "UserNotFound"),
  // [live; no error_code]
  autoConfirmEnabled: (email: string) =>
    as(400, `cannot run confirmation for ${email}: automatic confirmation is enabled`),
  // UNCONFIRMED
  confirmationNotFunction: (email: string) =>
    as(400, `cannot run confirmation for ${email}: a confirmation function is not enabled`, "BadRequest"),
  // UNCONFIRMED: confirm/send when confirmation runs a function
  confirmationByFunction: (email: string) =>
    as(400, `cannot send a confirmation e-mail to ${email}: confirmation runs a function`, "BadRequest"),
  // [live message; code UNCONFIRMED]
  resetViaFunction: () => as(400, "please use reset password via function", "BadRequest"),
  // UNCONFIRMED (the mirror of the recorded text)
  resetViaEmail: () => as(400, "please use reset password via email", "BadRequest"),
  // [live; no error_code]
  resetFailed: (email: string) => as(400, `failed to reset password for user "${email}"`),
  // [live message] no Authorization header on a token route; MissingAuthReq is in realm-core's code list
  mustAuthenticate: () => as(401, "must authenticate first", "MissingAuthReq"),
  // [live; no error_code] a header that is not `Bearer <JWT>`
  expectedBearer: () => as(401, "expected Authorization header with JWT (Bearer schema)"),
  // [infer] realm-web and realm-core refresh and retry on this
  accessTokenExpired: () => as(401, "invalid session: access token expired", "InvalidSession"),
  // [live error; error_code UNCONFIRMED] a forged or foreign access token
  accessTokenInvalid: () => as(401, "unauthorized", "InvalidSession"),
  // UNCONFIRMED: the token is fine but its user is gone or disabled
  sessionUserGone: () => as(401, "invalid session: user not found", "InvalidSession"),
  // [live] logged out, revoked, user deleted; and (UNCONFIRMED, as realm-web's logOut() expects) past its lifetime
  refreshTokenNotFound: () => as(401, "invalid session: failed to find refresh token", "InvalidSession"),
  // [live]
  refreshTokenSignature: () => as(401, "signature is invalid", "InvalidSession"),
  // UNCONFIRMED: the other kind of token on a route
  wrongTokenType: (expected: "access" | "refresh") =>
    as(401, `invalid session: expected ${expected} token`, "InvalidSession"),
  // a custom-token JWT that fails verification [prefix and AuthError as realm-kotlin's error mapping reads them; reasons ours]
  customTokenInvalid: (reason: string) => as(401, `invalid custom auth token: ${reason}`, "AuthError"),
  // UNCONFIRMED: the custom-function authentication function threw or returned no id
  customFunctionFailed: (message: string) => as(401, `authentication function failed: ${message}`, "InvalidPassword"),
  // [messages live (realm-kotlin tests); 401 inferred] The service's code was InvalidSession
  // (realm-kotlin's error mapping); AuthError kept so realm-web does not refresh and retry forever.
  linkIdentityTaken: () => as(401, "a user already exists with the specified provider", "AuthError"),
  // [messages live; InternalServerError as realm-kotlin's error mapping reads them; 401 inferred]
  linkSecondUserpass: () =>
    as(401, "linking a local-userpass identity is not allowed when one is already linked", "InternalServerError"),
  linkAnonymous: () => as(401, "linking an anonymous identity is not allowed", "InternalServerError"),
  // OAuth 2.0 providers (Google, Apple, Facebook); docs/decisions/0002 lists the choices.
  // UNCONFIRMED: GET …/login for a provider that has no browser flow
  oauth2NotRedirected: (provider: string) => as(400, `'${provider}' does not sign in through a redirect`, "BadRequest"),
  // UNCONFIRMED: a `redirect` not in the provider's redirect_uris (never redirected to)
  oauth2RedirectNotAllowed: (redirect: string, provider: string) =>
    as(400, `redirect URI '${redirect}' is not one of the redirect_uris of '${provider}'`, "BadRequest"),
  // UNCONFIRMED: the callback's state is missing, forged or too old
  oauth2StateInvalid: (reason: string) => as(400, `invalid OAuth 2.0 state: ${reason}`, "BadRequest"),
  // [live message and 401 (realm-js #3249); AuthError from the legacy code 47] a code the provider refused
  oauth2ExchangeFailed: () => as(401, "error exchanging access code with OAuth2 provider", "AuthError"),
  // [live message (realm-js #4995); 401 and code as above] the provider refused a token or could not be asked
  oauth2FetchInfoFailed: () => as(401, "error fetching info from OAuth2 provider", "AuthError"),
  // UNCONFIRMED: an ID token (or Facebook access token) that fails a check
  oauth2TokenInvalid: (reason: string) => as(401, `invalid OAuth 2.0 token: ${reason}`, "AuthError"),
  // UNCONFIRMED: domain_restrictions
  oauth2DomainNotAllowed: (domain: string) =>
    as(401, `accounts of the e-mail domain '${domain}' may not sign in to this app`, "AuthError"),
  // UNCONFIRMED (the custom-token provider's wording)
  oauth2MetadataMissing: (field: string) => as(401, `the required metadata field '${field}' is missing`, "AuthError"),
  // UNCONFIRMED: the provider sent the browser back with an error (`access_denied`: the user cancelled)
  oauth2ProviderError: (error: string) => as(401, `error from OAuth2 provider: ${error}`, "AuthError"),
  // UNCONFIRMED: the callback of a link whose session ended meanwhile
  oauth2LinkSessionGone: () => as(401, "invalid session: the user to link signed out or was removed", "InvalidSession"),
  // [live]
  functionNotFound: (name: string) => as(404, `function not found: '${name}'`, "FunctionNotFound"),
  // [live message; status and code inferred]
  serviceNotFound: (name: string) => as(404, `service not found: '${name}'`, "ServiceNotFound"),
  // [live code; status UNCONFIRMED]
  functionExecution: (message: string) => as(400, message, "FunctionExecutionError"),
  // [live message and code (realm-kotlin); status UNCONFIRMED] a client's call the function's can_evaluate refuses
  ruleNotMatched: (name: string) => as(400, `rule not matched for function "${name}"`, "FunctionExecutionError"),
  // UNCONFIRMED: a can_evaluate this server cannot evaluate (functions/can-evaluate.ts)
  canEvaluateUnsupported: (name: string, reason: string) =>
    as(400, `cannot evaluate the can_evaluate of function "${name}": ${reason}`, "FunctionExecutionError"),
  // code in realm-core's list; status and message UNCONFIRMED
  executionTimeLimit: () => as(400, "execution time limit exceeded", "ExecutionTimeLimitExceeded"),
  // code in realm-core's list; the service allows 350 MB per function run
  executionMemoryLimit: () => as(400, "execution memory limit exceeded", "ExecutionMemoryLimitExceeded"),
  // [live messages; status and code UNCONFIRMED]
  mongo: (message: string) => as(400, message, "MongoDBError"),
  // [MongoDB's maxTimeMS text; status and code as every MongoDB error] a query past its deadline
  // (docs/decisions/0006-query-limits.md)
  queryTimeLimit: () => as(400, "operation exceeded time limit", "MongoDBError"),
  // [modelled on MongoDB's "$push used too much memory and cannot spill to disk"] a query past its
  // memory ceiling (docs/decisions/0006-query-limits.md)
  queryMemoryLimit: (operator: string, limitBytes: number) =>
    as(
      400,
      `${operator} used too much memory and cannot spill to disk. Memory limit: ${limitBytes} bytes`,
      "MongoDBError",
    ),
  // [MongoDB's BSONObjectTooLarge text, which names its largest object, BSONObjMaxInternalSize]
  // a reply whose BSON form would pass it (docs/decisions/0002-unconfirmed-wire-details.md)
  replyTooLarge: (bytes: number) => {
    const size = BigInt(Math.round(bytes));
    return as(
      400,
      `BSONObj size: ${size} (0x${size.toString(16).toUpperCase()}) is invalid. Size must be between 0 and 16793600(16MB)`,
      "MongoDBError",
    );
  },
  // [live message and code; status UNCONFIRMED]
  apiKeyNotFound: () => as(404, "API key not found", "APIKeyNotFound"),
  // [live]
  apiKeyInvalidName: () =>
    as(400, "can only contain ASCII letters, numbers, underscores, and hyphens", "InvalidParameter"),
  // UNCONFIRMED: the service's limit of a key's name was not recorded; the words follow the one above
  apiKeyNameTooLong: (limit: number) => as(400, `can be at most ${limit} characters long`, "InvalidParameter"),
  // UNCONFIRMED
  apiKeyLimit: (limit: number) => as(403, `maximum number of API keys (${limit}) reached`, "InvalidParameter"),
  // UNCONFIRMED
  apiKeyAnonymous: () => as(403, "anonymous users cannot create API keys", "InvalidParameter"),
  // UNCONFIRMED
  apiKeyExists: (name: string) => as(409, `API key with name '${name}' already exists`, "APIKeyAlreadyExists"),
  // [live status 403 for delete; message and code UNCONFIRMED; disable refused alike (it would end
  // the very session asking: docs/decisions/0011-revocation.md)]
  apiKeyOwnSession: (action: "delete" | "disable") =>
    as(403, `cannot ${action} the API key of the current session`, "InvalidParameter"),
  /**
   * The error of a limit a write passed: the app's users (403, worded like the API-key limit) and
   * documents (400, like every MongoDB error; docs/decisions/0012-quotas.md); what one user, one
   * anonymous user, or anonymous users together may hold, worded like the app's
   * (0018-fair-shares.md).
   */
  quotaExceeded: (quota: Quota, limit: number, held = limit): AppServicesError => {
    if (quota === "users") return as(403, `maximum number of users (${limit}) reached`, "InvalidParameter");
    // [Atlas's shared clusters' text (AtlasError 8000, 500 collections); status and code as every MongoDB error]
    if (quota === "collections")
      return as(400, `cannot create a new collection -- already using ${held} collections of ${limit}`, "MongoDBError");
    const whose = quota.endsWith("PerUser")
      ? " per user"
      : quota.endsWith("PerAnonymousUser")
        ? " per anonymous user"
        : quota.startsWith("anonymous")
          ? " of anonymous users"
          : "";
    return /Bytes/.test(quota)
      ? as(400, `maximum size of documents${whose} (${limit} bytes) reached`, "MongoDBError")
      : as(400, `maximum number of documents${whose} (${limit}) reached`, "MongoDBError");
  },
  // Ours, answered as the concurrency cap: a user's writes past its allowance (docs/decisions/0018-fair-shares.md)
  tooManyWrites: (limit: number, anonymous: boolean) =>
    as(
      429,
      `too many writes: ${anonymous ? "an anonymous user" : "a user"} may write ${limit} documents a second`,
      "TooManyRequests",
    ),
  // [MongoDB's texts (BSONObjMaxUserSize, 16 MiB); status and code as every MongoDB error]
  insertTooLarge: (bytes: number) =>
    as(400, `object to insert too large. size in bytes: ${bytes}, max size: 16777216`, "MongoDBError"),
  updateTooLarge: () => as(400, "Resulting document after update is larger than 16777216", "MongoDBError"),
  // Ours: an action that would read more documents than the app allows (docs/decisions/0018-fair-shares.md)
  docsExaminedLimit: (limit: number) =>
    as(400, `operation exceeded the limit of ${limit} documents examined`, "MongoDBError"),
  // Ours, answered as the concurrency cap: anonymous users made from one client address
  tooManyAnonymousUsers: (limit: number) =>
    as(429, `too many anonymous users: one address may create ${limit} a day`, "TooManyRequests"),
  // Ours, answered as the concurrency cap: registrations from one client address, mails to one address
  tooManyRegistrations: (limit: number) =>
    as(429, `too many registrations: one address may register ${limit} a day`, "TooManyRequests"),
  tooManyMails: (limit: number) =>
    as(429, `too many e-mails: one address may be sent ${limit} an hour`, "TooManyRequests"),
  // Ours, answered as the concurrency cap: a session refreshing in a loop (runtime/session-refreshes.ts)
  tooManyRefreshes: (limit: number) =>
    as(429, `too many refreshes: one session may refresh its access token ${limit} times a minute`, "TooManyRequests"),
  // [limit live; reply UNCONFIRMED]
  payloadTooLarge: () => as(413, "request body exceeds the 18 MB limit", "ReadSizeLimitExceeded"),
  // [429 live; body UNCONFIRMED]
  tooManyRequests: () => as(429, "too many requests", "TooManyRequests"),
  // docs/decisions/0024-large-bodies-in-slices.md: bodies of 16 KiB or more in flight, per instance and per address.
  tooManyLargeRequests: (refusal: Refusal) =>
    as(
      429,
      refusal === "address"
        ? "too many large requests: one client address may send 2 bodies of 1 MiB or more at once"
        : refusal === "address-sizable"
          ? "too many requests with bodies: one client address may send 16 bodies of 16 KiB to 1 MiB at once"
          : "too many large requests: the server is reading as many large bodies as it takes at once",
      "TooManyRequests",
    ),
  // Ours, answered as the concurrency cap: password hashes waiting (docs/decisions/0028-password-work.md)
  tooManyPasswordChecks: () => as(429, "too many password checks at once: try again in a second", "TooManyRequests"),
  // Ours, answered as the concurrency cap: change streams open at once (docs/decisions/0011-revocation.md)
  tooManyUserStreams: (limit: number) =>
    as(429, `too many change streams: a user may have ${limit} open at once`, "TooManyRequests"),
  tooManyAppStreams: (limit: number) =>
    as(429, `too many change streams: the app may have ${limit} open at once`, "TooManyRequests"),
  tooManyAnonymousStreams: (limit: number) =>
    as(429, `too many change streams: an anonymous user may have ${limit} open at once`, "TooManyRequests"),
  tooManyAddressStreams: (limit: number) =>
    as(429, `too many change streams: one address may have ${limit} open at once`, "TooManyRequests"),
  // Ours, answered as the concurrency cap: function calls running at once (docs/decisions/0018-fair-shares.md)
  tooManyFunctionCalls: (who: "a user" | "an anonymous user" | "one address", limit: number) =>
    as(429, `too many function calls: ${who} may have ${limit} running at once`, "TooManyRequests"),
  // UNCONFIRMED: the service's own limits were per app; the words follow tooManyFunctionCalls.
  tooManyMongoActions: (who: "a user" | "one address", limit: number) =>
    as(429, `too many MongoDB actions: ${who} may have ${limit} waiting at once`, "TooManyRequests"),
  // HTTPS endpoints [the authentication errors are the Data API document's (openapi-data-api-v1:
  // ErrorNoAuthenticationSpecified, ErrorMissingAuthenticationParameter, ErrorUserNotFound); the
  // rest UNCONFIRMED; docs/decisions/0035-https-endpoints.md]
  endpointNotFound: (route: string) => as(404, `no endpoint at route '${route}'`, "EndpointNotFound"),
  endpointMethodNotAllowed: (method: string, route: string) =>
    as(405, `the endpoint at route '${route}' does not take ${method}`, "MethodNotAllowed"),
  endpointNoCredentials: () => as(400, "no authentication methods were specified", "InvalidParameter"),
  endpointSecretInvalid: () => as(400, "invalid secret", "InvalidParameter"),
  endpointSignatureInvalid: () => as(400, "invalid Endpoint-Signature for the request's body", "InvalidParameter"),
  endpointUserNotFound: () => as(401, "invalid session: error finding user for endpoint", "InvalidSession"),
  endpointCredentialsIncomplete: () =>
    as(
      400,
      "must specify some form of authentication (either email+password, api-key, or jwt) in the request header or body",
      "MissingParameter",
    ),
  endpointRunAsInvalid: (reason: string) =>
    as(400, `cannot choose the endpoint's user: ${reason}`, "FunctionExecutionError"),
  // no such route on the service (not an operation of the document)
  routeNotFound: (method: string, path: string) => as(404, `no route matches ${method} ${path}`, "NotFound"),
  internal: () => as(500, "internal server error", "InternalServerError"),
  // Ours: the server is starting (opening its database); no link (nothing was journaled).
  starting: () =>
    new AppServicesError(
      503,
      "service temporarily unavailable: the server is starting; try again shortly",
      "ServiceUnavailable",
      false,
    ),
  // Ours: the store (PostgreSQL) cannot be reached; no link (nothing was journaled).
  unavailable: () =>
    new AppServicesError(
      503,
      "service temporarily unavailable: the database cannot be reached; try again shortly",
      "ServiceUnavailable",
      false,
    ),
  // Ours (DNS-rebinding protection); no link, which would point at the foreign host.
  hostNotAllowed: (host: string | null) => new AppServicesError(403, hostNotAllowed(host), "HostNotAllowed", false),
} as const;

const dashboard = "https://dashboard.emailjs.com/admin";
export const emailJsErrors = {
  // [docs]
  userIdRequired: () => new EmailJsError(400, "The user_id parameter is required"),
  // UNCONFIRMED: modelled on the user_id text
  serviceIdRequired: () => new EmailJsError(400, "The service_id parameter is required"),
  templateIdRequired: () => new EmailJsError(400, "The template_id parameter is required"),
  // [observed] note the asymmetric wording, copied literally
  publicKeyInvalid: () =>
    new EmailJsError(400, `The Public Key is invalid. To find this ID, visit ${dashboard}/account`),
  serviceNotFound: () => new EmailJsError(400, `The service ID not found. To find this ID, visit ${dashboard}`),
  templateNotFound: () =>
    new EmailJsError(400, `The template ID not found. To find this ID, visit ${dashboard}/templates`),
  // UNCONFIRMED
  malformed: () => new EmailJsError(400, "The request body is invalid"),
  // [text observed; 413 weak]
  variablesTooLarge: () => new EmailJsError(413, "Variables size limit. The maximum allowed variables size is 50Kb"),
  // [maintainer]
  nonBrowser: () => new EmailJsError(403, "API calls are disabled for non-browser applications"),
  // UNCONFIRMED
  privateKeyRequired: () =>
    new EmailJsError(403, `The Private Key is required. To find this ID, visit ${dashboard}/account/security`),
  privateKeyInvalid: () =>
    new EmailJsError(403, `The Private Key is invalid. To find this ID, visit ${dashboard}/account/security`),
  // [observed]
  recipientsEmpty: () => new EmailJsError(422, "The recipients address is empty"),
  // [weak]
  recipientsCorrupted: () => new EmailJsError(422, "The recipients address is corrupted"),
  // UNCONFIRMED (429 as third-party code assumes)
  rateLimited: () => new EmailJsError(429, "Too Many Requests"),
  routeNotFound: () => new EmailJsError(404, "Not Found"),
  internal: () => new EmailJsError(500, "Internal Server Error"),
  // Ours: the store (PostgreSQL) cannot be reached.
  unavailable: () => new EmailJsError(503, "Service Unavailable"),
  hostNotAllowed: (host: string | null) => new EmailJsError(403, hostNotAllowed(host)),
} as const;

export const controlErrors = {
  validation: (message: string) => new ControlError(400, "ValidationError", message),
  unauthorized: () => new ControlError(401, "Unauthorized", "the control API requires the control token"),
  metricsUnauthorized: () => new ControlError(401, "Unauthorized", "the metrics require the metrics token"),
  forbiddenOrigin: (origin: string) =>
    new ControlError(
      403,
      "ForbiddenOrigin",
      `the control API does not accept requests from the origin ${origin}: only from the emulator's own (the page's address, or --public-url)`,
    ),
  anyHostNeedsToken: (host: string) =>
    new ControlError(
      403,
      "HostNotAllowed",
      `the control API answers the Host '${host}' only with a control token: --allowed-hosts '*' answers any Host, so a page on a name resolved to this host could use it (start with --control-token)`,
    ),
  notFound: (message: string) => new ControlError(404, "NotFound", message),
  conflict: (message: string) => new ControlError(409, "Conflict", message),
  internal: () => new ControlError(500, "InternalError", "internal error"),
  unavailable: () =>
    new ControlError(503, "Unavailable", "the database cannot be reached; the emulator retries by itself"),
  starting: () => new ControlError(503, "Unavailable", "the server is starting (opening its database)"),
  notInProduction: (feature: string) =>
    new ControlError(403, "NotInProduction", `${feature} is a testing feature, off in production mode`),
  hostNotAllowed: (host: string | null) => new ControlError(403, "HostNotAllowed", hostNotAllowed(host)),
  functionSourceOff: (what: string) =>
    new ControlError(
      403,
      "FunctionSourceNotAllowed",
      `function source through the control API is off (${what}): it is code that runs on this host as the emulator's user. Start the emulator with --control-token (the control API then requires it) or --allow-function-source to take it, or put the function in an app folder given at start (--app)`,
    ),
  functionSourceInProduction: (what: string) =>
    new ControlError(
      403,
      "FunctionSourceNotAllowed",
      `function source through the control API is refused in production mode (${what}): put the function in the app folder given with --app`,
    ),
} as const;
