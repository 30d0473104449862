import { controlErrors } from "../errors/catalogue.ts";
import { appOf, defineControlRoute } from "./route.ts";

/**
 * Resumes a database trigger suspended because its collection was dropped or renamed over
 * (decision 0057): it runs again from the next change, on every instance. One not suspended is
 * left as it is.
 */
export default defineControlRoute("resumeTrigger", async (request, reply) => {
  const app = await appOf(request);
  const { triggerName } = request.params;
  const trigger = (app.config.triggers ?? []).find((t) => t.type === "DATABASE" && t.name === triggerName);
  if (!trigger) throw controlErrors.notFound(`no database trigger named '${triggerName}' in app '${app.appId}'`);
  await request.server.emulator.apps.resumeTrigger(app, triggerName);
  return reply.code(204).send();
});
