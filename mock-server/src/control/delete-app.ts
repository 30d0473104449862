import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("deleteApp", async (request, reply) => {
  request.server.emulator.apps.delete(appOf(request).appId);
  return reply.code(204).send();
});
