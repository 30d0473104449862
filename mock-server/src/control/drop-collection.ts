import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("dropCollection", async (request, reply) => {
  const app = await appOf(request);
  await app.data.drop(request.params.database, request.params.collection);
  request.server.emulator.events.emit({
    type: "data",
    appId: app.appId,
    action: "drop",
    detail: { ...request.params },
  });
  return reply.code(204).send();
});
