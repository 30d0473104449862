/**
 * Typed client of the emulator's control API, with the optional control token as a bearer.
 */
import createClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { components, operations, paths } from "./generated/mock-control.ts";

export type MockControlClient = Client<paths>;
export type { components as MockControlComponents, operations as MockControlOperations, paths as MockControlPaths };

export interface MockControlClientOptions extends ClientOptions {
  /** Needed only when the emulator listens on a non-loopback address. */
  controlToken?: string;
}

export function createMockControlClient({ controlToken, ...options }: MockControlClientOptions): MockControlClient {
  const client = createClient<paths>(options);
  if (controlToken) {
    client.use({
      onRequest({ request }) {
        request.headers.set("Authorization", `Bearer ${controlToken}`);
        return request;
      },
    });
  }
  return client;
}
