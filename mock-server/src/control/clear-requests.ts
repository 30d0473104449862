import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("clearRequests", async (request, reply) => {
  const app = await appOf(request);
  app.journal.clear();
  request.server.emulator.events.emit({ type: "request", appId: app.appId, action: "cleared" });
  return reply.code(204).send();
});
