import { controlErrors } from "../errors/catalogue.ts";
import { defineControlRoute } from "./route.ts";

/** Deletes one captured message (a queued SMTP delivery of it is dropped too). */
export default defineControlRoute("deleteMail", async (request, reply) => {
  const { emulator } = request.server;
  const { messageId } = request.params;
  const message = await emulator.store.mail.get(messageId);
  if (!message || !(await emulator.store.mail.remove(messageId))) {
    throw controlErrors.notFound(`no captured message with id '${messageId}'`);
  }
  emulator.events.emit({
    type: "mail",
    action: "deleted",
    id: messageId,
    ...(message.appId !== undefined ? { appId: message.appId } : {}),
    ...(message.account !== undefined ? { account: message.account } : {}),
  });
  return reply.code(204).send();
});
