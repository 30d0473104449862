import type { FastifyRequest } from "fastify";
import type { Area } from "../errors/catalogue.ts";

export const appServicesPrefix = "/api/client/v2.0";
export const emailJsPrefix = "/api/v1.0/email";
export const controlPrefix = "/_mock";

/**
 * The URL with one leading slash. The SDKs join a base URL and a path: a base URL configured with
 * a trailing "/" asks for "//api/…", which no route matches; its 404 belongs to the service the
 * path names, with that service's CORS headers, so that a browser shows the 404, not a CORS error.
 */
export function withOneLeadingSlash(url: string): string {
  return url.charCodeAt(1) === 47 /* "/" */ ? url.replace(/^\/+/, "/") : url;
}

/** Which emulated service a URL belongs to (for errors, CORS and 404s on unmatched routes). */
export function areaOfUrl(given: string): Area | "other" {
  const url = withOneLeadingSlash(given);
  if (url.startsWith(appServicesPrefix)) return "app-services";
  if (url.startsWith(emailJsPrefix)) return "emailjs";
  if (url.startsWith(controlPrefix)) return "control";
  return "other";
}

/** The origin clients reach the emulator at: `--public-url`, else the request's own Host. */
export function publicOrigin(request: FastifyRequest): string {
  const configured = request.server.emulator.options.publicUrl;
  if (configured) return configured.replace(/\/+$/, "");
  const host =
    request.headers.host ?? `${request.server.emulator.options.host}:${request.server.emulator.options.port}`;
  return `${request.protocol}://${host}`;
}
