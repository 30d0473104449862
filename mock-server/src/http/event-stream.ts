/**
 * Server-sent event streams that reach the client through the proxies and load balancers people
 * put in front of servers, as they are written:
 * - `X-Accel-Buffering: no` turns nginx's response buffering off for the stream (a plain
 *   `proxy_pass` buffers, and its `postpone_output` holds even the headers back);
 * - `Cache-Control: no-cache, no-transform`: nothing caches it, and compressing or otherwise
 *   rewriting proxies leave it alone (Caddy and most others pass `text/event-stream` on at once);
 * - a first comment right away, so the headers go out through proxies that wait for body bytes and
 *   the client knows the stream is open before any event;
 * - a heartbeat comment while nothing happens, more often than the shortest idle timeout of the
 *   usual proxies (nginx `proxy_read_timeout` 60 s, AWS ALB 60 s, Heroku 55 s, Azure 30 s);
 * - no connection-specific header (`Connection`), which HTTP/2 forbids: Node sets what HTTP/1.1
 *   needs by itself.
 * The reply's own headers (CORS) are kept, and the request's id is added (http/request-id.ts).
 */
import type { ServerResponse } from "node:http";
import type { FastifyReply } from "fastify";

/** How often an idle stream gets a comment: under every common proxy's idle timeout. */
export const defaultHeartbeatMs = 15_000;

export const eventStreamHeaders = {
  "cache-control": "no-cache, no-transform",
  "x-accel-buffering": "no",
} as const;

/**
 * Takes the reply over and opens the stream (status 200, its headers, the first comment). Any body
 * a client sent with its GET is read and dropped: while it sits unread the socket is not read
 * either, so a client's disconnect would never be seen and the stream would stay open for good.
 */
export function openEventStream(reply: FastifyReply, contentType: string): ServerResponse {
  reply.hijack();
  reply.request.raw.resume();
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value : String(value);
  }
  const res = reply.raw;
  res.writeHead(200, {
    ...headers,
    "content-type": contentType,
    ...eventStreamHeaders,
    "x-request-id": reply.request.id,
  });
  res.write(": connected\n\n");
  return res;
}

/** Calls `beat` (which writes a comment) every `everyMs` until the returned function is called. */
export function startHeartbeat(everyMs: number, beat: () => void): () => void {
  const timer = setInterval(beat, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** The SSE comment a heartbeat writes. */
export const heartbeatComment = ":\n\n";
