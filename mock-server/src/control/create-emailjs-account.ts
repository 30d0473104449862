import { controlErrors } from "../errors/catalogue.ts";
import { EmailJsAccountExistsError } from "../runtime/emailjs-accounts.ts";
import { defineControlRoute } from "./route.ts";

/** A fresh account (own outbox, rate limit, clock, faults, journal); a generated private key is shown only here. */
export default defineControlRoute("createEmailJsAccount", async (request, reply) => {
  const { emailjs } = request.server.emulator;
  const body = request.body ?? {};
  try {
    const { account, privateKey } = await emailjs.create(body);
    return reply.code(201).send(account.view(privateKey));
  } catch (error) {
    if (error instanceof EmailJsAccountExistsError) throw controlErrors.conflict(error.message);
    throw error;
  }
});
