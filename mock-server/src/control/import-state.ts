import { controlErrors } from "../errors/catalogue.ts";
import { importState, StateImportError } from "../runtime/persistence.ts";
import { checkFunctionSource } from "./function-source.ts";
import { defineControlRoute } from "./route.ts";

/** Replaces everything with an export. The import checks it all before swapping, so a bad one changes nothing. */
export default defineControlRoute("importState", async (request, reply) => {
  await checkFunctionSource(request.server.emulator, { apps: request.body.apps });
  try {
    await importState(request.server.emulator, request.body);
  } catch (error) {
    if (error instanceof StateImportError) throw controlErrors.validation(`cannot import this state: ${error.message}`);
    throw error;
  }
  return reply.code(204).send();
});
