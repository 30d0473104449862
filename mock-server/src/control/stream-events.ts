import type { ControlEvent } from "../state/events.ts";
import { defineControlRoute } from "./route.ts";

/** How often an idle stream gets an SSE comment, so proxies and clients keep it open. */
export const keepAliveMs = 15_000;

/**
 * Live events as server-sent events (`data: <ControlEvent JSON>`), all of them or one app's or one
 * EmailJS account's. The stream stays open until the client goes away or the emulator stops; then
 * its subscription and timer are released.
 */
export default defineControlRoute("streamEvents", async (request, reply) => {
  const { events } = request.server.emulator;
  const { appId, account } = request.query;
  const wanted = (event: ControlEvent) =>
    (appId === undefined || event.appId === appId) && (account === undefined || event.account === account);

  reply.hijack();
  // Read (and drop) any body a client sent with its GET: while it sits unread the socket is not
  // read either, so a client's disconnect is never seen and the stream would stay open for good.
  request.raw.resume();
  const res = reply.raw;
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  // A first comment flushes the headers, so the client knows the stream is open before any event.
  res.write(": connected\n\n");

  const unsubscribe = events.subscribe((event) => {
    if (wanted(event)) res.write(`data: ${JSON.stringify(event)}\n\n`);
  });
  const keepAlive = setInterval(() => res.write(":\n\n"), keepAliveMs);
  keepAlive.unref();
  const offShutdown = events.onShutdown(() => res.end());
  res.once("close", () => {
    unsubscribe();
    offShutdown();
    clearInterval(keepAlive);
  });
  return reply;
});
