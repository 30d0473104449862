/**
 * The end of a browser sign-in (the providers' callback, by query or form post): opens the flow
 * from its state, has the provider's code checked, logs the user in (or links the identity) and
 * sends the browser to the flow's redirect with the result in the fragment, where realm-web's
 * `handleAuthRedirect` reads it. A state that cannot be opened has no redirect to go to: it is
 * answered here (400).
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { AppServicesError, appServicesErrors as errors } from "../../errors/catalogue.ts";
import { authenticateCode } from "../../oauth2/authenticate.ts";
import { type FlowState, openFlow } from "../../oauth2/flow-state.ts";
import { type FlowResult, resultUrl } from "../../oauth2/redirect-urls.ts";
import { oauth2Settings } from "../../oauth2/settings.ts";
import type { AppRuntime } from "../../runtime/app-runtime.ts";
import { QuotaExceededError, userActive } from "../../store/store.ts";
import type { Caller } from "../auth-context.ts";
import { linkIdentity, providerIdentity, signInAs } from "./sign-in.ts";

export interface CallbackParams {
  state?: string | undefined;
  code?: string | undefined;
  error?: string | undefined;
  /** Sign in with Apple's first-time name and e-mail (form post only). */
  user?: string | undefined;
}

/** The user (and session) a link started with, as they are now. */
async function linkingCaller(app: AppRuntime, flow: FlowState): Promise<Caller> {
  const { userId, sessionId } = flow.link!;
  const { user, session } = await app.store.userSession(userId, sessionId);
  const now = app.clock.now();
  if (!userActive(user, now) || !session || now >= session.expiresAt) throw errors.oauth2LinkSessionGone();
  return { app, user, sessionId, session, claims: { baas_device_id: session.deviceId } };
}

async function complete(
  request: FastifyRequest,
  app: AppRuntime,
  flow: FlowState,
  params: CallbackParams,
): Promise<Omit<FlowResult, "appId" | "state">> {
  const { emulator } = request.server;
  if (params.error) throw errors.oauth2ProviderError(params.error);
  if (!params.code) throw errors.oauth2ProviderError("no code");
  const settings = oauth2Settings(app.config, flow.provider);
  if (!settings?.enabled) throw errors.providerNotEnabled(flow.provider);
  const context = { app, origin: flow.origin, source: emulator.oauth2, log: request.log };
  const account = await authenticateCode(context, settings, flow, params.code, params.user);
  const auth = await providerIdentity(app, settings, account);
  if (flow.link) {
    const linked = await linkIdentity(emulator, await linkingCaller(app, flow), auth, flow.deviceId);
    // realm-web's link reads the access token only, but wants all four parts.
    return { userAuth: `${linked.access_token}$$${linked.user_id}$${linked.device_id}`, link: true };
  }
  const session = await signInAs(emulator, app, auth, flow.deviceId, request.log);
  return { userAuth: `${session.access_token}$${session.refresh_token}$${session.user_id}$${session.device_id}` };
}

export async function finishOAuth(request: FastifyRequest, reply: FastifyReply, params: CallbackParams) {
  const { emulator } = request.server;
  const flow = await openFlow(emulator.acceptedSecrets, params.state);
  const app = await emulator.apps.get(flow.appId);
  if (!app) throw errors.oauth2StateInvalid("its app no longer exists");
  // Journalled, limited and faulted as the app's request from here on.
  request.appRuntime = app;
  if (app.clock.now() >= flow.expiresAt)
    throw errors.oauth2StateInvalid("the sign-in took longer than 10 minutes; start again");
  const head = { appId: app.appId, state: flow.state };
  let result: Omit<FlowResult, "appId" | "state">;
  try {
    result = await complete(request, app, flow, params);
  } catch (error) {
    // The service's refusals go back to the app; an outage or a bug is answered here (503, 500).
    if (error instanceof QuotaExceededError)
      result = { error: errors.quotaExceeded(error.quota, error.limit, error.held).message };
    else if (error instanceof AppServicesError) result = { error: error.message };
    else throw error;
  }
  return reply.redirect(resultUrl(flow.redirect, { ...head, ...result }), 302);
}
