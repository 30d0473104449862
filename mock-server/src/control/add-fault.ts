import { checkFaultOperation } from "./emailjs-account.ts";
import { appOf, defineControlRoute } from "./route.ts";

/** Prepends an override of an App Services operation; it fires `times` times, then expires. */
export default defineControlRoute("addFault", async (request, reply) => {
  const app = await appOf(request);
  checkFaultOperation(request.body, "app-services");
  const fault = app.faults.add(request.body, app.clock.now());
  request.server.emulator.events.emit({ type: "fault", appId: app.appId, action: "added", id: fault.id });
  return reply.code(201).send(fault);
});
