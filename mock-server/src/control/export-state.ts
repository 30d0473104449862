import { Readable } from "node:stream";
import { StateText } from "../runtime/persistence.ts";
import { defineControlRoute } from "./route.ts";

/**
 * Everything, as the state file holds it: its text made a slice at a time and sent in pieces, so
 * that no request waits behind a large export and a state past the longest string V8 makes
 * (~512 MB) is answered too.
 */
export default defineControlRoute("exportState", async (request, reply) => {
  const { pieces } = await new StateText(request.server.emulator).render();
  return reply.type("application/json").send(Readable.from(pieces));
});
