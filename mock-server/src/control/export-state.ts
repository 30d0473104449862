import { Readable } from "node:stream";
import { StateText } from "../runtime/persistence.ts";
import { defineControlRoute } from "./route.ts";

/**
 * Everything, as the state file holds it: its text made a slice at a time and sent in pieces, so
 * that no request waits behind a large export and a state past the longest string V8 makes
 * (~512 MB) is answered too; a database's state is read as it is sent (a batch of it in memory at
 * a time). A client that stops reading loses its connection after the unsent-reply idle time
 * (http/unsent-replies.ts), and the reading ends with it.
 */
export default defineControlRoute("exportState", async (request, reply) => {
  const { emulator } = request.server;
  const pieces = await new StateText(emulator).stream();
  emulator.unsentReplies.watch(reply.raw);
  return reply.type("application/json").send(Readable.from(pieces));
});
