import { defineRoute, sendJson } from "../route.ts";
import { accessTokenFor } from "../session-tokens.ts";

/** A new access token for the refresh token's session (custom user data is read again, with the session). */
export default defineRoute("refreshAccessToken", "refresh-with-data", async (request, reply) => {
  const { app, user, session, customData } = request.caller!;
  return sendJson(reply, 201, {
    access_token: await accessTokenFor(request.server.emulator, app, user, session, customData),
  });
});
