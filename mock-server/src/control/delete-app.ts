import { countersOf } from "../state/rate-counters.ts";
import { appOf, defineControlRoute, noSuchApp } from "./route.ts";

export default defineControlRoute("deleteApp", async (request, reply) => {
  const { emulator } = request.server;
  const { appId } = await appOf(request);
  // Deleted meanwhile by another request (here or on another instance): as a moment later.
  if (!(await emulator.apps.delete(appId))) throw noSuchApp(appId);
  await countersOf(emulator.store).forgetScope(appId);
  return reply.code(204).send();
});
