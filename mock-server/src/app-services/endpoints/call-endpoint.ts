/**
 * The app's custom HTTPS endpoints (decision 0035): `/app/<appId>/endpoint/<route>` with a method
 * runs the endpoint's function with the request and a response to fill, as the user the function's
 * settings name — the system (`run_as_system`), one user (`run_as_user_id`), the user a script
 * answers (`run_as_user_id_script_source`), or the user of the request's credentials (a bearer
 * access token; `apiKey`; `email` and `password`; `jwtTokenString`) — after the endpoint's own
 * check (a `secret` query parameter, or an `Endpoint-Signature` of the body). The reply is what the
 * function set, else its value (JSON or Extended JSON), else 204.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { Binary, EJSON, Long } from "bson";
import type { FastifyReply, FastifyRequest } from "fastify";
import { type AppConfig, providerEnabled } from "../../config/app-config.ts";
import { type Document, toEJSONText } from "../../data/documents.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { contextRequest, type EndpointOutcome } from "../../functions/app-functions.ts";
import { addressKey } from "../../http/client-address.ts";
import type { AppRuntime } from "../../runtime/app-runtime.ts";
import { type StoredUser, userActive } from "../../store/store.ts";
import { withApiKeyGuesses } from "../abuse-limits.ts";
import { authenticate } from "../auth/login.ts";
import { userOfCredentials } from "../auth/sign-in.ts";
import { authenticateAccess } from "../auth-context.ts";
import { takeCallPlace } from "../functions/call-caps.ts";
import { requestExpansion, requestHeaders } from "../request-expansion.ts";

type Endpoint = NonNullable<AppConfig["endpoints"]>[number];

/** The endpoint for a route and method: the method's own, else the route's any-method one. */
function endpointFor(app: AppRuntime, route: string, method: string, reply: FastifyReply): Endpoint {
  const atRoute = (app.config.endpoints ?? []).filter((e) => e.disabled !== true && e.route === route);
  const endpoint = atRoute.find((e) => e.httpMethod === method) ?? atRoute.find((e) => e.httpMethod === "*");
  if (endpoint) return endpoint;
  if (atRoute.length === 0) throw errors.endpointNotFound(route);
  reply.header("allow", [...new Set(atRoute.map((e) => e.httpMethod))].join(", "));
  throw errors.endpointMethodNotAllowed(method, route);
}

/** The first value of a header sent once or more. */
export function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** How a request of an endpoint (its function's settings) or of the Data API (its own) authenticates. */
export interface Authentication {
  /** The name of what is served (a function's, the Data API), for a script's errors. */
  name: string;
  runAsSystem?: boolean | undefined;
  runAsUserId?: string | undefined;
  runAsUserIdScriptSource?: string | undefined;
  createUserOnAuth?: boolean | undefined;
}

/**
 * Whom the request runs as (null: the system), by the settings; with application authentication,
 * the user of the request's credentials.
 */
export async function runAs(
  request: FastifyRequest,
  reply: FastifyReply,
  app: AppRuntime,
  settings: Authentication,
  requestDocument: Document,
): Promise<StoredUser | null> {
  if (settings.runAsSystem) return null;
  if (settings.runAsUserId !== undefined) return activeUser(app, await app.users.get(settings.runAsUserId));
  if (settings.runAsUserIdScriptSource !== undefined) {
    const answer = await app.functions.runUserScript(settings.name, settings.runAsUserIdScriptSource, requestDocument);
    if (typeof answer === "string") return activeUser(app, await app.users.get(answer));
    if (answer !== null && typeof answer === "object" && (answer as Document).runAsSystem === true) return null;
    throw errors.endpointRunAsInvalid("the script must answer a user id or { runAsSystem: true }");
  }
  const { emulator } = request.server;
  const authorization = headerValue(request, "authorization");
  const bearer = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] : undefined;
  if (bearer !== undefined) {
    const caller = await authenticateAccess(emulator, bearer);
    if (caller.app !== app) throw errors.accessTokenInvalid();
    return caller.user;
  }
  const credentials = credentialsOf(request);
  if (!credentials) throw errors.endpointNoCredentials();
  if (!providerEnabled(app.config, credentials.provider)) throw errors.providerNotEnabled(credentials.provider);
  const signIn = () =>
    authenticate(request, app, credentials.provider, credentials.body, false, emulator.options.passwordHashCost);
  // (E-mail and password headers count as logins, in the abuse limits' hook; a key's guesses here.)
  const auth = await (credentials.provider === "api-key" ? withApiKeyGuesses(request, reply, app, signIn) : signIn());
  const user = await userOfCredentials(emulator, app, auth, settings.createUserOnAuth === true, request.log);
  if (!user) throw errors.endpointUserNotFound();
  return activeUser(app, user);
}

/** A provider's credentials given as headers (application authentication). */
function credentialsOf(request: FastifyRequest): { provider: string; body: Record<string, unknown> } | undefined {
  const apiKey = headerValue(request, "apikey");
  if (apiKey) return { provider: "api-key", body: { key: apiKey } };
  const email = headerValue(request, "email");
  const password = headerValue(request, "password");
  if (email && password) return { provider: "local-userpass", body: { username: email, password } };
  const jwt = headerValue(request, "jwttokenstring");
  if (jwt) return { provider: "custom-token", body: { token: jwt } };
  // One half of e-mail and password.
  if (email || password) throw errors.endpointCredentialsIncomplete();
  return undefined;
}

function activeUser(app: AppRuntime, user: StoredUser | undefined): StoredUser {
  if (!user || !userActive(user, app.clock.now())) throw errors.endpointUserNotFound();
  if (user.disabled) throw errors.userDisabled();
  return user;
}

