import { countersOf } from "../state/rate-counters.ts";
import { accountOf, noSuchAccount } from "./emailjs-account.ts";
import { defineControlRoute } from "./route.ts";

/** Deletes the account and the mail it captured. */
export default defineControlRoute("deleteEmailJsAccount", async (request, reply) => {
  const { emailjs, store } = request.server.emulator;
  const account = await accountOf(request);
  // Deleted meanwhile by another request (here or on another instance): as a moment later.
  if (!(await emailjs.delete(account.publicKey))) throw noSuchAccount(account.publicKey);
  await store.mail.clear({ account: account.publicKey });
  request.server.emulator.events.emit({ type: "mail", action: "cleared", account: account.publicKey });
  // Its rate limit's window too (an account made again with its key starts afresh).
  await countersOf(store).forgetScope(account.publicKey);
  return reply.code(204).send();
});
