import { accountOf } from "./emailjs-account.ts";
import { defineControlRoute } from "./route.ts";

/** Deletes the account and the mail it captured. */
export default defineControlRoute("deleteEmailJsAccount", async (request, reply) => {
  const { emailjs, mail } = request.server.emulator;
  const account = accountOf(request);
  emailjs.delete(account.publicKey);
  mail.clear({ account: account.publicKey });
  return reply.code(204).send();
});
