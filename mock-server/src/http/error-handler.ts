/**
 * The one error handler. Handlers and hooks throw catalogue errors; framework errors (validation,
 * malformed or oversized bodies, unsupported media types) are mapped to the wire shape of the
 * service the URL belongs to. Nothing unexpected leaks: it is logged and answered as a generic 500.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { controlApiServed } from "../config/options.ts";
import {
  type AppServicesError,
  AppServicesError as AppServicesErrorClass,
  appServicesErrors,
  ControlError,
  controlErrors,
  EmailJsError,
  emailJsErrors,
  IdentityProviderError,
  identityProviderErrors,
} from "../errors/catalogue.ts";
import { PasswordWorkBusyError } from "../state/password-work.ts";
import { AppGoneError, QuotaExceededError, StoreTimeoutError, StoreUnavailableError } from "../store/store.ts";
import { areaOfUrl, publicOrigin } from "./areas.ts";
import { JsonBodyError } from "./json-body.ts";

interface ValidationIssue {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  schema?: unknown;
  parentSchema?: { type?: unknown };
}

function fieldOf(issue: ValidationIssue): string {
  if (issue.keyword === "required") return String(issue.params.missingProperty ?? "");
  return issue.instancePath.split("/").filter(Boolean).join(".");
}

function appServicesValidation(error: FastifyError): AppServicesError {
  const issue = (error.validation as ValidationIssue[] | undefined)?.[0];
  if (error.validationContext === "body" && issue) {
    const field = fieldOf(issue);
    // The service answers `'<field>' is a required string` (without error_code) for missing or
    // non-string string fields [live for api_keys `name`]; other problems are BadRequest.
    const expectsString = issue.keyword === "type" && issue.params.type === "string";
    if (field && !field.includes(".") && (issue.keyword === "required" || expectsString)) {
      return appServicesErrors.requiredString(field);
    }
    if (issue.instancePath === "" && issue.keyword === "type")
      return appServicesErrors.badRequest("request body must be a JSON object");
  }
  return appServicesErrors.badRequest(`invalid request: ${error.message}`);
}

function emailJsValidation(error: FastifyError): EmailJsError {
  const issue = (error.validation as ValidationIssue[] | undefined)?.[0];
  const field = issue ? fieldOf(issue) : "";
  if (field === "user_id") return emailJsErrors.userIdRequired();
  if (field === "service_id") return emailJsErrors.serviceIdRequired();
  if (field === "template_id") return emailJsErrors.templateIdRequired();
  return emailJsErrors.malformed();
}

function mapFrameworkError(error: FastifyError, area: ReturnType<typeof areaOfUrl>) {
  const tooLarge = error.code === "FST_ERR_CTP_BODY_TOO_LARGE" || error.statusCode === 413;
  const badBody =
    error instanceof JsonBodyError ||
    (error.code?.startsWith("FST_ERR_CTP_") ?? false) ||
    error.code === "FST_ERR_INVALID_URL" ||
    error.statusCode === 400 ||
    error.statusCode === 415;
  if (area === "app-services") {
    if (error.validation) return appServicesValidation(error);
    if (tooLarge) return appServicesErrors.payloadTooLarge();
    if (error instanceof JsonBodyError) return appServicesErrors.badRequest(error.message);
    if (error.statusCode === 415)
      return appServicesErrors.badRequest("unsupported Content-Type: send application/json");
    if (badBody) return appServicesErrors.badRequest(error.message);
    return undefined;
  }
  if (area === "emailjs") {
    if (error.validation) return emailJsValidation(error);
    if (tooLarge) return emailJsErrors.variablesTooLarge();
    if (badBody) return emailJsErrors.malformed();
    return undefined;
  }
  if (error.validation) return controlErrors.validation(error.message);
  if (tooLarge) return controlErrors.validation("the request body is too large");
  if (error instanceof JsonBodyError) return controlErrors.validation(error.message);
  if (error.statusCode === 415) return controlErrors.validation("send the body as application/json");
  if (badBody) return controlErrors.validation(error.message);
  return undefined;
}

function appServicesQuotaError(error: QuotaExceededError): AppServicesError {
  return appServicesErrors.quotaExceeded(error.quota, error.limit, error.held);
}

const quotaMessage = (error: QuotaExceededError) => appServicesQuotaError(error).message;

export function sendAppServicesError(request: FastifyRequest, reply: FastifyReply, error: AppServicesError) {
  const body: { error: string; error_code?: string; link?: string } = { error: error.message };
  if (error.errorCode !== undefined) body.error_code = error.errorCode;
  // (Not where no inspector is served: production mode without a control token.)
  if (error.withLink && controlApiServed(request.server.emulator.options)) {
    const appId = request.appRuntime?.appId;
    // The real `link` points at the app's logs; ours points at this request in the inspector's journal.
    body.link = appId
      ? `${publicOrigin(request)}/_mock/#/apps/${encodeURIComponent(appId)}/requests/${request.id}`
      : `${publicOrigin(request)}/_mock/`;
  }
  return reply.code(error.statusCode).type("application/json").send(JSON.stringify(body));
}

/** Anything thrown on the fake identity provider's routes, in OAuth 2.0's shape. */
function identityProviderError(request: FastifyRequest, error: unknown): IdentityProviderError {
  if (error instanceof StoreUnavailableError) return identityProviderErrors.unavailable();
  const e = error as FastifyError;
  if (
    e.validation ||
    e.statusCode === 400 ||
    e.statusCode === 413 ||
    e.statusCode === 415 ||
    e instanceof JsonBodyError
  )
    return identityProviderErrors.invalidRequest(e.message);
  request.log.error({ err: error }, "unexpected error");
  return identityProviderErrors.internal();
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: unknown) {
  if (error instanceof AppServicesErrorClass) return sendAppServicesError(request, reply, error);
  if (error instanceof EmailJsError) {
    return reply.code(error.statusCode).type("text/plain; charset=utf-8").send(error.message);
  }
  if (error instanceof ControlError) {
    return reply
      .code(error.statusCode)
      .type("application/json")
      .send(JSON.stringify({ error: error.message, code: error.code }));
  }
  if (error instanceof IdentityProviderError) {
    return reply
      .code(error.statusCode)
      .type("application/json")
      .send(JSON.stringify({ error: error.code, error_description: error.message }));
  }
  const area = request.routeOptions.config?.area ?? areaOfUrl(request.url);
  if (area === "identity-provider") return sendError(request, reply, identityProviderError(request, error));
  if (error instanceof StoreUnavailableError || error instanceof StoreTimeoutError) {
    // An outage, not a bug: the client may try again (the store reconnects by itself).
    request.log.warn({ reason: error.message }, "store unavailable");
    reply.header("retry-after", "1");
    if (area === "app-services") return sendError(request, reply, appServicesErrors.unavailable());
    if (area === "emailjs") return sendError(request, reply, emailJsErrors.unavailable());
    return sendError(request, reply, controlErrors.unavailable());
  }
  if (error instanceof AppGoneError) {
    // Deleted while the request ran: answered as a request a moment later is — its app not found,
    // or, where the path names no app (the token does), its token refused.
    if (area === "app-services") {
      const named = typeof (request.params as { appId?: unknown } | undefined)?.appId === "string";
      return sendError(
        request,
        reply,
        named ? appServicesErrors.appNotFound(error.appId) : appServicesErrors.accessTokenInvalid(),
      );
    }
    if (area === "control") return sendError(request, reply, controlErrors.notFound(`no app with id '${error.appId}'`));
  }
  if (error instanceof PasswordWorkBusyError && area === "app-services") {
    // As many hashes wait as start within their bound (state/password-work.ts): try again shortly.
    reply.header("retry-after", "1");
    return sendError(request, reply, appServicesErrors.tooManyPasswordChecks());
  }
  if (error instanceof QuotaExceededError) {
    // The app's limits (docs/decisions/0012-quotas.md); data writes answer theirs in MongoService.
    if (area === "control") return sendError(request, reply, controlErrors.conflict(quotaMessage(error)));
    if (area === "app-services") return sendError(request, reply, appServicesQuotaError(error));
  }
  const mapped = mapFrameworkError(error as FastifyError, area);
  if (mapped) return sendError(request, reply, mapped);
  request.log.error({ err: error }, "unexpected error");
  if (area === "app-services") return sendError(request, reply, appServicesErrors.internal());
  if (area === "emailjs") return sendError(request, reply, emailJsErrors.internal());
  return sendError(request, reply, controlErrors.internal());
}

export function notFound(request: FastifyRequest, reply: FastifyReply) {
  const area = areaOfUrl(request.url);
  // (What the client sent: a malformed path is routed as its well-formed form, http/request-targets.ts.)
  const url = request.originalUrl ?? request.url;
  const path = url.split("?")[0] ?? url;
  if (area === "emailjs") return sendError(request, reply, emailJsErrors.routeNotFound());
  const { options } = request.server.emulator;
  if (area === "control" && !controlApiServed(options))
    return sendError(
      request,
      reply,
      controlErrors.notFound(
        "the control API (but /_mock/v1/health and /_mock/v1/ready) and the inspector are off in production mode without --control-token",
      ),
    );
  if (area === "control")
    return sendError(request, reply, controlErrors.notFound(`no control route ${request.method} ${path}`));
  const doubled = path.startsWith("//") ? ' (the path starts with "//": does the base URL end in "/"?)' : "";
  return sendError(request, reply, appServicesErrors.routeNotFound(request.method, path + doubled));
}
