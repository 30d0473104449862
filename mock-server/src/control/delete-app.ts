import { countersOf } from "../app-services/counted-limits.ts";
import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("deleteApp", async (request, reply) => {
  const { emulator } = request.server;
  const { appId } = await appOf(request);
  await emulator.apps.delete(appId);
  await countersOf(emulator.store).forgetApp(appId);
  return reply.code(204).send();
});
