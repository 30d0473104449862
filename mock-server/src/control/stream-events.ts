import { defaultHeartbeatMs, heartbeatComment, openEventStream, startHeartbeat } from "../http/event-stream.ts";
import { accountOf, appOf, type ControlEvent } from "../state/events.ts";
import { defineControlRoute } from "./route.ts";

/**
 * Live events as server-sent events (`data: <ControlEvent JSON>`), all of them or one app's or one
 * EmailJS account's. The stream stays open until the client goes away or the emulator stops; then
 * its subscription and timer are released.
 */
export default defineControlRoute("streamEvents", async (request, reply) => {
  const { events } = request.server.emulator;
  const { appId, account } = request.query;
  const wanted = (event: ControlEvent) =>
    (appId === undefined || appOf(event) === appId) && (account === undefined || accountOf(event) === account);

  const res = openEventStream(reply, "text/event-stream; charset=utf-8");

  const unsubscribe = events.subscribe((event) => {
    if (wanted(event)) res.write(`data: ${JSON.stringify(event)}\n\n`);
  });
  const stopHeartbeat = startHeartbeat(request.server.emulator.options.streamHeartbeatMs ?? defaultHeartbeatMs, () =>
    res.write(heartbeatComment),
  );
  const offShutdown = events.onShutdown(() => res.end());
  res.once("close", () => {
    unsubscribe();
    offShutdown();
    stopHeartbeat();
  });
  return reply;
});
