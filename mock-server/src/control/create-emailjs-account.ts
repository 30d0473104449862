import { controlErrors } from "../errors/catalogue.ts";
import { defineControlRoute } from "./route.ts";

/** A fresh account (own outbox, rate limit, clock, faults, journal); a generated private key is shown only here. */
export default defineControlRoute("createEmailJsAccount", async (request, reply) => {
  const { emailjs } = request.server.emulator;
  const body = request.body ?? {};
  if (body.publicKey !== undefined && emailjs.has(body.publicKey)) {
    throw controlErrors.conflict(`an EmailJS account with public key '${body.publicKey}' exists`);
  }
  const { account, privateKey } = emailjs.create(body);
  return reply.code(201).send(account.view(privateKey));
});
