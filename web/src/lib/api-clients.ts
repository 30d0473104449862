/**
 * The single App Services client of the app, with the location lookup and the session
 * middleware, and the session store it serves. Every App Services call goes through `appServices`.
 */
import { createAppServicesClient } from "@harness/openapi/app-services";
import { config } from "../config/env.ts";
import { getLocation, locationPath } from "./api/get-location.ts";
import { refreshAccessToken } from "./api/refresh-access-token.ts";
import { createLocationMiddleware } from "./location/location-middleware.ts";
import { createSessionMiddleware } from "./session/session-middleware.ts";
import { createSessionStore } from "./session/session-store.ts";
import { tokenKindOf } from "./session/token-kinds.ts";

export const appId = config.appServicesAppId;

function browserStorage(): Storage | null {
  try {
    return typeof localStorage === "undefined" ? null : localStorage;
  } catch {
    return null; // storage disabled: sessions last as long as the tab
  }
}

export const sessionStore = createSessionStore({
  storage: browserStorage(),
  key: `notes:app(${appId}):session`,
  ...(typeof window === "undefined" ? {} : { events: window }),
});

export const appServices = createAppServicesClient({
  baseUrl: config.appServicesBaseUrl,
  headers: { Accept: "application/json" },
});

const location = createLocationMiddleware({
  configuredBaseUrl: config.appServicesBaseUrl,
  locationPath,
  lookup: async () => (await getLocation(appServices, appId)).hostname,
});

/**
 * The base URL every App Services call goes to (the location lookup's `hostname`): a browser
 * sign-in opens a window there, outside the client.
 */
export const appServicesBaseUrl = (): Promise<string> => location.baseUrl();

export const sessionMiddleware = createSessionMiddleware({
  store: sessionStore,
  tokenKindOf,
  refreshAccessToken: () => refreshAccessToken(appServices),
});

// Order matters: the request is rebased on the looked-up host before the session middleware
// copies it for its one retry.
appServices.use(location, sessionMiddleware);
