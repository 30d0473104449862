import type { FastifyRequest } from "fastify";
import type { Area } from "../errors/catalogue.ts";

export const appServicesPrefix = "/api/client/v2.0";
export const emailJsPrefix = "/api/v1.0/email";
export const controlPrefix = "/_mock";

/** Which emulated service a URL belongs to (for errors, CORS and 404s on unmatched routes). */
export function areaOfUrl(url: string): Area | "other" {
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
