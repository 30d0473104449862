/** The providers' form post back after a sign-in (Sign in with Apple): see finish-oauth.ts. */
import { defineRoute } from "../route.ts";
import { type CallbackParams, finishOAuth } from "./finish-oauth.ts";

export default defineRoute("finishOAuthLoginForm", "none", (request, reply) => {
  // (A body that is not a form, or none, has no state: the callback answers that.)
  const body = request.body as unknown;
  const form = body !== null && typeof body === "object" ? (body as Record<string, unknown>) : {};
  const field = (name: string) => (typeof form[name] === "string" ? (form[name] as string) : undefined);
  const params: CallbackParams = {
    state: field("state"),
    code: field("code"),
    error: field("error"),
    user: field("user"),
  };
  return finishOAuth(request, reply, params);
});