const sameText = (given: string, expected: string) => {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
};

/** The endpoint's own check of the request: its secret as `?secret=`, or the body's signature. */
export function checkValidation(
  request: FastifyRequest,
  settings: { validationMethod?: string | undefined; secret?: string | undefined },
  body: Buffer | undefined,
): void {
  const method = settings.validationMethod ?? "NO_VALIDATION";
  if (method === "NO_VALIDATION") return;
  const secret = settings.secret ?? "";
  if (method === "SECRET_AS_QUERY_PARAM") {
    // (A repeated one is its first value: http/request-targets.ts.)
    const given = (request.query as Record<string, string | undefined>).secret;
    if (secret === "" || given === undefined || !sameText(given, secret)) throw errors.endpointSecretInvalid();
    return;
  }
  const signature = headerValue(request, "endpoint-signature") ?? "";
  const expected = `sha256=${createHmac("sha256", secret)
    .update(body ?? Buffer.alloc(0))
    .digest("hex")}`;
  if (secret === "" || !sameText(signature.toLowerCase(), expected)) throw errors.endpointSignatureInvalid();
}

/** The function's request argument: headers (canonical names, lists), the query (first of each), the body. */
function requestArgument(request: FastifyRequest, body: Buffer | undefined): Document {
  const headers = requestHeaders(request);
  const query: Record<string, string> = Object.create(null);
  for (const [name, value] of new URLSearchParams(request.url.split("?")[1] ?? "")) {
    if (name !== "secret" && !(name in query)) query[name] = value;
  }
  return { headers, query, ...(body ? { body: new Binary(body) } : {}) };
}

/** Headers the server writes itself: a function's would break the reply's framing. */
const framing = new Set(["content-length", "transfer-encoding", "connection", "keep-alive", "upgrade"]);

/** A value as the endpoint's JSON: Extended JSON's types as their plain JSON (a Long as a number while exact). */
function jsonText(value: unknown): string {
  return (
    JSON.stringify(value, (_key, v: unknown) =>
      v instanceof Long
        ? v.lessThanOrEqual(Number.MAX_SAFE_INTEGER) && v.greaterThanOrEqual(Number.MIN_SAFE_INTEGER)
          ? v.toNumber()
          : v.toString()
        : v,
    ) ?? "null"
  );
}

function sendOutcome(request: FastifyRequest, reply: FastifyReply, endpoint: Endpoint, outcome: EndpointOutcome) {
  if (endpoint.respondResult !== true) return reply.code(204).send();
  const status = outcome.statusCode ?? 200;
  let typed = false;
  for (const [name, values] of outcome.headers) {
    const lower = name.toLowerCase();
    if (framing.has(lower)) continue;
    if (lower === "content-type") typed = true;
    reply.header(name, values.length === 1 ? values[0] : values);
  }
  reply.code(status);
  if (status === 204 || status === 304) return reply.send();
  if (outcome.body !== undefined) {
    if (!typed) reply.type(typeof outcome.body === "string" ? "text/plain; charset=utf-8" : "application/octet-stream");
    return reply.send(typeof outcome.body === "string" ? outcome.body : Buffer.from(outcome.body));
  }
  const value = valueReply(request, endpoint.returnType, outcome.hasResult ? outcome.result : null);
  if (!typed) reply.header("content-type", value.type);
  return reply.send(value.bytes);
}

/**
 * A value as a reply of an endpoint or the Data API: Extended JSON when the request accepts
 * `application/ejson`, JSON when it accepts `application/json`, else the configured return type.
 * (As bytes: Fastify would add a charset to a text's type that is not JSON's.)
 */
export function valueReply(
  request: FastifyRequest,
  returnType: "JSON" | "EJSON" | undefined,
  value: unknown,
): { type: string; bytes: Buffer } {
  const accept = headerValue(request, "accept") ?? "";
  const ejson = /application\/ejson/i.test(accept)
    ? true
    : /application\/json/i.test(accept)
      ? false
      : returnType === "EJSON";
  return ejson
    ? { type: "application/ejson", bytes: Buffer.from(EJSON.stringify(value as Document, { relaxed: false })) }
    : { type: "application/json", bytes: Buffer.from(jsonText(value)) };
}

/** Serves a request to an endpoint (every method's route file). */
export async function callEndpoint(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const app = request.appRuntime!;
  const route = `/${(request.params as Record<string, string>)["*"] ?? ""}`;
  const endpoint = endpointFor(app, route, request.method, reply);
  const fn = app.functions.settingsOf(endpoint.functionName);
  if (!fn) throw errors.functionNotFound(endpoint.functionName);
  const body = Buffer.isBuffer(request.body) && request.body.length > 0 ? request.body : undefined;
  const expansion = requestExpansion(request);
  const endpointRequest = () => ({ ...expansion(), webhookUrl: route });
  const requestDocument = { ...contextRequest(expansion()), webhookUrl: route, httpMethod: request.method };
  const user = await runAs(
    request,
    reply,
    app,
    { ...fn, createUserOnAuth: endpoint.createUserOnAuth },
    requestDocument,
  );
  checkValidation(request, endpoint, body);
  const requestArg = requestArgument(request, body);
  const givePlace = takeCallPlace(app, user, request.ip);
  let outcome: EndpointOutcome;
  try {
    outcome = await app.functions.runEndpoint(endpoint.functionName, {
      user,
      requestArg,
      requestArgText: toEJSONText(requestArg),
      contextRequest: requestDocument,
      expansion: endpointRequest,
      address: addressKey(request.ip),
      fetchCustomUserData: endpoint.fetchCustomUserData === true,
    });
  } finally {
    givePlace();
  }
  return sendOutcome(request, reply, endpoint, outcome);
}
