/**
 * What a server answers between listening and serving, while it opens its store (a database's
 * migrations may wait for another instance's): it is alive (the health check answers 200), not
 * ready (the readiness check answers 503 `starting`), and every other request gets the area's
 * 503 with `Retry-After`. The connection closes after each reply, so clients come back to the
 * server that then serves. Nothing is read or changed.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { appServicesErrors, controlErrors, emailJsErrors } from "../errors/catalogue.ts";
import { areaOfUrl } from "./areas.ts";

export const startingReason = "opening the database and bringing its schema up to date";

function reply(res: ServerResponse, status: number, type: string, body: string) {
  res.writeHead(status, {
    "content-type": type,
    connection: "close",
    ...(status === 503 ? { "retry-after": "1" } : {}),
  });
  res.end(body);
}

/** The request listener of the starting phase; `health` is the health check's body. */
export function whileStarting(health: () => unknown): RequestListener {
  return (request: IncomingMessage, res: ServerResponse) => {
    request.resume();
    const url = request.url ?? "/";
    const path = url.split("?")[0];
    if (request.method === "GET" && path === "/_mock/v1/health")
      return reply(res, 200, "application/json", JSON.stringify(health()));
    if (request.method === "GET" && path === "/_mock/v1/ready")
      return reply(res, 503, "application/json", JSON.stringify({ status: "starting", reason: startingReason }));
    const area = areaOfUrl(url);
    if (area === "emailjs") return reply(res, 503, "text/plain; charset=utf-8", emailJsErrors.unavailable().message);
    if (area === "control") {
      const error = controlErrors.starting();
      return reply(res, 503, "application/json", JSON.stringify({ error: error.message, code: error.code }));
    }
    const error = appServicesErrors.starting();
    return reply(res, 503, "application/json", JSON.stringify({ error: error.message, error_code: error.errorCode }));
  };
}
