import { controlErrors } from "../errors/catalogue.ts";
import { accountOf, checkFaultOperation } from "./emailjs-account.ts";
import { defineControlRoute } from "./route.ts";

/** Prepends an override of `sendEmail` or `sendForm` for this account; EmailJS replies are text, so is `body`. */
export default defineControlRoute("addEmailJsFault", async (request, reply) => {
  const account = await accountOf(request);
  checkFaultOperation(request.body, "emailjs");
  if (request.body.body !== undefined && typeof request.body.body !== "string") {
    throw controlErrors.validation("an EmailJS fault's body is the reply text: give a string");
  }
  const fault = account.faults.add(request.body, account.clock.now());
  request.server.emulator.events.emit({ type: "fault", account: account.publicKey, action: "added", id: fault.id });
  return reply.code(201).send(fault);
});
