import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("clearFaults", async (request, reply) => {
  const app = await appOf(request);
  app.faults.clear();
  request.server.emulator.events.emit({ type: "fault", appId: app.appId, action: "cleared" });
  return reply.code(204).send();
});
