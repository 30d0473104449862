import type { AppServicesComponents } from "@harness/openapi/app-services";
import { appServices } from "../api-clients.ts";
import { expectOk } from "../errors/service-errors.ts";

export type Profile = AppServicesComponents["schemas"]["Profile"];
export type Identity = AppServicesComponents["schemas"]["Identity"];

/** getProfile: the signed-in user's identities and profile data (access token). */
export function getProfile(signal?: AbortSignal): Promise<Profile> {
  return expectOk(appServices.GET("/api/client/v2.0/auth/profile", signal ? { signal } : {}));
}

/** A user is anonymous while every identity is anonymous. */
export function isAnonymousProfile(profile: Profile): boolean {
  return profile.identities.every((identity) => identity.provider_type === "anon-user");
}

export function profileEmail(profile: Profile): string | null {
  const email = profile.data.email;
  return typeof email === "string" ? email : null;
}
