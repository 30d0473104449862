import { controlErrors } from "../errors/catalogue.ts";
import { appOf, defineControlRoute } from "./route.ts";

/** Removes one override; the others keep their order and counts. */
export default defineControlRoute("deleteFault", async (request, reply) => {
  const app = await appOf(request);
  const { faultId } = request.params;
  if (!app.faults.remove(faultId)) throw controlErrors.notFound(`no fault with id '${faultId}' in app '${app.appId}'`);
  request.server.emulator.events.emit({ type: "fault", appId: app.appId, action: "deleted", id: faultId });
  return reply.code(204).send();
});
