/**
 * The App Services client API. Per request, before the operation runs: find the app (from the
 * path, or from the token on `/auth/*` routes), hold to the app's concurrency cap (a change stream
 * leaves it once open: streams have caps of their own), fire a fault override if one is set, then
 * authenticate as the operation requires. After it: journal.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { defaultMaxConcurrentRequests } from "../config/app-config.ts";
import { controlApiServed } from "../config/options.ts";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { registerFormParser } from "../http/form-body.ts";
import { journalRequest } from "../http/request-journal.ts";
import { registerDocumentedRoutes } from "../openapi/register-routes.ts";
import { maxRequestBodyBytes } from "../runtime/large-requests.ts";
import { refreshesPerSessionPerMinute, takeRefresh } from "../runtime/session-refreshes.ts";
import type { Fault } from "../state/faults.ts";
import { countersOf } from "../state/rate-counters.ts";
import { registerAbuseLimits } from "./abuse-limits.ts";
import {
  type AuthMode,
  appOfToken,
  authenticateAccess,
  authenticateRefresh,
  bearerToken,
  type Caller,
} from "./auth-context.ts";
import { endpointRoutes, routes } from "./routes.ts";

function tokenIfAny(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const match = header ? /^Bearer\s+(\S+)/i.exec(header) : null;
  if (match?.[1]) return match[1];
  const query = (request.query as { baas_at?: unknown } | undefined)?.baas_at;
  return typeof query === "string" ? query : undefined;
}

/** The operation whose faults can name a function: they wait for the body, which names it. */
const byFunctionName = "callFunction";

/** The fault set for this request, if any, taken (a request without one costs no promise). */
function takeFault(request: FastifyRequest, operationId: string, functionName?: string): Fault | undefined {
  return request.appRuntime?.faults.take(operationId, functionName);
}

/** Fires a taken fault: its delay, then its answer if it has one (true when it answered). */
async function applyFault(
  request: FastifyRequest,
  reply: FastifyReply,
  operationId: string,
  fault: Fault,
): Promise<boolean> {
  const app = request.appRuntime!;
  request.server.emulator.events.emit({ type: "fault", appId: app.appId, action: "fired", id: fault.id });
  if (fault.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, fault.delayMs));
  if (fault.status === undefined) return false;
  request.faulted = true;
  if (fault.status === 204 || fault.status === 304) {
    await reply.code(fault.status).send();
    return true;
  }
  const body = fault.body ?? { error: `fault injected for ${operationId}`, error_code: "InternalServerError" };
  await reply.code(fault.status).type("application/json").send(JSON.stringify(body));
  return true;
}

