/**
 * What a server answers between listening and serving, while it opens its store (a database's
 * migrations may wait for another instance's): it is alive (the health check answers 200), not
 * ready (the readiness check answers 503 `starting`), and every other request waits for it to serve
 * — a few seconds at most (`holdMs`), then it gets the area's 503 with `Retry-After`, and so does a
 * request past `maxHeld` waiting ones. A proxy that sends requests to an instance restarting in a
 * rolling restart (nginx without health checks) so gets answers instead of errors: a start takes
 * a second or two. A 503 closes its connection, so the client comes back to a server that serves.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { appServicesErrors, controlErrors, emailJsErrors } from "../errors/catalogue.ts";
import { areaOfUrl } from "./areas.ts";

export const startingReason = "opening the database and bringing its schema up to date";

/** How long a request waits for a starting server, and how many wait at most. */
export const startingHold = { holdMs: 3_000, maxHeld: 1_000 };

function reply(res: ServerResponse, status: number, type: string, body: string) {
  res.writeHead(status, {
    "content-type": type,
    connection: "close",
    ...(status === 503 ? { "retry-after": "1" } : {}),
  });
  res.end(body);
}

/** The area's 503 of a starting server (its body read and dropped). */
function unavailable(request: IncomingMessage, res: ServerResponse): void {
  request.resume();
  const area = areaOfUrl(request.url ?? "/");
  if (area === "emailjs") reply(res, 503, "text/plain; charset=utf-8", emailJsErrors.unavailable().message);
  else if (area === "control") {
    const error = controlErrors.starting();
    reply(res, 503, "application/json", JSON.stringify({ error: error.message, code: error.code }));
  } else {
    const error = appServicesErrors.starting();
    reply(res, 503, "application/json", JSON.stringify({ error: error.message, error_code: error.errorCode }));
  }
}

export interface StartingPhase {
  /** The request listener of the starting phase. */
  listener: RequestListener;
  /** The server serves: the requests waiting go to `handler`, in the order they came. */
  serve(handler: RequestListener): void;
  /** The start failed: the requests waiting get their 503. */
  fail(): void;
  /** How many requests wait. */
  readonly held: number;
}

/** The starting phase; `health` is the health check's body. */
export function whileStarting(health: () => unknown, hold = startingHold): StartingPhase {
  const held = new Map<ServerResponse, { request: IncomingMessage; timer: NodeJS.Timeout }>();
  const release = (res: ServerResponse) => {
    const waiting = held.get(res);
    if (!waiting) return undefined;
    clearTimeout(waiting.timer);
    held.delete(res);
    return waiting.request;
  };
  return {
    listener(request, res) {
      const path = (request.url ?? "/").split("?")[0];
      if (request.method === "GET" && path === "/_mock/v1/health") {
        request.resume();
        return reply(res, 200, "application/json", JSON.stringify(health()));
      }
      if (request.method === "GET" && path === "/_mock/v1/ready") {
        request.resume();
        return reply(res, 503, "application/json", JSON.stringify({ status: "starting", reason: startingReason }));
      }
      if (held.size >= hold.maxHeld) return unavailable(request, res);
      // (Its body stays unread until the server that serves reads it.)
      const timer = setTimeout(() => {
        if (release(res)) unavailable(request, res);
      }, hold.holdMs);
      timer.unref();
      held.set(res, { request, timer });
      res.once("close", () => release(res));
    },
    serve(handler) {
      for (const res of [...held.keys()]) {
        const request = release(res);
        if (request) handler(request, res);
      }
    },
    fail() {
      for (const res of [...held.keys()]) {
        const request = release(res);
        if (request) unavailable(request, res);
      }
    },
    get held() {
      return held.size;
    },
  };
}
