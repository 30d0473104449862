import type { AppServicesClient } from "@harness/openapi/app-services";
import { expectOk } from "../errors/service-errors.ts";

/**
 * refreshAccessToken: a new access token for the session of the refresh token (the session
 * middleware puts the refresh token on this call). Also how new custom user data reaches the app.
 */
export async function refreshAccessToken(client: AppServicesClient): Promise<string> {
  const reply = await expectOk(client.POST("/api/client/v2.0/auth/session"));
  return reply.access_token;
}
