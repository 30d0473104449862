import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("deleteApp", async (request, reply) => {
  await request.server.emulator.apps.delete((await appOf(request)).appId);
  return reply.code(204).send();
});
