import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("resetApp", async (request, reply) => {
  request.server.emulator.apps.reset(appOf(request).appId);
  return reply.code(204).send();
});
