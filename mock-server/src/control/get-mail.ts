import { controlErrors } from "../errors/catalogue.ts";
import { defineControlRoute } from "./route.ts";

export default defineControlRoute("getMail", async (request) => {
  const message = await request.server.emulator.store.mail.get(request.params.messageId);
  if (!message) throw controlErrors.notFound(`no captured message with id '${request.params.messageId}'`);
  return message;
});
