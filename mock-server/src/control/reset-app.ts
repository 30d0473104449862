import { countersOf } from "../state/rate-counters.ts";
import { appOf, defineControlRoute, noSuchApp } from "./route.ts";

export default defineControlRoute("resetApp", async (request, reply) => {
  const { emulator } = request.server;
  const { appId } = await appOf(request);
  if (!(await emulator.apps.reset(appId))) throw noSuchApp(appId);
  // Its rate limits' windows too (the app's clock, which they go by, is put back with it).
  await countersOf(emulator.store).forgetScope(appId);
  return reply.code(204).send();
});
