import { defineControlRoute } from "./route.ts";

/** Deletes all captured mail, or one app's or one EmailJS account's. */
export default defineControlRoute("clearMail", async (request, reply) => {
  const { appId, account } = request.query;
  await request.server.emulator.store.mail.clear({ appId, account });
  request.server.emulator.events.emit({
    type: "mail",
    action: "cleared",
    ...(appId !== undefined ? { appId } : {}),
    ...(account !== undefined ? { account } : {}),
  });
  return reply.code(204).send();
});
