import { controlErrors } from "../errors/catalogue.ts";
import { importState } from "../state/persistence.ts";
import { defineControlRoute } from "./route.ts";

/** Replaces everything with an export. The import checks it all before swapping, so a bad one changes nothing. */
export default defineControlRoute("importState", async (request, reply) => {
  try {
    importState(request.server.emulator, request.body);
  } catch (error) {
    throw controlErrors.validation(`cannot import this state: ${(error as Error).message}`);
  }
  return reply.code(204).send();
});
