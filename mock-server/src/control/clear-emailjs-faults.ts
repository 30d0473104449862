import { accountOf } from "./emailjs-account.ts";
import { defineControlRoute } from "./route.ts";

export default defineControlRoute("clearEmailJsFaults", async (request, reply) => {
  const account = await accountOf(request);
  account.faults.clear();
  request.server.emulator.events.emit({ type: "fault", account: account.publicKey, action: "cleared" });
  return reply.code(204).send();
});
