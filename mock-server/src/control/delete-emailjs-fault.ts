import { controlErrors } from "../errors/catalogue.ts";
import { accountOf } from "./emailjs-account.ts";
import { defineControlRoute } from "./route.ts";

/** Removes one override; the others keep their order and counts. */
export default defineControlRoute("deleteEmailJsFault", async (request, reply) => {
  const account = await accountOf(request);
  const { faultId } = request.params;
  if (!account.faults.remove(faultId)) {
    throw controlErrors.notFound(`no fault with id '${faultId}' in EmailJS account '${account.publicKey}'`);
  }
  request.server.emulator.events.emit({ type: "fault", account: account.publicKey, action: "deleted", id: faultId });
  return reply.code(204).send();
});
