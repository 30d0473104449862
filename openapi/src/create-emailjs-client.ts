/**
 * Typed client of the EmailJS REST API. Replies are plain text, so responses are parsed as text.
 * (The web app sends mail with the official @emailjs/browser SDK; this client serves tests and tools.)
 */
import createClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { components, operations, paths } from "./generated/emailjs.ts";

export type EmailJsClient = Client<paths>;
export type { components as EmailJsComponents, operations as EmailJsOperations, paths as EmailJsPaths };

export function createEmailJsClient(options: ClientOptions): EmailJsClient {
  return createClient<paths>(options);
}
