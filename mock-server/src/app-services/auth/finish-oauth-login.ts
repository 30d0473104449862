/** The providers' redirect back after a sign-in (query parameters): see finish-oauth.ts. */
import { defineRoute } from "../route.ts";
import { finishOAuth } from "./finish-oauth.ts";

export default defineRoute("finishOAuthLogin", "none", (request, reply) => finishOAuth(request, reply, request.query));