export async function appServicesPlugin(app: FastifyInstance): Promise<void> {
  const emulator = app.emulator;

  /**
   * Before the operation: the app, the caller, the app's concurrency cap, a fault. A callback hook
   * whose usual path (the app cached here, the in-memory store, no fault) runs without a promise;
   * what must wait (a store elsewhere, a fault's delay) goes on in one. Undefined when admitted at
   * once, else a promise for whether the request was answered here (by a fault).
   */
  type Admission = undefined | Promise<boolean>;

  // A held body's bytes are charged as they are read (runtime/large-requests.ts).
  app.addHook("preParsing", (_request, reply, payload, done) => {
    done(
      null,
      emulator.largeRequests.meter(reply.raw, payload, () => {
        reply.header("retry-after", "1");
        return errors.tooManyLargeRequests("instance");
      }),
    );
  });

  app.addHook("onRequest", (request, reply, done) => {
    let admission: Admission;
    try {
      admission = admit(request, reply);
    } catch (error) {
      return done(error as Error);
    }
    if (admission === undefined) return done();
    // When a fault answered, the request ends here (a callback hook that replied calls no `done`).
    admission.then(
      (answered) => answered || done(),
      (error: Error) => done(error),
    );
  });

  function admit(request: FastifyRequest, reply: FastifyReply): Admission {
    const { operationId, auth } = request.routeOptions.config;
    if (!operationId || !auth) return undefined;
    const appId = (request.params as { appId?: string }).appId;
    if (appId !== undefined) {
      const cached = emulator.apps.cached(appId);
      if (!cached) {
        return emulator.apps.get(appId).then((found) => {
          if (!found) throw errors.appNotFound(appId);
          request.appRuntime = found;
          return authenticate(request, reply, operationId, auth) ?? false;
        });
      }
      request.appRuntime = cached;
    }
    return authenticate(request, reply, operationId, auth);
  }

  /** Authenticates first where the operation needs a token: on /auth/* routes it names the app. */
  function authenticate(request: FastifyRequest, reply: FastifyReply, operationId: string, auth: AuthMode): Admission {
    const link = auth === "login" && (request.query as { link?: string } | undefined)?.link === "true";
    let caller: Caller | Promise<Caller> | null = null;
    try {
      if (auth === "access" || link) caller = authenticateAccess(emulator, bearerToken(request, false));
      else if (auth === "stream") caller = authenticateAccess(emulator, bearerToken(request, true));
      else if (auth === "refresh") caller = authenticateRefresh(emulator, bearerToken(request, false));
      else if (auth === "refresh-with-data")
        caller = authenticateRefresh(emulator, bearerToken(request, false), true, async (appId, sessionId) => {
          // In production a session refreshes so often a minute (runtime/session-refreshes.ts).
          if (!emulator.options.production) return;
          const waitMs = await takeRefresh(emulator.sessionRefreshes, `${appId}|${sessionId}`);
          if (waitMs === undefined) return;
          reply.header("retry-after", String(Math.max(1, Math.ceil(waitMs / 1000))));
          throw errors.tooManyRefreshes(refreshesPerSessionPerMinute);
        });
    } catch (error) {
      return refused(request, error);
    }
    if (caller instanceof Promise) {
      return caller.then(
        (found) => admitCaller(request, reply, operationId, found) ?? false,
        (error: unknown) => refused(request, error),
      );
    }
    return admitCaller(request, reply, operationId, caller);
  }

  /** A refused token: journalled under the app the token names, if it names one. */
  function refused(request: FastifyRequest, error: unknown): Promise<never> {
    const token = request.appRuntime ? undefined : tokenIfAny(request);
    const named = token ? appOfToken(emulator, token).catch(() => undefined) : Promise.resolve(undefined);
    return named.then((found) => {
      if (!request.appRuntime) request.appRuntime = found ?? null;
      throw error;
    });
  }

  function admitCaller(
    request: FastifyRequest,
    reply: FastifyReply,
    operationId: string,
    caller: Caller | null,
  ): Admission {
    if (caller) {
      // A token is good for its own app only.
      if (request.appRuntime && request.appRuntime !== caller.app) throw errors.accessTokenInvalid();
      request.caller = caller;
      request.appRuntime = caller.app;
    }

    // A body of 16 KiB or more takes a place until its response closes, before it is read (runtime/large-requests.ts).
    const refusal = emulator.largeRequests.hold(request.ip, request.raw, reply.raw);
    if (refusal !== null) {
      reply.header("retry-after", "1");
      throw errors.tooManyLargeRequests(refusal);
    }

    const runtime = request.appRuntime;
    if (runtime) {
      const cap = runtime.config.maxConcurrentRequests ?? defaultMaxConcurrentRequests;
      if (runtime.inFlight >= cap) throw errors.tooManyRequests();
      runtime.inFlight++;
      let counted = true;
      request.leaveInFlight = () => {
        if (!counted) return;
        counted = false;
        runtime.inFlight--;
      };
      // (`on`, not `once`: a response closes once, and `leaveInFlight` counts once anyway; `once`
      // cost every request a wrapper and a removal.)
      reply.raw.on("close", request.leaveInFlight);
    }

    if (operationId === byFunctionName) return undefined;
    const fault = takeFault(request, operationId);
    return fault ? applyFault(request, reply, operationId, fault) : undefined;
  }

  app.addHook("preValidation", (request, reply, done) => {
    if (request.routeOptions.config.operationId !== byFunctionName) return done();
    const name = (request.body as { name?: unknown } | undefined)?.name;
    const fault = takeFault(request, byFunctionName, typeof name === "string" ? name : undefined);
    if (!fault) return done();
    // When the fault answered, the request ends here (a callback hook that replied calls no `done`).
    applyFault(request, reply, byFunctionName, fault).then(
      (answered) => answered || done(),
      (error: Error) => done(error),
    );
  });

  // (A callback hook, like the others on every request's path; none when nothing can read the
  // journals: production without a control token.)
  if (controlApiServed(emulator.options))
    app.addHook("onResponse", (request, reply, done) => {
      try {
        journal(request, reply);
        done();
      } catch (error) {
        done(error as Error);
      }
    });

  function journal(request: FastifyRequest, reply: FastifyReply): void {
    const runtime = request.appRuntime;
    const operationId = request.routeOptions.config.operationId;
    if (!runtime || !operationId) return;
    // An open change stream journals itself when it ends.
    if (operationId === "callFunctionStreaming" && reply.statusCode === 200) return;
    journalRequest(runtime.journal, request, reply, operationId, request.body, runtime.clock.now());
    // (The event is built only for someone listening: most requests have no one.)
    if (emulator.events.size > 0) {
      emulator.events.emit({
        type: "request",
        appId: runtime.appId,
        action: "completed",
        id: request.id,
        detail: { operationId, status: reply.statusCode },
      });
    }
  }

  registerAbuseLimits(app, emulator.options.authRateLimit, countersOf(emulator.store));
  registerFormParser(app);
  // A JSON text sent as text/plain (fetch's type for a string body) is refused as any other type is,
  // not read as a string that is then "not a JSON object".
  app.removeContentTypeParser("text/plain");
  registerDocumentedRoutes(app, routes, "app-services", (route) => ({ auth: route.auth }));
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: maxRequestBodyBytes }, (_request, body, done) =>
      done(null, body),
    );
    registerDocumentedRoutes(scope, endpointRoutes, "app-services", (route) => ({ auth: route.auth }));
  });
}
