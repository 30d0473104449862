import type { AppServicesClient, AppServicesComponents } from "@harness/openapi/app-services";
import { expectOk } from "../errors/service-errors.ts";

export type Location = AppServicesComponents["schemas"]["Location"];

export const locationPath = "/api/client/v2.0/app/{appId}/location";

/** getLocation: where the app is deployed; its `hostname` is the base URL of every other call. */
export function getLocation(client: AppServicesClient, appId: string): Promise<Location> {
  return expectOk(client.GET(locationPath, { params: { path: { appId } } }));
}
