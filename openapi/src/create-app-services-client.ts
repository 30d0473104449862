/**
 * Typed client of the App Services client API (openapi-fetch over the generated types).
 * Session handling (bearer tokens, refresh on 401) is added by the caller as middleware so the
 * web app and the tests can each bring their own policy.
 */
import createClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { components, operations, paths } from "./generated/app-services.ts";

export type AppServicesClient = Client<paths>;
export type { components as AppServicesComponents, operations as AppServicesOperations, paths as AppServicesPaths };
export type AppServicesError = components["schemas"]["Error"];

export function createAppServicesClient(options: ClientOptions): AppServicesClient {
  return createClient<paths>(options);
}
