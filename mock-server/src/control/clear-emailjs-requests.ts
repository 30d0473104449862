import { accountOf } from "./emailjs-account.ts";
import { defineControlRoute } from "./route.ts";

export default defineControlRoute("clearEmailJsRequests", async (request, reply) => {
  const account = await accountOf(request);
  account.journal.clear();
  request.server.emulator.events.emit({ type: "request", account: account.publicKey, action: "cleared" });
  return reply.code(204).send();
});
