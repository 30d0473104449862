import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("resetApp", async (request, reply) => {
  await request.server.emulator.apps.reset((await appOf(request)).appId);
  return reply.code(204).send();
});
