import { accountOf } from "./emailjs-account.ts";
import { defineControlRoute } from "./route.ts";

/** Deletes the account and the mail it captured. */
export default defineControlRoute("deleteEmailJsAccount", async (request, reply) => {
  const { emailjs, store } = request.server.emulator;
  const account = await accountOf(request);
  await emailjs.delete(account.publicKey);
  await store.mail.clear({ account: account.publicKey });
  return reply.code(204).send();
});
