import type { AppServicesComponents } from "@harness/openapi/app-services";
import { appId, appServices, sessionStore } from "../../../lib/api-clients.ts";
import { expectOk } from "../../../lib/errors/service-errors.ts";

type LoginRequest = AppServicesComponents["schemas"]["LoginRequest"];
export type LoginResponse = AppServicesComponents["schemas"]["LoginResponse"];

export type Credentials =
  | { provider: "local-userpass"; username: string; password: string }
  | { provider: "api-key"; key: string }
  | { provider: "anon-user" };

/** What the app tells the service about the device; the id of an earlier login comes back as EJSON. */
function deviceOptions(): NonNullable<LoginRequest["options"]> {
  const deviceId = sessionStore.getDeviceId();
  return { device: { appId: "notes-web", platform: "web", ...(deviceId ? { deviceId: { $oid: deviceId } } : {}) } };
}

/**
 * login: logs in with a provider's credentials, or — with `link` — attaches them to the signed-in
 * user (the session middleware then sends the access token).
 */
export function login(credentials: Credentials, { link = false }: { link?: boolean } = {}): Promise<LoginResponse> {
  const { provider, ...payload } = credentials;
  return expectOk(
    appServices.POST("/api/client/v2.0/app/{appId}/auth/providers/{provider}/login", {
      params: { path: { appId, provider }, ...(link ? { query: { link: "true" } } : {}) },
      body: { ...payload, options: deviceOptions() },
    }),
  );
}
