import { exportState } from "../runtime/persistence.ts";
import { defineControlRoute } from "./route.ts";

/** Everything, as the State document. Written with JSON.stringify (not the schema serializer) so nothing is dropped. */
export default defineControlRoute("exportState", async (request, reply) =>
  reply.type("application/json").send(JSON.stringify(await exportState(request.server.emulator))),
);
